package jail

// Info is what a jail reports about itself: every layer and its state.
// It is JSON-ready for run_start.sandbox.
type Info struct {
	// Kind is "jail".
	Kind string `json:"kind"`
	// Namespaces are the namespaces the program runs in, by their
	// /proc/<pid>/ns names: user, mnt, pid, ipc, uts, cgroup, and net
	// unless the network is the host's.
	Namespaces []string     `json:"namespaces"`
	UserNS     UserNSInfo   `json:"user_ns"`
	Root       RootInfo     `json:"root"`
	Network    NetworkInfo  `json:"network"`
	Seccomp    SeccompInfo  `json:"seccomp"`
	Landlock   LandlockInfo `json:"landlock"`
	// Capabilities is "none" when every capability set of the program is
	// empty (bounding, ambient, effective, permitted, inheritable).
	Capabilities string `json:"capabilities"`
	// NoNewPrivs is set when the program runs with no_new_privs.
	NoNewPrivs bool       `json:"no_new_privs"`
	Limits     LimitsInfo `json:"limits"`
	// Off lists, in words, every layer that is not in place (only with
	// Config.AllowUnconfined); empty when the jail is whole.
	Off []string `json:"off,omitempty"`
}

// UserNSInfo is the user namespace and its id mapping.
type UserNSInfo struct {
	Enabled bool `json:"enabled"`
	// UID and GID map the program's ids inside to the host's.
	UID IDMap `json:"uid"`
	GID IDMap `json:"gid"`
	// IDMappedMounts is set when writable mounts are idmapped (operator
	// root), so files the program creates land owned by the operator.
	IDMappedMounts bool `json:"idmapped_mounts"`
}

// IDMap is one id mapped from inside the jail to the host.
type IDMap struct {
	Inside int `json:"inside"`
	Host   int `json:"host"`
}

// RootInfo describes the constructed root.
type RootInfo struct {
	// Kind is "pivot_root:tmpfs".
	Kind string `json:"kind"`
	// ReadOnly lists the system directories and extra paths bound
	// read-only.
	ReadOnly []string `json:"read_only"`
	// Mounts are the configured mounts' targets, read-only ones suffixed
	// ":ro".
	Mounts []string `json:"mounts"`
	// TmpBytes is the size of the private /tmp.
	TmpBytes int64 `json:"tmp_bytes"`
	// Dev is "minimal" (null, zero, full, random, urandom, tty, a new
	// devpts with ptmx, shm), Proc "fresh", Sys "absent".
	Dev  string `json:"dev"`
	Proc string `json:"proc"`
	Sys  string `json:"sys"`
}

// NetworkInfo is the jail's network.
type NetworkInfo struct {
	// Mode is "none" (a namespace of its own with only lo) or "host".
	Mode string `json:"mode"`
}

// SeccompInfo is the seccomp layer.
type SeccompInfo struct {
	Enabled bool `json:"enabled"`
	// Profile names the filter (seccomp.ProfileName).
	Profile string `json:"profile,omitempty"`
}

// LandlockInfo is the Landlock layer.
type LandlockInfo struct {
	Enabled bool `json:"enabled"`
	// ABI is the ABI enforced, or the kernel's when none is.
	ABI int `json:"abi"`
	// Scopes are the IPC scopes enforced: "signal", "abstract_unix_socket".
	Scopes []string `json:"scopes,omitempty"`
}

// LimitsInfo are the jail's limits and how each is enforced.
type LimitsInfo struct {
	Pids   Limit `json:"pids"`
	Memory Limit `json:"memory"`
	// Reason says why no cgroup could be had, when the mechanism is
	// "rlimit".
	Reason string `json:"reason,omitempty"`
}

// Limit is one limit.
type Limit struct {
	// Max is the cap; 0 when there is none.
	Max int64 `json:"max"`
	// Mechanism is "cgroup-v2", "cgroup-v1", "rlimit" (per process, the
	// fallback where no cgroup can be had) or "none".
	Mechanism string `json:"mechanism"`
}
