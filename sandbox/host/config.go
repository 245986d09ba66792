package host

import "github.com/dirtywork/dirtywork/sandbox"

// Config describes the lane a workspace opens on.
type Config struct {
	// Worktree is the lane's worktree, the only tree bash may change.
	Worktree string
	// CommonDir is the repository's common git dir; bash may read it.
	CommonDir string
	// AdminDir is the worktree's own git dir, <CommonDir>/worktrees/<name>,
	// which bash may write (index, HEAD, logs).
	AdminDir string
	// Branch is the lane's branch (with or without refs/heads/).
	Branch string
	// BaseCommit is what Finalize diffs against.
	BaseCommit string
	// AllowCommit lets bash add objects and move the lane's branch.
	AllowCommit bool
	// Limits are the worktree's caps (E-39).
	Limits sandbox.Limits
	// RequireLandlock refuses to open unless bash can be fully confined:
	// Landlock enforced and a private mount namespace. The CLI clears it
	// when the operator sets DIRTYWORK_ALLOW_UNCONFINED=1. Ignored outside
	// Linux, where there is no confinement to require.
	RequireLandlock bool

	// Home is the operator's home, whose contents bash may not read; empty
	// means HOME from Env, or the user's home directory.
	Home string
	// Env is the operator's environment, from which bash's is derived
	// (E-38); nil means os.Environ().
	Env []string
}

// Info is what a run records about host-mode confinement (run_start's
// sandbox field) and prints as a warning when it is partial.
type Info struct {
	Landlock LandlockStatus `json:"landlock"`
	// PrivateMounts is set when bash runs in private mount and PID
	// namespaces that hide the host's daemon sockets.
	PrivateMounts bool `json:"private_mounts"`
	// Warning says which guards are missing; "" when bash is fully
	// confined.
	Warning string `json:"warning,omitempty"`
}

// LandlockStatus reports Landlock for run_start.
type LandlockStatus struct {
	// ABI is the Landlock ABI enforced, or the kernel's when none is.
	ABI int `json:"abi"`
	// Enforced is set when every bash command runs under the ruleset.
	Enforced bool `json:"enforced"`
}
