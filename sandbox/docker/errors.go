package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// The classes every error of this package is sorted into, for the states
// callers branch on: the daemon package's (see there). An error matches at
// most one of them (errors.Is) and still wraps the SDK's own error, so its
// text is kept.
var (
	ErrNotFound          = daemon.ErrNotFound
	ErrConflict          = daemon.ErrConflict
	ErrDaemonUnreachable = daemon.ErrDaemonUnreachable
	ErrTimedOut          = daemon.ErrTimedOut
)

// Deadlines of Engine API calls (the contract's C-2): every call runs under
// one, so a hanging daemon cannot hang dirtywork. The first three are the
// daemon package's, which every daemon.Engine keeps.
const (
	// QueryTimeout bounds reads: version, inspect, list.
	QueryTimeout = daemon.QueryTimeout
	// LifecycleTimeout bounds create, start, kill, wait and remove.
	LifecycleTimeout = daemon.LifecycleTimeout
	// TransferTimeout bounds a streamed transfer such as an image import.
	TransferTimeout = daemon.TransferTimeout
	// BuildTimeout bounds an image build, package downloads included.
	BuildTimeout = 30 * time.Minute
)

// opError is a failed Engine API call: the operation (which names its
// object), the class callers branch on (nil when none applies), and the
// SDK's error.
type opError struct {
	op    string
	class error
	limit time.Duration // the deadline that expired, for ErrTimedOut
	err   error
}

func (e *opError) Error() string {
	if errors.Is(e.class, ErrTimedOut) {
		return fmt.Sprintf("%s: timed out after %s", e.op, e.limit)
	}
	return e.op + ": " + e.err.Error()
}

// Unwrap exposes both the class and the SDK's error, so errors.Is matches
// the sentinel as well as, say, context.DeadlineExceeded.
func (e *opError) Unwrap() []error {
	if e.class == nil {
		return []error{e.err}
	}
	return []error{e.class, e.err}
}

// classify wraps err from the call op that ran under callCtx, a child of
// parent with the deadline limit. It decides by type: the SDK marks a
// failed connection with its own type and daemon answers with containerd's
// errdefs classes (from the HTTP status). A deadline counts as this call's
// timeout only when parent itself was still live; a cancelled parent stays
// a plain context.Canceled, because cancelled is not failed.
func classify(parent, callCtx context.Context, op string, limit time.Duration, err error) error {
	if err == nil {
		return nil
	}
	var class error
	switch {
	case parent.Err() != nil:
		// The caller gave up; say so without blaming the daemon.
	case callCtx.Err() != nil && errors.Is(callCtx.Err(), context.DeadlineExceeded):
		class = ErrTimedOut
	case client.IsErrConnectionFailed(err):
		class = ErrDaemonUnreachable
	case cerrdefs.IsNotFound(err):
		class = ErrNotFound
	case cerrdefs.IsConflict(err):
		class = ErrConflict
	}
	return &opError{op: op, class: class, limit: limit, err: err}
}

// query is call for a read under QueryTimeout, tried once more after a
// timeout: a daemon busy with other containers (a CI machine running many
// at once) answers a read late now and then, and a read is safe to repeat.
// A daemon that hangs is still given up on within twice the deadline.
func query(ctx context.Context, op string, f func(ctx context.Context) error) error {
	return callTwice(ctx, op, QueryTimeout, f)
}

// callTwice is call, tried once more when the first try timed out.
func callTwice(ctx context.Context, op string, limit time.Duration, f func(ctx context.Context) error) error {
	err := call(ctx, op, limit, f)
	if errors.Is(err, ErrTimedOut) && ctx.Err() == nil {
		err = call(ctx, op, limit, f)
		var oe *opError
		if errors.As(err, &oe) && errors.Is(err, ErrTimedOut) {
			oe.op += " (tried twice)"
		}
	}
	return err
}

// call runs f under a deadline of limit below ctx and classifies its
// error. f must be done with the context when it returns.
func call(ctx context.Context, op string, limit time.Duration, f func(ctx context.Context) error) error {
	callCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return classify(ctx, callCtx, op, limit, f(callCtx))
}
