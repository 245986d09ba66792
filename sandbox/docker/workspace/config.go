package workspace

import (
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/egress"
)

// Config describes the container a docker-sandbox run works in.
// The engine fills it from the run's Spec and lane.
type Config struct {
	// DockerHost is the daemon the run uses, a DOCKER_HOST value; "" is
	// the environment's. The engine connects with it; the workspace only
	// talks to what it is given.
	DockerHost string
	// Slug names everything the run creates: container dw-<slug>, volume
	// dw-<slug>-work (and dw-<slug>-tools for the tool server).
	Slug string
	// RepoRoot is the host repository (its git is read for the base
	// commit's objects and blobs, never for worker content); CommonDir is
	// its common git dir.
	RepoRoot, CommonDir string
	// Worktree is the host lane, created with --no-checkout (only its .git
	// file); the export writes the worker's tree into it.
	Worktree string
	// Branch and BaseCommit are the lane's.
	Branch, BaseCommit string
	// RunDir receives diff.patch.
	RunDir string

	Image string
	// AllowNetwork gives the worker the network through the egress proxy
	// (see egress.go).
	AllowNetwork bool
	// Allow is what the egress proxy lets through, for AllowNetwork and
	// Setup.
	Allow  egress.Allowlist
	Memory string // e.g. "4g"
	CPUs   float64
	// PidsLimit caps the container's processes and threads (--pids-limit);
	// 0 is the default, 512.
	PidsLimit  int
	TmpSize    string // e.g. "1g"
	GitdirSize string // e.g. "512m"
	MinFreeMB  int
	KeepVolume bool
	// DetachRemoval lets Close return before the daemon has removed the
	// volumes of a run whose export succeeded (a large tree takes
	// seconds): a reap marker (daemon.LabelReap) stands for them until they are
	// gone, and the next run, or `runs` reconcile, finishes the job.
	DetachRemoval bool
	MaxPatchMB    int
	WithHistory   bool
	// Setup, when set, runs in the tree with the network before the worker
	// starts (--setup).
	Setup string
	// Resume marks a resumed run: Worktree is the prior run's lane and
	// holds its work, the only copy until the export. It is never filled
	// nor cleared; the container's /work is seeded from it (seed.go),
	// the worker's index is the base tree's, and the export extracts the
	// whole tree into the lane, which the engine empties first (RE-9).
	Resume bool

	Limits sandbox.Limits
	// MeasuredSize keeps Limits a measurement (the tool server's walks
	// and the measuring sidecar) even where the kernel could hold them
	// (see package volstore); DIRTYWORK_SIZE_LIMIT=measured does it for every
	// run.
	MeasuredSize bool

	// Toolbox gives the tool server to deliver into the container, for
	// the image's architecture: preflight and Open ask it once the image
	// is inspected, and refuse with ErrNoToolbox when it has none.
	Toolbox ToolboxSource

	// OnReset is called when the sandbox is reset mid-run, with the reason
	// (the engine writes a sandbox_reset event). May be nil.
	OnReset func(reason string)
	// OnBaseline is given the seal's baseline once the tool server marked
	// it (after the checkout and the setup). May be nil.
	OnBaseline func(since time.Time)
	// OnSetup is called once the --setup command finished. May be nil.
	OnSetup func(command string, exitCode *int, output string, seconds float64)
	// Trace, when set, is told as each phase of opening, finalizing and
	// closing the sandbox ends ("docker:upload", …), for timing reports.
	Trace func(phase string)
}

// trace reports that phase ended, when the config asks for it.
func (c *Config) trace(phase string) {
	if c.Trace != nil {
		c.Trace("docker:" + phase)
	}
}
