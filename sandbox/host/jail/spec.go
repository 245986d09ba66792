package jail

import (
	"errors"
	"fmt"
)

// spec is everything the setup child needs, sent by the parent over the
// control socket with the mount descriptors the parent opened.
type spec struct {
	Path     string   `json:"path"`
	Args     []string `json:"args"`
	Env      []string `json:"env"`
	Dir      string   `json:"dir"`
	Hostname string   `json:"hostname"`
	// Entries build the root, in order.
	Entries []entry `json:"entries"`
	TmpSize int64   `json:"tmp_size"`
	// NewNet: the jail has a network namespace of its own, whose lo the
	// child brings up.
	NewNet bool `json:"new_net"`
	// Rlimits are set when no cgroup could be had.
	Rlimits *rlimits `json:"rlimits,omitempty"`
	// Nofile is RLIMIT_NOFILE, soft and hard.
	Nofile uint64 `json:"nofile"`
	// Nice is the niceness to run at (0: the parent's), where no cpu
	// controller could be had.
	Nice int `json:"nice,omitempty"`
	// LandlockABI is the Landlock ABI to enforce, 0 for none.
	LandlockABI int `json:"landlock_abi"`
	// Seccomp loads the filter.
	Seccomp bool `json:"seccomp"`
	// AllowUnconfined lets a Landlock or seccomp failure leave the layer
	// off instead of failing the setup.
	AllowUnconfined bool `json:"allow_unconfined"`
	// Probe sets everything up, reports and exits instead of executing
	// the program.
	Probe bool `json:"probe,omitempty"`
}

// Kinds of entries.
const (
	// entryBind attaches a bind of Source (or of descriptor FD) at Target.
	entryBind = "bind"
	// entrySymlink makes Target a symlink to Link on the root tmpfs.
	entrySymlink = "symlink"
	// entryMask covers Target (a secret) with /dev/null or an empty
	// read-only directory.
	entryMask = "mask"
)

// entry is one step of building the root.
type entry struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// Source is the host path the child binds itself when FD is -1.
	Source string `json:"source,omitempty"`
	// FD indexes the descriptors passed with the spec: a detached mount
	// the parent made; -1 when the child makes it from Source.
	FD        int  `json:"fd"`
	Dir       bool `json:"dir"`
	ReadOnly  bool `json:"read_only"`
	Recursive bool `json:"recursive,omitempty"`
	// IDMap: a root operator's bind is idmapped, so the operator's files
	// show as the program's own (git checks the owner of a worktree and
	// its .git). Configured mounts and read-only paths are; the system
	// directories are not.
	IDMap bool   `json:"idmap,omitempty"`
	Link  string `json:"link,omitempty"`
}

// rlimits are the fallback limits, per process.
type rlimits struct {
	Nproc int64 `json:"nproc"`
	Data  int64 `json:"data"`
}

// report is the child's message to the parent: the layers it put in
// place (sent right before it executes the program, or as a probe's
// answer), or why it failed.
type report struct {
	// Error, when set, is why the setup failed at Layer.
	Error string `json:"error,omitempty"`
	Layer string `json:"layer,omitempty"`
	// Landlock is the ABI enforced (0: none), with its scopes.
	LandlockABI    int      `json:"landlock_abi"`
	LandlockScopes []string `json:"landlock_scopes,omitempty"`
	Seccomp        bool     `json:"seccomp"`
	// Off are the layers left off, in words (AllowUnconfined).
	Off []string `json:"off,omitempty"`
	// Probe: the child set everything up and exited.
	Ready bool `json:"ready,omitempty"`
}

// ErrSetup matches every *SetupError.
var ErrSetup = errors.New("cannot set the jail up")

// SetupError is a jail that could not be built: Layer names the layer
// (LayerUserNS, LayerRoot, …) whose setup failed.
type SetupError struct {
	Layer string
	Msg   string
}

func (e *SetupError) Error() string { return fmt.Sprintf("jail setup (%s): %s", e.Layer, e.Msg) }

// Unwrap makes every SetupError match ErrSetup.
func (e *SetupError) Unwrap() error { return ErrSetup }
