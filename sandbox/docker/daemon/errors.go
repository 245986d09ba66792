package daemon

import (
	"errors"
	"time"
)

// The classes an Engine's errors are sorted into, for the states callers
// branch on. An error matches at most one of them (errors.Is) and keeps
// the daemon's own words.
var (
	// ErrNotFound: the object (image, container, volume) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the object is in a state that forbids the operation, or
	// its name is taken.
	ErrConflict = errors.New("conflict")
	// ErrDaemonUnreachable: no Docker daemon answers at the endpoint.
	ErrDaemonUnreachable = errors.New("docker daemon unreachable")
	// ErrTimedOut: the operation did not finish within its deadline. It is
	// distinct from a failure: the daemon may still be working on it.
	ErrTimedOut = errors.New("timed out")
)

// Deadlines of Engine calls (the contract's C-2): every call runs under
// one, so a hanging daemon cannot hang dirtywork.
const (
	// QueryTimeout bounds reads: version, inspect, list.
	QueryTimeout = 10 * time.Second
	// LifecycleTimeout bounds create, start, kill, wait and remove.
	LifecycleTimeout = 60 * time.Second
	// TransferTimeout bounds a streamed transfer: an upload, a download,
	// an image import.
	TransferTimeout = 10 * time.Minute
)
