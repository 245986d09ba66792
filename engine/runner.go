package engine

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/provider/anthropic"
	"github.com/dirtywork/dirtywork/engine/provider/openai"
	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/engine/tools"
	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
	"github.com/dirtywork/dirtywork/transcript"
)

// AllowUnconfinedEnv names the switch that lets host mode run without the
// layers of its jail that this system cannot set up.
const AllowUnconfinedEnv = host.AllowUnconfinedEnv

// TimingsEnv, set to 1, makes a run print when each start-up phase ended
// (unix nanoseconds) on stderr, for the performance harness.
const TimingsEnv = "DIRTYWORK_TIMINGS"

// PreflightError is a run refused before it created anything (exit 2):
// the runs store's Refusal, so a refusal of either reads the same.
type PreflightError = runs.Refusal

func refuse(hint, format string, args ...any) *PreflightError {
	return &PreflightError{Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// Runner runs one task end to end: preflight, run record, lane, workspace,
// loop, finalize, result.
type Runner struct {
	// Stderr receives progress lines and warnings.
	Stderr io.Writer
	// Version is recorded in run_start.
	Version string
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// NewProvider builds the model provider (the real ones when nil).
	NewProvider func(Spec) (provider.Provider, error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// OnStarted, when set, is called once the run exists for good: its
	// run dir, run.json and worktree are made and it will end with a
	// result (a detached run's parent announces it then). From then on
	// no refusal removes the run.
	OnStarted func(Started)
	// OnWorking, when set, is called once the run's sandbox is open and
	// its transcript begun: the model is about to be at work (a bench
	// sweep makes the case's acceptance check then, off the sandbox's
	// start).
	OnWorking func()

	// docker is the docker sandbox (the real one when its fields are nil).
	docker dockerBackend
	// slugSalt is where slugs' random part comes from (crypto/rand when
	// nil); tests fix it to make a collision.
	slugSalt io.Reader
}

func (r *Runner) getenv(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return os.Getenv(k)
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) warnf(format string, args ...any) {
	fmt.Fprintf(r.Stderr, "warning: "+format+"\n", args...)
}

// prepared is what preflight established.
type prepared struct {
	spec         Spec
	repo         gitops.Repo
	prov         provider.Provider
	window       int
	windowSource string
	baseRef      string
	branchFrom   *string
	fromRun      *string
	// docker is the docker workspace's configuration as far as preflight
	// knows it (docker mode only).
	docker workspace.Config
	// jailProbe is what the host jail's probe found, and hostMemory and
	// hostTmp the jail's memory cap and /tmp size in bytes (host mode
	// only).
	jailProbe           *jail.Report
	hostMemory, hostTmp int64
	// hostGitdir caps the worker's private git dir in bytes (host mode,
	// --gitdir-size; 0 is the workspace's default).
	hostGitdir int64
	// userSiteCache keeps python's user site across runs (host mode).
	userSiteCache string
	// resume is set when the run continues a prior run in its worktree.
	resume *resumePlan
	// stderr is the runner's, for what the records cannot keep.
	stderr io.Writer
	// slug is the run's, once it has one.
	slug string
	// stashGone, when set, is closed once a done export's stash is
	// removed (in the background, while the sandbox closes).
	stashGone chan struct{}
}

// Run executes spec. It returns a *PreflightError when the run was refused
// (nothing created), else the payload to print; the payload's status
// decides the exit code.
func (r *Runner) Run(ctx context.Context, spec Spec) (*Payload, error) {
	p, err := r.preflight(ctx, spec)
	if err != nil {
		return nil, err
	}
	return r.execute(ctx, p)
}

func (r *Runner) preflight(ctx context.Context, spec Spec) (*prepared, error) {
	p := &prepared{spec: spec, stderr: r.Stderr}
	// 1. The repository.
	repo, err := gitops.ResolveRepo(ctx, spec.Repo)
	if err != nil {
		return nil, refuse("", "%v", err)
	}
	p.repo = repo
	r.mark("preflight_repo")
	// 2. Commits travel only in host mode.
	if spec.AllowCommit && spec.Sandbox == "docker" {
		return nil, refuse("", "--allow-commit requires --sandbox none: docker export carries files, not commits")
	}
	// 3. The model server and the model.
	newProvider := r.NewProvider
	if newProvider == nil {
		newProvider = defaultProvider
	}
	prov, err := newProvider(spec)
	if err != nil {
		return nil, refuse("", "%v", err)
	}
	p.prov = prov
	listCtx, cancel := context.WithTimeout(ctx, openai.PreflightTimeout)
	models, err := prov.ListModels(listCtx)
	cancel()
	if err != nil {
		return nil, refuse(serverHint(prov), "%v", err)
	}
	if !contains(models, spec.Model) {
		loaded := "none"
		if len(models) > 0 {
			loaded = strings.Join(models, ", ")
		}
		return nil, refuse(modelHint(prov, spec.Model), "model '%s' not loaded (loaded: %s).", spec.Model, loaded)
	}
	r.mark("preflight_models")
	// 4. The context window.
	if err := r.resolveWindow(ctx, p); err != nil {
		return nil, err
	}
	r.mark("preflight_window")
	// 5. --branch-from.
	if err := r.resolveBranchFrom(ctx, p); err != nil {
		return nil, err
	}
	// 6. The sandbox.
	if spec.Sandbox == "docker" {
		if err := r.dockerPreflight(ctx, p); err != nil {
			return nil, err
		}
	} else if err := r.hostPreflight(ctx, p); err != nil {
		return nil, err
	}
	r.mark("preflight_sandbox")
	// 8. Task size (7, the workspace, comes with the run record).
	tokens := int(math.Ceil(float64(len([]rune(spec.Task))) / 4))
	if float64(tokens) > 0.20*float64(p.window) {
		r.warnf("the task text is ~%d tokens, %d%% of the %d-token context window; "+
			"the model may run out of room for its work (see docs/operating.md#sizing-the-context-window)",
			tokens, int(math.Round(100*float64(tokens)/float64(p.window))), p.window)
	}
	return p, nil
}

func defaultProvider(spec Spec) (provider.Provider, error) {
	switch spec.Provider {
	case openai.Name:
		return openai.New(openai.Config{BaseURL: spec.BaseURL, APIKey: spec.APIKey}), nil
	case anthropic.Name:
		return anthropic.New(anthropic.Config{BaseURL: spec.BaseURL, APIKey: spec.APIKey}), nil
	}
	return nil, fmt.Errorf("unknown provider '%s'", spec.Provider)
}

// serverHint is the hint of a refusal for a model server that did not
// list its models (E-4.3: the OpenAI path names LM Studio's `lms ps`, the
// Anthropic one the key and the endpoint).
func serverHint(prov provider.Provider) string {
	if prov.Name() == anthropic.Name {
		return "check that " + anthropic.KeyEnv + " holds a valid key and that " + prov.BaseURL() + " is reachable; see also --base-url"
	}
	return "is the model server running at " + prov.BaseURL() + "? With LM Studio, `lms ps` lists the loaded models; see also --base-url"
}

// modelHint is the hint of a refusal for a model the server does not
// list.
func modelHint(prov provider.Provider, model string) string {
	if prov.Name() == anthropic.Name {
		return "pick one of the listed models with --model"
	}
	return "Load it with: lms load " + model
}

func (r *Runner) resolveWindow(ctx context.Context, p *prepared) error {
	spec := p.spec
	q := provider.WindowQuery{
		Env: r.getenv(provider.ContextWindowEnv), Provider: p.prov.Name(), Model: spec.Model,
		Probe: func() (int, bool) { return p.prov.ProbeContextWindow(ctx, spec.Model) },
	}
	if spec.ContextWindow > 0 && !spec.ContextWindowFromConfig {
		q.Flag = &spec.ContextWindow
	}
	if spec.ContextWindowFromConfig && q.Env == "" {
		// The config file ranks below the environment and above the server.
		p.window, p.windowSource = spec.ContextWindow, "config"
	} else {
		n, source, err := provider.ResolveContextWindow(q)
		if err != nil {
			return refuse("", "%v", err)
		}
		p.window, p.windowSource = n, source
	}
	if p.windowSource == provider.WindowSourceDefault {
		r.warnf("no known context window for '%s'; assuming %d tokens (set --context-window or %s)",
			spec.Model, provider.DefaultContextWindow, provider.ContextWindowEnv)
	}
	if prober, ok := p.prov.(provider.ServedWindowProber); ok {
		if served, ok := prober.ProbeServedWindow(ctx, spec.Model); ok {
			if msg, warn := provider.ServedWindowWarning(spec.Model, p.window, served); warn {
				r.warnf("%s", msg)
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// loopAndFinalize runs the loop and then finalize, whatever the loop's
// outcome: the operator needs to know what the worker left. A panic in
// either becomes a model_error outcome or a finalize error instead of a
// crash without a result.
func (r *Runner) loopAndFinalize(ctx context.Context, p *prepared, loop *Loop, ws sandbox.Workspace, guard policy.Options,
	tw *transcript.Writer, system string,
) (Outcome, *sandbox.Finalization, error) {
	out := r.runLoop(ctx, p, loop, ws, guard, tw, system)
	r.mark("loop")
	fin, err := r.finalizeWork(ctx, p, ws)
	r.mark("finalize")
	judgedExported(&out, fin)
	if err != nil {
		return out, nil, err
	}
	return out, fin, nil
}

// judgedExported holds a passed verify to the tree the run left: the
// sealed tree the export took must be the one verify judged, else the
// verify does not pass (and a completed run is verify_failed).
func judgedExported(out *Outcome, fin *sandbox.Finalization) {
	v := out.Verify
	if v == nil || !v.Passed {
		return
	}
	exported := ""
	if fin != nil {
		exported = fin.TreeHash
	}
	if exported == v.Tree && exported != "" {
		return
	}
	v.Passed = false
	if exported == "" {
		v.Reason = "the tree the run left could not be sealed, so nothing shows it is the tree verify judged"
	} else {
		v.Reason = fmt.Sprintf("the tree the run left (%s) is not the tree verify judged (%s)", exported, v.Tree)
	}
	if out.Status == transcript.StatusCompleted {
		out.Status = transcript.StatusVerifyFailed
	}
}

// newLoop is the run's agent loop before its workspace exists: the tools
// and the transcript come with runLoop.
func (r *Runner) newLoop(p *prepared) *Loop {
	spec := p.spec
	loop := &Loop{
		Provider: p.prov,
		Model:    spec.Model, MaxTurns: spec.MaxTurns, Timeout: spec.Timeout, Temperature: spec.Temperature,
		MaxTokens: spec.MaxTokens, Stream: spec.Stream, ContextWindow: p.window,
		StallTurns: spec.StallTurns, StuckRepeats: spec.StuckRepeats,
	}
	if spec.VerifyCommand != "" {
		loop.Verify = &VerifyConfig{
			Command: spec.VerifyCommand, Rounds: spec.VerifyRounds,
			Timeout: time.Duration(spec.VerifyTimeout) * time.Second,
		}
	}
	return loop
}

// runLoop runs the agent loop in ws; a panic ends it as model_error.
func (r *Runner) runLoop(ctx context.Context, p *prepared, loop *Loop, ws sandbox.Workspace, guard policy.Options,
	tw *transcript.Writer, system string,
) (out Outcome) {
	defer func() {
		if v := recover(); v != nil {
			out.Status = transcript.StatusModelError
			out.FinalMessage = fmt.Sprintf("unexpected error: %v", v)
			fmt.Fprintf(r.Stderr, "error: %s\n%s", out.FinalMessage, debug.Stack())
		}
	}()
	loop.Tools, loop.Events = tools.New(ws, guard), tw
	return loop.Run(ctx, system, p.spec.Task)
}

func (r *Runner) runStart(p *prepared, lane gitops.Lane, sandboxSettings any) transcript.RunStart {
	spec := p.spec
	return transcript.RunStart{
		Task: spec.Task, Model: spec.Model, MaxTurns: spec.MaxTurns, Timeout: int(spec.Timeout / time.Second),
		ContextWindow: p.window, ContextWindowSource: p.windowSource,
		Repo: p.repo.Root, Worktree: lane.Worktree, Branch: lane.Branch, BranchFrom: p.branchFrom,
		BaseCommit: lane.BaseCommit, BaseURL: p.prov.BaseURL(), DirtyworkVersion: r.Version,
		Temperature: (*transcript.Float)(spec.Temperature), Sandbox: sandboxSettings, Provider: spec.Provider,
		ResumedFrom: spec.ResumedFrom, Feedback: spec.Feedback, BaseRef: p.baseRefName(),
	}
}

// baseRefName is the branch or ref the run started from.
func (p *prepared) baseRefName() string {
	if p.baseRef != "" {
		return p.baseRef
	}
	return "HEAD"
}

// mark prints when a phase of the run ended, if TimingsEnv asks for it.
// The docker sandbox marks from its own goroutines too.
func (r *Runner) mark(phase string) {
	if r.getenv(TimingsEnv) == "1" {
		markMu.Lock()
		defer markMu.Unlock()
		fmt.Fprintf(r.Stderr, "timings: %s %d\n", phase, time.Now().UnixNano())
	}
}

// markMu keeps the timing lines whole.
var markMu sync.Mutex
