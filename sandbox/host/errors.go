package host

import "errors"

// Sentinel errors for the states callers branch on. The first two are
// preflight refusals: the CLI prints them and exits 2.
var (
	// ErrNoLandlock: the kernel cannot enforce Landlock, so bash cannot be
	// confined to the worktree.
	ErrNoLandlock = errors.New("the kernel does not enforce Landlock, which host mode needs to confine bash " +
		"(set DIRTYWORK_ALLOW_UNCONFINED=1 to run guarded only by the deny-list)")
	// ErrNoPrivateMounts: bash cannot get the private mount namespace that
	// hides the host's daemon sockets, such as Docker's.
	ErrNoPrivateMounts = errors.New("host mode cannot give bash a private mount namespace to hide the host's daemon sockets " +
		"(allow unprivileged user namespaces, or set DIRTYWORK_ALLOW_UNCONFINED=1 to run without it)")
	// ErrTampered: a file bash may write and dirtywork relies on was
	// changed to point elsewhere.
	ErrTampered = errors.New("the worktree's git metadata was tampered with")
	// ErrClosed: the workspace was used after Close.
	ErrClosed = errors.New("workspace is closed")
)
