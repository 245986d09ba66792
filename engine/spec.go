package engine

import (
	"time"

	"github.com/dirtywork/dirtywork/sandbox/egress"
)

// Spec is everything one run needs, as the command line (or mission
// control) gives it.
type Spec struct {
	Repo       string
	Task       string
	Model      string
	Provider   string // "openai" | "anthropic"
	BaseURL    string
	APIKey     string // never passed into a sandbox
	BranchFrom string // a ref, or "@<slug>" of another run; "" for HEAD
	Sandbox    string // "docker" | "none"

	MaxTurns    int
	Timeout     time.Duration
	Temperature *float64
	MaxTokens   int
	Stream      bool

	StallTurns    int
	StuckRepeats  int
	VerifyCommand string
	VerifyRounds  int
	VerifyTimeout int // seconds, as given (the runner clamps to 1..600)

	// ContextWindow is the --context-window value; 0 when not given.
	ContextWindow int
	// ContextWindowFromConfig marks a window set by the config file.
	ContextWindowFromConfig bool

	MaxWorktreeMB    int
	MaxWorktreeFiles int
	AllowCommit      bool
	// PidsLimit caps the processes and threads of the sandbox (both
	// modes; --pids-limit).
	PidsLimit int

	// Docker holds the docker settings; AllowNetwork, Memory, TmpSize and
	// CPUs apply to host mode too.
	Docker DockerSpec

	// AllowHosts are the operator's --allow-host rules: what the egress
	// proxy of a run with network (--allow-network, --setup) lets through
	// besides the hosts the repository's lockfiles call for.
	AllowHosts egress.Allowlist
	// NoDefaultHosts leaves the lockfiles' hosts out: AllowHosts only.
	NoDefaultHosts bool

	// Feedback and ResumedFrom are set by resume.
	Feedback    *string
	ResumedFrom *string
}

// DockerSpec holds the sandbox settings that began as docker-only ones.
// They are validated with the rest; AllowNetwork, Memory, TmpSize and CPUs
// are used by the host sandbox too.
type DockerSpec struct {
	// Host is the docker engine to use (a DOCKER_HOST value); "" is the
	// environment's. A bench spreads its cases over several.
	Host         string
	Image        string
	AllowNetwork bool
	Memory       string
	CPUs         float64
	TmpSize      string
	GitdirSize   string
	MinFreeMB    int
	KeepVolume   bool
	MaxPatchMB   int
	WithHistory  bool
	Setup        string
}
