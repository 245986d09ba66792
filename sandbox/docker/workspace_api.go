package docker

import "github.com/dirtywork/dirtywork/sandbox"

// WorkspaceConfig describes the container a docker-sandbox run works in.
// The engine fills it from the run's Spec and lane.
type WorkspaceConfig struct {
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

	Image        string
	AllowNetwork bool
	Memory       string // e.g. "4g"
	CPUs         float64
	TmpSize      string // e.g. "1g"
	GitdirSize   string // e.g. "512m"
	MinFreeMB    int
	KeepVolume   bool
	MaxPatchMB   int
	WithHistory  bool
	// Setup, when set, runs in the tree with the network before the worker
	// starts (--setup).
	Setup string

	Limits sandbox.Limits

	// ToolboxBinary is the Linux binary of dirtywork to deliver into the
	// container as its tool server (os.Executable() on Linux).
	ToolboxBinary string

	// OnReset is called when the sandbox is reset mid-run, with the reason
	// (the engine writes a sandbox_reset event). May be nil.
	OnReset func(reason string)
	// OnSetup is called once the --setup command finished. May be nil.
	OnSetup func(command string, exitCode *int, output string, seconds float64)
}
