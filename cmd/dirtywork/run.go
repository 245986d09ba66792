package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	workerimage "github.com/dirtywork/dirtywork/docker"
	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/provider/anthropic"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Built-in defaults of run flags (E-2).
const (
	defaultModel         = "qwen/qwen3-coder-next"
	defaultOpenAIBaseURL = "http://localhost:1234/v1"
	defaultAnthropicURL  = anthropic.DefaultBaseURL
)

// defaultBaseURL is the provider's base URL when none is given (E-2).
func defaultBaseURL(providerName string) string {
	if providerName == anthropic.Name {
		return defaultAnthropicURL
	}
	return defaultOpenAIBaseURL
}

// defaultImage is the locally built worker image of this version, the one
// `dirtywork image build` makes by default.
func defaultImage() string { return workerimage.DefaultImage(Version()) }

// runFlags are the raw flag values of run.
type runFlags struct {
	repo, model, branchFrom, sandbox, provider, baseURL string
	maxTurns, timeout, stallTurns, stuckRepeats         int
	temperature                                         float64
	verify                                              string
	verifyRounds, verifyTimeout, contextWindow          int
	maxWorktreeMB, maxWorktreeFiles, maxTokens          int
	allowCommit, noStream                               bool
	image, memory, tmpSize, gitdirSize, setup           string
	cpus                                                float64
	allowNetwork, keepVolume, withHistory               bool
	minFreeMB, maxPatchMB, pidsLimit                    int
	allowHosts                                          []string
	noDefaultHosts                                      bool
}

func (f *runFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.repo, "repo", "", "the git repository to work on (required)")
	fs.StringVar(&f.model, "model", defaultModel, "model id (env DIRTYWORK_MODEL)")
	fs.StringVar(&f.branchFrom, "branch-from", "", "start from this ref, or @<slug> to continue another run's work (default: the repo's HEAD)")
	fs.StringVar(&f.sandbox, "sandbox", "docker", "where the worker runs: docker or none (host, under Landlock)")
	fs.IntVar(&f.maxTurns, "max-turns", 40, "most model turns")
	fs.IntVar(&f.timeout, "timeout", 1800, "whole-run wall clock limit in seconds")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature (server default when not given)")
	fs.StringVar(&f.provider, "provider", "openai", "model server protocol: openai or anthropic")
	fs.StringVar(&f.baseURL, "base-url", "", "model server base URL (env DIRTYWORK_BASE_URL; default per provider)")
	fs.IntVar(&f.stallTurns, "stall-turns", 12, "end the run after this many turns without progress (0 disables)")
	fs.IntVar(&f.stuckRepeats, "stuck-repeats", 4, "end the run when the same failing command repeats this often (0 disables)")
	fs.StringVar(&f.verify, "verify", "", "command that must pass before the run counts as completed")
	fs.IntVar(&f.verifyRounds, "verify-rounds", 1, "retries the model gets after a failed verify")
	fs.IntVar(&f.verifyTimeout, "verify-timeout", 600, "verify command timeout in seconds (at most 600 is used)")
	fs.IntVar(&f.contextWindow, "context-window", 0, "the model's context window in tokens (env DIRTYWORK_CONTEXT_WINDOW)")
	fs.IntVar(&f.maxWorktreeMB, "max-worktree-mb", 2048, "largest the worktree may grow, in MiB")
	fs.IntVar(&f.maxWorktreeFiles, "max-worktree-files", 200000, "most entries the worktree may hold")
	fs.BoolVar(&f.allowCommit, "allow-commit", false, "let the worker commit on its branch (host sandbox only)")
	fs.IntVar(&f.maxTokens, "max-tokens", 4096, "most tokens per model reply")
	fs.BoolVar(&f.noStream, "no-stream", false, "do not stream replies")
	// Limits of the sandbox, either kind.
	fs.BoolVar(&f.allowNetwork, "allow-network", false, "give the sandbox the network through the egress proxy (off: only its own loopback)")
	fs.StringArrayVar(&f.allowHosts, "allow-host", nil, "HOST[:PORT] (or *.DOMAIN, comma lists, repeatable) the egress proxy of a run with network lets through, besides the registries the lockfiles name")
	fs.BoolVar(&f.noDefaultHosts, "no-default-hosts", false, "let the egress proxy through to the --allow-host hosts only, not the lockfiles' registries")
	fs.StringVar(&f.memory, "memory", "4g", "the sandbox's memory limit")
	fs.StringVar(&f.tmpSize, "tmp-size", "1g", "size of the sandbox's private /tmp")
	fs.IntVar(&f.pidsLimit, "pids-limit", 512, "most processes and threads the sandbox may hold at once")
	fs.Float64Var(&f.cpus, "cpus", 2, "the sandbox's CPU limit, in CPUs (1.5: one and a half)")
	// Docker-only settings.
	fs.StringVar(&f.image, "image", defaultImage(), "worker image (docker)")
	fs.StringVar(&f.gitdirSize, "gitdir-size", "512m", "size of the worker's git dir: the container's tmpfs (docker), the private repository's cap (host)")
	fs.IntVar(&f.minFreeMB, "min-free-mb", 2048, "host free-space floor in MiB (docker)")
	fs.BoolVar(&f.keepVolume, "keep-volume", false, "keep the worktree volume after export (docker)")
	fs.IntVar(&f.maxPatchMB, "max-patch-mb", 10, "largest diff.patch, in MiB (docker)")
	fs.BoolVar(&f.withHistory, "with-history", false, "give the worker the base commit's whole history, not the base commit alone")
	fs.StringVar(&f.setup, "setup", "", "command run in the tree, with the network through the egress proxy, before the worker starts (docker)")
}

// spec validates the flags and builds the run's Spec. Every problem is a
// usage error (exit 2, nothing created).
func (f *runFlags) spec(fs *pflag.FlagSet, args []string, fromConfig map[string]bool) (engine.Spec, error) {
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return engine.Spec{}, usageErrorf("run takes exactly one non-empty TASK argument (quote it)")
	}
	if f.repo == "" {
		return engine.Spec{}, usageErrorf("--repo is required")
	}
	s, err := f.settings(fs, fromConfig)
	s.Repo, s.Task = f.repo, args[0]
	return s, err
}

// settings validates the flags other than --repo and the task (resume
// shares them) and builds the Spec without those two.
func (f *runFlags) settings(fs *pflag.FlagSet, fromConfig map[string]bool) (engine.Spec, error) {
	var s engine.Spec
	atLeast := []struct {
		name  string
		value int
		min   int
	}{
		{"max-turns", f.maxTurns, 1},
		{"timeout", f.timeout, 1},
		{"stall-turns", f.stallTurns, 0},
		{"stuck-repeats", f.stuckRepeats, 0},
		{"verify-rounds", f.verifyRounds, 0},
		{"verify-timeout", f.verifyTimeout, 1},
		{"max-worktree-mb", f.maxWorktreeMB, 1},
		{"max-worktree-files", f.maxWorktreeFiles, 1},
		{"max-tokens", f.maxTokens, 1},
		{"min-free-mb", f.minFreeMB, 0},
		{"max-patch-mb", f.maxPatchMB, 1},
		{"pids-limit", f.pidsLimit, 1},
	}
	for _, c := range atLeast {
		if c.value < c.min {
			return s, usageErrorf("--%s must be at least %d, got %d", c.name, c.min, c.value)
		}
	}
	if fs.Changed("context-window") || fromConfig["context-window"] {
		if f.contextWindow < 1 {
			return s, usageErrorf("--context-window must be at least 1, got %d", f.contextWindow)
		}
	}
	switch f.provider {
	case "openai", "anthropic":
	default:
		return s, usageErrorf("--provider must be openai or anthropic, got '%s'", f.provider)
	}
	switch f.sandbox {
	case "docker", "none":
	default:
		return s, usageErrorf("--sandbox must be docker or none, got '%s'", f.sandbox)
	}
	if fs.Changed("temperature") && (math.IsNaN(f.temperature) || math.IsInf(f.temperature, 0)) {
		return s, usageErrorf("--temperature must be a finite number")
	}
	if math.IsNaN(f.cpus) || math.IsInf(f.cpus, 0) || f.cpus <= 0 {
		return s, usageErrorf("--cpus must be a positive number, got %v", f.cpus)
	}
	for _, c := range []struct{ name, v string }{{"memory", f.memory}, {"tmp-size", f.tmpSize}, {"gitdir-size", f.gitdirSize}} {
		if _, err := sandbox.ParseSize(c.v); err != nil {
			return s, usageErrorf("--%s must be a size such as 512m, 1.5g or 4gb, got '%s'", c.name, c.v)
		}
	}
	if f.image == "" {
		return s, usageErrorf("--image must not be empty")
	}
	allowHosts, err := egress.ParseRules(f.allowHosts...)
	if err != nil {
		return s, usageErrorf("--allow-host: %v", err)
	}

	baseURL := f.baseURL
	if !fs.Changed("base-url") && !fromConfig["base-url"] {
		baseURL = defaultBaseURL(f.provider)
	}
	s = engine.Spec{
		Model: f.model, Provider: f.provider, BaseURL: baseURL,
		BranchFrom: f.branchFrom, Sandbox: f.sandbox,
		MaxTurns: f.maxTurns, Timeout: time.Duration(f.timeout) * time.Second,
		MaxTokens: f.maxTokens, Stream: !f.noStream,
		StallTurns: f.stallTurns, StuckRepeats: f.stuckRepeats,
		VerifyCommand: f.verify, VerifyRounds: f.verifyRounds, VerifyTimeout: f.verifyTimeout,
		MaxWorktreeMB: f.maxWorktreeMB, MaxWorktreeFiles: f.maxWorktreeFiles, AllowCommit: f.allowCommit,
		PidsLimit: f.pidsLimit, AllowHosts: allowHosts, NoDefaultHosts: f.noDefaultHosts,
		Docker: engine.DockerSpec{
			Image: f.image, AllowNetwork: f.allowNetwork, Memory: f.memory, CPUs: f.cpus,
			TmpSize: f.tmpSize, GitdirSize: f.gitdirSize, MinFreeMB: f.minFreeMB,
			KeepVolume: f.keepVolume, MaxPatchMB: f.maxPatchMB, WithHistory: f.withHistory, Setup: f.setup,
		},
	}
	if fs.Changed("temperature") || fromConfig["temperature"] {
		t := f.temperature
		s.Temperature = &t
	}
	if fs.Changed("context-window") || fromConfig["context-window"] {
		s.ContextWindow = f.contextWindow
		s.ContextWindowFromConfig = !fs.Changed("context-window")
	}
	return s, nil
}

func newRunCmd(io *streams) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run --repo PATH [flags] TASK",
		Short: "Run one task against a model in an isolated worktree",
		Long: `Run one task against a model server in an agentic tool loop, inside a new git
worktree of --repo. Prints exactly one JSON object on stdout. Exit 0 when the
run completed, 1 for any other final status, 2 for usage, preflight or
environment errors (nothing is created then).

Defaults of every flag can be set in $XDG_CONFIG_HOME/dirtywork/config.toml
with the flag's long name as key (max-turns = 60); the precedence is
flag > environment > config file > built-in.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			fromConfig, err := applyDefaults(c.Flags(), map[string]string{
				"model": "DIRTYWORK_MODEL", "base-url": "DIRTYWORK_BASE_URL",
			}, configPath())
			if err != nil {
				return usageErrorf("%v", err)
			}
			spec, err := f.spec(c.Flags(), args, fromConfig)
			if err != nil {
				return err
			}
			parent, child := detachMode(c)
			if parent {
				return startDetached(c.Context(), io)
			}
			return executeRun(c.Context(), io, spec, child, func(r *engine.Runner, s engine.Spec) (*engine.Payload, error) {
				return r.Run(c.Context(), s)
			})
		},
	}
	f.register(cmd.Flags())
	addDetachFlags(cmd)
	return cmd
}

// executeRun runs spec with start and prints its one JSON object. The
// exit code follows the status: 0 completed, 1 anything else; a refusal is
// exit 2 with nothing on stdout. A detached child announces its run to its
// parent once the run exists.
func executeRun(ctx context.Context, io *streams, spec engine.Spec, detachedChild bool,
	start func(*engine.Runner, engine.Spec) (*engine.Payload, error),
) error {
	var onStarted func(engine.Started)
	if detachedChild {
		dc := newDetachedChild(io.errOut)
		io = &streams{in: io.in, out: io.out, errOut: dc, args: io.args}
		onStarted = dc.announce
	}
	payload, err := runAndPrint(ctx, io, spec, onStarted, start)
	if err != nil {
		return err
	}
	if payload.Status != transcript.StatusCompleted {
		return silentExit(ExitRunNotCompleted)
	}
	return nil
}

// runAndPrint runs spec with start (Runner.Run when nil) and prints its
// result object on stdout.
func runAndPrint(ctx context.Context, io *streams, spec engine.Spec, onStarted func(engine.Started),
	start func(*engine.Runner, engine.Spec) (*engine.Payload, error),
) (*engine.Payload, error) {
	key, unsent, err := modelServerKey(spec.Provider, spec.BaseURL, configPath())
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	spec.APIKey = key
	runner := &engine.Runner{Stderr: io.errOut, Version: Version(), OnStarted: onStarted}
	if start == nil {
		start = func(r *engine.Runner, s engine.Spec) (*engine.Payload, error) { return r.Run(ctx, s) }
	}
	payload, err := start(runner, spec)
	if err != nil {
		return nil, refusalError(err, spec, unsent)
	}
	data, err := engine.EncodePayload(payload)
	if err != nil {
		return nil, fmt.Errorf("encode the result: %w", err)
	}
	pause.At(pause.Output) // the run is recorded and its result kept: stdout is the last copy
	if _, err := io.out.Write(data); err != nil {
		return nil, fmt.Errorf("print the result: %w", err)
	}
	return payload, nil
}

// refusalError is the exit-2 error of a run the engine refused (any other
// error passes through). unsent names a variable holding a key that was
// not sent to the model server: a server that wants one refuses, and the
// operator switching from 0.9.1 needs to know why.
func refusalError(err error, spec engine.Spec, unsent string) error {
	var pe *engine.PreflightError
	if !errors.As(err, &pe) {
		return err
	}
	hint := preflightHint(pe, spec)
	if unsent != "" {
		note := fmt.Sprintf("note: %s is not sent to model servers; set %s, or tie the key to %s under [%s] in %s",
			unsent, apiKeyEnv, spec.BaseURL, apiKeysTable, configPath())
		hint = strings.TrimSpace(hint + "\n" + note)
	}
	return &exitError{Code: ExitUsage, Err: errors.New(pe.Msg), Hint: hint}
}

// preflightHint is a refusal's hint; a missing worker image gets the exact
// command that builds it, which only the command line knows.
func preflightHint(pe *engine.PreflightError, spec engine.Spec) string {
	if errors.Is(pe, workspace.ErrImageMissing) {
		if spec.ResumedFrom != nil {
			return pe.Hint // a resume keeps its image (run.json's) and its sandbox mode
		}
		return imageMissingHint(spec.Docker.Image) + "; or run with --sandbox none (host mode)"
	}
	return pe.Hint
}
