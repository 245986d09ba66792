package host

import "errors"

// Sentinel errors for the states callers branch on.
var (
	// ErrNoJail: the run's jail cannot be set up whole on this system. It
	// is a preflight refusal (the CLI exits 2 and prints each missing
	// layer, why and the fix) unless DIRTYWORK_ALLOW_UNCONFINED=1.
	ErrNoJail = errors.New("host mode cannot confine the worker")
	// ErrClosed: the workspace was used after Close.
	ErrClosed = errors.New("workspace is closed")
)
