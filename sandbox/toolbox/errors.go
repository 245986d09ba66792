package toolbox

import (
	"errors"
	"fmt"
)

// ErrServerGone is the tool server failing as a peer: its stream ended or
// broke, a reply was malformed, oversized or for no request asked, or no
// reply came within the call's deadline. The client is unusable from then
// on; the docker workspace resets the sandbox. The error wraps the cause.
var ErrServerGone = errors.New("tool server gone")

// ErrClosed is a call on a client after Close.
var ErrClosed = errors.New("tool server client closed")

// ErrRequestTooLarge is a call whose request would pass the server's frame
// cap (about 12 MiB of text) or that names a path, pattern or glob over
// 64 KiB. Nothing was sent; the client stays usable.
var ErrRequestTooLarge = errors.New("tool server request too large")

// Sentinels for the error kinds a server replies with; a *RemoteError
// matches its kind's sentinel with errors.Is.
var (
	// ErrBadRequest is a request the server could not decode or refused.
	ErrBadRequest = errors.New("tool server refused the request")
	// ErrClosedRoot is a tree whose root the server can no longer use.
	ErrClosedRoot = errors.New("tool server's tree is closed")
	// ErrBusy is a request beyond what the server runs at once (one
	// command, a few requests).
	ErrBusy = errors.New("tool server busy")
	// ErrVersion is a server speaking another protocol version.
	ErrVersion = errors.New("tool server speaks another protocol version")
	// ErrInternal is a failure inside the server (e.g. a panic it caught).
	ErrInternal = errors.New("tool server internal error")
)

// RemoteError is an error reply: the server is alive and answered, but the
// call failed. Kind is one of the protocol's error kinds.
type RemoteError struct {
	Op      string // the request kind, e.g. "read_file"
	Kind    string
	Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: tool server: %s: %s", e.Op, e.Kind, e.Message)
}

// Unwrap returns the sentinel of the error's kind.
func (e *RemoteError) Unwrap() error { return kindSentinel(e.Kind) }

// kindSentinel maps an error kind to its sentinel; nil for a kind the
// client does not know (decoding refuses those) or "canceled".
func kindSentinel(kind string) error {
	switch kind {
	case errKindBadRequest:
		return ErrBadRequest
	case errKindClosedRoot:
		return ErrClosedRoot
	case errKindBusy:
		return ErrBusy
	case errKindVersion:
		return ErrVersion
	case errKindInternal:
		return ErrInternal
	}
	return nil
}

// gone wraps a transport failure as ErrServerGone.
func gone(format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrServerGone, fmt.Errorf(format, args...))
}
