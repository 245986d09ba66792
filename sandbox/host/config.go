package host

import (
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// Config describes the lane a workspace opens on and the jail it runs in.
type Config struct {
	// Worktree is the lane's worktree, the only tree the worker may
	// change. It holds only its .git file when the workspace opens: the
	// base tree is checked out inside the jail.
	Worktree string
	// RepoRoot is the repository's root, CommonDir its common git dir and
	// AdminDir the worktree's own git dir (<CommonDir>/worktrees/<name>).
	// None of them is ever visible to the worker; only dirtywork's own git
	// reads and writes them.
	RepoRoot, CommonDir, AdminDir string
	// Branch is the lane's branch (with or without refs/heads/).
	Branch string
	// BaseCommit is what the worker's repository starts at and what
	// Finalize diffs against.
	BaseCommit string
	// RunDir is the run's directory: the patch goes to
	// <RunDir>/diff.patch and nested repositories the worker made are
	// moved to <RunDir>/quarantine. (The worker's private repository lives
	// in a temporary directory of its own while the run lasts.)
	RunDir string
	// WithHistory gives the worker the base commit's whole history
	// instead of the base commit alone.
	WithHistory bool
	// KeepTree leaves the worktree's files as they are (a resumed run):
	// only the worker's index is made from the base, so the earlier work
	// shows as changes.
	KeepTree bool
	// AllowCommit imports the commits the worker made on its branch into
	// the repository at Finalize.
	AllowCommit bool
	// Limits are the worktree's caps (E-39).
	Limits sandbox.Limits
	// MaxPatchMB caps <RunDir>/diff.patch (0: 10 MiB).
	MaxPatchMB int
	// Network gives the jail the network through the egress proxy
	// (--allow-network): the jail keeps its own network namespace with
	// only lo, and reaches the proxy, which this process serves, through
	// a unix socket bound in and the tool server's forwarder on
	// 127.0.0.1:3128; the proxy variables point every command there.
	// Without it the jail has only a loopback of its own.
	Network bool
	// Allow is what the proxy lets through when Network is set.
	Allow egress.Allowlist
	// PidsLimit, MemoryBytes and TmpBytes are the jail's limits: most
	// processes and threads, memory, size of its private /tmp.
	PidsLimit   int
	MemoryBytes int64
	TmpBytes    int64
	// CPUs caps the jail's CPU time, in CPUs (--cpus; 0: jail.DefaultCPUs).
	CPUs float64
	// GitDirBytes caps the worker's private git dir (--gitdir-size; 0:
	// DefaultGitDirBytes), measured from the host as the tree is: it lies
	// on the host's disk, outside the tree's budget. Its entries count
	// against twice Limits.MaxEntries and a margin (room to commit the
	// whole tree).
	GitDirBytes int64
	// AllowUnconfined lets the workspace run the tool server without a
	// jail where none can be set up (DIRTYWORK_ALLOW_UNCONFINED=1); Info
	// says so. Without it Open refuses with ErrNoJail.
	AllowUnconfined bool

	// Home is the operator's home, which the jail does not show; empty
	// means HOME from Env, or the user's home directory.
	Home string
	// Env is the operator's environment, from which bash's is derived
	// (E-38); nil means os.Environ().
	Env []string
	// UserSiteCache is the file keeping python's user site across runs
	// (see PrewarmPythonUserSite); "" asks python every run.
	UserSiteCache string
	// Toolbox is the dirtywork binary to run as the tool server; "" is
	// this process's own.
	Toolbox string

	// OnJailStarted, when set, is given what the jail set up once it
	// runs (jail.Info: every layer and its state), for the run's record:
	// run_start, written before, has the probe's view.
	OnJailStarted func(info any)
	// OnBaseline, when set, is given the seal's baseline once it is
	// marked (after the checkout, before the worker's first call), for
	// the run's record: a crashed run's tree is sealed against it.
	OnBaseline func(since time.Time)
	// Trace, when set, is told when each step of the jail's start ended
	// (for DIRTYWORK_TIMINGS).
	Trace func(phase string)

	// Probe is what jail.Probe found in preflight; nil probes at Open.
	Probe *jail.Report

	// jailer starts the jail; nil is the real one (tests stand in).
	jailer jailer
}
