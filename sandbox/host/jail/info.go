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
	// read-only, the unmapped ones included.
	ReadOnly []string `json:"read_only"`
	// Mounts are the configured mounts' targets, read-only ones suffixed
	// ":ro".
	Mounts []string `json:"mounts"`
	// Hidden are the paths covered inside what is bound (Config.Hidden),
	// as the jail shows them.
	Hidden []string `json:"hidden,omitempty"`
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
	Pids   Limit    `json:"pids"`
	Memory Limit    `json:"memory"`
	CPU    CPULimit `json:"cpu"`
	// Nofile is RLIMIT_NOFILE, soft and hard, of every process (mechanism
	// "rlimit"): with the pids limit, the jail's share of the host's open
	// files table.
	Nofile Limit `json:"nofile"`
	// Ptys is the most pseudo-terminals the jail's devpts holds (mechanism
	// "devpts").
	Ptys Limit `json:"ptys"`
	// Reason says why no cgroup could be had, when the mechanism is
	// "rlimit".
	Reason string `json:"reason,omitempty"`
}

// CPULimit is the cap on the jail's CPU time.
type CPULimit struct {
	// CPUs is the cap asked for, in CPUs; 0 when none was.
	CPUs float64 `json:"cpus"`
	// QuotaMicros of CPU time in every PeriodMicros, as the cgroup holds
	// them; absent without a cgroup.
	QuotaMicros  int64 `json:"quota_us,omitempty"`
	PeriodMicros int64 `json:"period_us,omitempty"`
	// Mechanism is "cgroup-v2" (cpu.max), "cgroup-v1" (cpu.cfs_quota_us),
	// "nice" (no cpu controller could be had: the jail runs at niceness
	// Nice, which caps nothing but lets the host's other work go first) or
	// "none" (no cap was asked for).
	Mechanism string `json:"mechanism"`
	// Reason says why no cpu controller could be had, with "nice".
	Reason string `json:"reason,omitempty"`
}

// Limit is one limit.
type Limit struct {
	// Max is the cap; 0 when there is none.
	Max int64 `json:"max"`
	// Mechanism is "cgroup-v2", "cgroup-v1", "rlimit" (per process, the
	// fallback where no cgroup can be had; always for Nofile), "devpts"
	// (Ptys) or "none".
	Mechanism string `json:"mechanism"`
}
