package main

import (
	"context"
	"errors"
	"fmt"
	goio "io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/engine/provider/anthropic"
	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/transcript"
)

// benchFlags are bench's own flags; the run settings every case shares
// are run's flags (runFlags).
type benchFlags struct {
	models, tasks, out, resume   string
	repeats, parallel, fixRounds int
	dockerHosts                  []string
	acceptanceTimeout            int
}

// benchSetsItself are run flags the sweep sets for each case: giving one
// is a usage error rather than silently ignored.
var benchSetsItself = []string{"repo", "model", "sandbox", "branch-from", "allow-commit", "keep-volume", "verify", "setup"}

// labelBenchResults marks a sweep's acceptance checks with the results
// file they score for, so that a resumed sweep finds a killed one's.
const labelBenchResults = "dirtywork.bench.results"

// newBenchCmd is `dirtywork bench`: the sweep, and summarize.
func newBenchCmd(io *streams) *cobra.Command {
	var bf benchFlags
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "bench --models SPEC[,SPEC...] [flags]",
		Short: "Sweep models over the fixture tasks, scoring every run in an acceptance container",
		Long: `Runs every (model × task × repeat) case through the normal docker run path on a
fresh repository made from the task's fixture, then scores the run's exported
tree in a fresh acceptance container: the tree at /work, the fixture's own
acceptance/ read-only at /acceptance, no network. A worker that changed its
copy of acceptance/ scores gamed; an acceptance command still running at
--acceptance-timeout scores fail. One row per case is appended to the results
file as it is scored ($DIRTYWORK_HOME/bench/<UTC stamp>.jsonl, or --out), and
stdout says 'results: <path>' at the end. Every case keeps its run dir
(transcript, diff.patch, acceptance.txt, bench.log).

SPEC is model[@provider][=base_url][#slots]: a part left out falls back to
--provider and --base-url, then to run's defaults; #slots says how many
requests that server takes at once (default 1). --parallel runs cases at once,
never more against one server than its slots, spread over the --docker-host
engines. A server or harness failure is retried once after the server answers
again, and never counted as the model's. --resume FILE continues a sweep: it
first clears what a killed sweep left (runs, containers, volumes, staged
repositories), then skips the cases FILE already scored.

Every run flag (--max-turns, --timeout, --image, --memory, ...) applies to
every case. Exit 0 when the sweep finished (whatever the cases scored), 2 for
usage errors, 1 when the sweep was interrupted or results could not be
written.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runBench(c.Context(), io, c.Flags(), bf, &rf)
		},
	}
	rf.register(cmd.Flags())
	for _, name := range benchSetsItself {
		_ = cmd.Flags().MarkHidden(name)
	}
	f := cmd.Flags()
	f.StringVar(&bf.models, "models", "", "comma-separated model[@provider][=base_url][#slots] specs (required)")
	f.StringVar(&bf.tasks, "tasks", "", "comma-separated task names (default: every fixture)")
	f.IntVar(&bf.repeats, "repeats", 1, "runs of every (model, task)")
	f.IntVar(&bf.parallel, "parallel", 1, "cases in flight at once")
	f.StringVar(&bf.out, "out", "", "results file to append to (default $DIRTYWORK_HOME/bench/<UTC stamp>.jsonl)")
	f.StringVar(&bf.resume, "resume", "", "a results file to continue: what a killed sweep left is cleared, its scored cases skipped")
	f.IntVar(&bf.fixRounds, "fix-rounds", 0, "times a case whose acceptance failed is resumed with the acceptance output as feedback")
	f.StringSliceVar(&bf.dockerHosts, "docker-host", nil, "docker engines to spread cases over (DOCKER_HOST values; default the environment's)")
	f.IntVar(&bf.acceptanceTimeout, "acceptance-timeout", 300, "seconds an acceptance command may run; one still running scores fail")
	cmd.AddCommand(newBenchSummarizeCmd(io))
	return cmd
}

// runBench validates the flags, reaps a killed sweep when resuming, runs
// the sweep and prints where its results are.
func runBench(ctx context.Context, io *streams, fs *pflag.FlagSet, bf benchFlags, rf *runFlags) error {
	for _, name := range benchSetsItself {
		if fs.Changed(name) {
			return usageErrorf("--%s is not a bench flag: the sweep sets it for every case", name)
		}
	}
	if strings.TrimSpace(bf.models) == "" {
		return usageErrorf("--models is required")
	}
	if bf.repeats < 1 || bf.parallel < 1 || bf.fixRounds < 0 || bf.acceptanceTimeout < 1 {
		return usageErrorf("--repeats, --parallel and --acceptance-timeout must be at least 1, --fix-rounds at least 0")
	}
	if bf.resume != "" && bf.out != "" && filepath.Clean(bf.resume) != filepath.Clean(bf.out) {
		return usageErrorf("give --resume FILE or --out FILE, not both")
	}
	hosts, err := benchHosts(bf.dockerHosts)
	if err != nil {
		return err
	}
	fromConfig, err := applyDefaultsSkipping(fs, map[string]string{"base-url": "DIRTYWORK_BASE_URL"}, configPath(), benchIgnoresConfig())
	if err != nil {
		return usageErrorf("%v", err)
	}
	base, err := rf.settings(fs, fromConfig)
	if err != nil {
		return err
	}
	provider, baseURL := "", ""
	if fs.Changed("provider") {
		provider = rf.provider
	}
	if fs.Changed("base-url") {
		baseURL = rf.baseURL
	}
	models, err := bench.ParseModelSpecs(bf.models, provider, baseURL)
	if err != nil {
		return usageErrorf("%v", err)
	}
	resolveModelSpecs(models, base)
	fixtures, err := bench.Load(bench.Repos())
	if err != nil {
		return fmt.Errorf("the bench fixtures: %w", err)
	}
	tasks, err := chooseTasks(fixtures, bf.tasks)
	if err != nil {
		return err
	}
	keys := map[string]string{}
	for _, m := range models {
		key, _, err := modelServerKey(m.Provider, m.BaseURL, configPath())
		if err != nil {
			return usageErrorf("%v", err)
		}
		if key == "" && m.Provider == anthropic.Name {
			return usageErrorf("%s@%s needs an API key: set %s", m.Model, anthropic.Name, anthropic.KeyEnv)
		}
		keys[m.ServerKey()] = key
	}

	stamp := time.Now().UTC().Format("20060102T150405Z")
	out, err := benchOut(bf, stamp)
	if err != nil {
		return err
	}
	if err := benchPreflight(ctx, hosts, base.Docker.Image); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return usageErrorf("results directory: %v", err)
	}
	if out, err = filepath.Abs(out); err != nil {
		return usageErrorf("--out: %v", err)
	}
	accept := &acceptanceEngines{labels: map[string]string{labelBenchResults: out}}
	defer accept.close()
	if bf.resume != "" {
		if err := reapKilledSweep(ctx, io, out, hosts, accept); err != nil {
			return err
		}
	}

	scratch, err := os.MkdirTemp("", bench.ScratchPrefix)
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(scratch) }() // only staged repositories, each removed after its case

	base.Sandbox = "docker"
	base.Docker.KeepVolume = false // the sweep scores the exported tree
	warmEngines(ctx, io.errOut, base, hosts)
	scorer := bench.CaseScorer{
		Fixtures: fixtures, Runner: accept.runner,
		Timeout: time.Duration(bf.acceptanceTimeout) * time.Second, Labels: accept.labels,
	}
	sweep := &bench.Sweep{
		Models: models, Tasks: tasks, Repeats: bf.repeats, Parallel: bf.parallel, Hosts: hosts,
		Out: out, Stamp: stamp, Scratch: scratch, FixRounds: bf.fixRounds, Base: base,
		Stage: bench.Stager{Fixtures: fixtures, Parent: scratch}.Stage,
		RunCase: func(ctx context.Context, spec engine.Spec, log goio.Writer, hooks bench.CaseHooks) (*engine.Payload, error) {
			spec.APIKey = keys[bench.ModelSpec{Provider: spec.Provider, BaseURL: spec.BaseURL}.ServerKey()]
			r := &engine.Runner{Stderr: log, Version: Version(), OnStarted: hooks.Started, OnWorking: hooks.Working}
			return r.Run(ctx, spec)
		},
		ResumeCase: func(ctx context.Context, req engine.ResumeRequest, log goio.Writer, hooks bench.CaseHooks) (*engine.Payload, error) {
			req.Spec.APIKey = keys[bench.ModelSpec{Provider: req.Spec.Provider, BaseURL: req.Spec.BaseURL}.ServerKey()]
			req.ModelGiven, req.ProviderGiven, req.ImageGiven = true, true, true
			r := &engine.Runner{Stderr: log, Version: Version(), OnStarted: hooks.Started, OnWorking: hooks.Working}
			store, err := runs.OpenDefault(runs.WithDockerHost(req.Spec.Docker.Host))
			if err != nil {
				return nil, err
			}
			return resumeInStore(ctx, store, r, req, true)
		},
		Score:   scorer.Score,
		Prepare: scorer.Prepare,
		Probe: func(ctx context.Context, m bench.ModelSpec) bench.ServerInfo {
			return bench.ProbeServer(ctx, nil, m.Provider, m.BaseURL, m.Model)
		},
		Healthy:  serverAnswers,
		Progress: bench.NewProgress(io.errOut, isTerminal(io.errOut)),
	}
	_, runErr := sweep.Run(ctx)
	fmt.Fprintf(io.out, "results: %s\n", out)
	if runErr != nil {
		// Exit 1, as a run that did not complete: the rows written stand.
		return &exitError{
			Code: ExitRunNotCompleted, Err: fmt.Errorf("the sweep did not finish: %w", runErr),
			Hint: "continue it: the same command with --resume " + shellQuote(out),
		}
	}
	return nil
}

// warmEngines fills, on every engine at once, the tool server volume the
// cases' runs mount, so the first case on each is not the one that pays
// for it. A failure is only a warning: each case's run tries again, and
// fails as a sandbox error if it must.
func warmEngines(ctx context.Context, stderr goio.Writer, base engine.Spec, hosts []string) {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		spec := base
		spec.Docker.Host = h
		wg.Go(func() { errs[i] = engine.WarmDocker(ctx, spec) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "warning: docker engine %s: the tool server volume: %v (each case tries again)\n", engineLabel(hosts[i]), err)
		}
	}
}

// benchPreflight refuses a sweep every case of which would be refused:
// an engine that does not answer, or one without the worker image.
func benchPreflight(ctx context.Context, hosts []string, image string) error {
	for _, h := range hosts {
		cl, err := docker.ConnectTo(h)
		if err != nil {
			return usageErrorf("docker engine %s: %v", engineLabel(h), err)
		}
		_, _, err = cl.ImageExists(ctx, image)
		_ = cl.Close() // a connection only
		if errors.Is(err, docker.ErrNotFound) {
			return &exitError{Code: ExitUsage, Err: fmt.Errorf("the worker image %s is not on docker engine %s", image, engineLabel(h)), Hint: imageMissingHint(image)}
		}
		if err != nil {
			return usageErrorf("docker engine %s: %v", engineLabel(h), err)
		}
	}
	return nil
}

// engineLabel names a --docker-host value in messages.
func engineLabel(host string) string {
	if host == "" {
		return "of the environment"
	}
	return host
}

// benchIgnoresConfig are the config file keys bench passes over: the run
// flags it sets for every case.
func benchIgnoresConfig() map[string]bool {
	out := map[string]bool{}
	for _, name := range benchSetsItself {
		out[name] = true
	}
	return out
}

// benchHosts are the docker engines of --docker-host, each checked; none
// given is the environment's.
func benchHosts(given []string) ([]string, error) {
	if len(given) == 0 {
		return []string{""}, nil
	}
	var hosts []string
	for _, h := range given {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, usageErrorf("--docker-host: an empty engine address")
		}
		if slices.Contains(hosts, h) {
			return nil, usageErrorf("--docker-host: %s is given twice", h)
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// resolveModelSpecs fills what a spec left out (B-3) from the run
// settings: the provider, then the base URL (the provider's default when
// the spec names another provider than the settings'). Every case then
// records, resumes and shares slots by the server it really talks to.
func resolveModelSpecs(models []bench.ModelSpec, base engine.Spec) {
	for i := range models {
		m := &models[i]
		if m.Provider == "" {
			m.Provider = base.Provider
		}
		if m.BaseURL == "" {
			m.BaseURL = base.BaseURL
			if m.Provider != base.Provider {
				m.BaseURL = defaultBaseURL(m.Provider)
			}
		}
	}
}

// chooseTasks is --tasks checked against the fixtures (B-2): every
// fixture when empty; unknown names are a usage error naming them and
// the tasks there are.
func chooseTasks(fixtures []bench.Fixture, list string) ([]string, error) {
	var all []string
	for _, f := range fixtures {
		all = append(all, f.Name)
	}
	if len(all) == 0 {
		return nil, usageErrorf("no bench tasks: the fixture set is empty")
	}
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	var chosen, unknown []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		switch {
		case t == "" || slices.Contains(chosen, t):
		case slices.Contains(all, t):
			chosen = append(chosen, t)
		default:
			unknown = append(unknown, t)
		}
	}
	if len(unknown) > 0 {
		return nil, usageErrorf("unknown bench task(s): %s (available: %s)", strings.Join(unknown, ", "), strings.Join(all, ", "))
	}
	if len(chosen) == 0 {
		return nil, usageErrorf("--tasks names no task (available: %s)", strings.Join(all, ", "))
	}
	return chosen, nil
}

// benchOut is the results file: --resume's (which must exist), --out, or
// a new stamped file under $DIRTYWORK_HOME/bench (B-4).
func benchOut(bf benchFlags, stamp string) (string, error) {
	out := bf.out
	switch {
	case bf.resume != "":
		out = bf.resume
		// A sweep killed before its first row left only its state file.
		info, err := os.Stat(out)
		if errors.Is(err, fs.ErrNotExist) {
			info, err = os.Stat(bench.StatePath(out))
		}
		if err != nil {
			return "", usageErrorf("--resume: %s is no results file of a sweep: %v", out, err)
		}
		if !info.Mode().IsRegular() {
			return "", usageErrorf("--resume: %s is not a results file", out)
		}
	case out == "":
		home, err := transcript.Home()
		if err != nil {
			return "", usageErrorf("%v", err)
		}
		out = filepath.Join(home, "bench", stamp+".jsonl")
	}
	return out, nil
}

// reapKilledSweep clears what a killed sweep of out left before a resume
// goes on, saying on stderr what it did.
func reapKilledSweep(ctx context.Context, io *streams, out string, hosts []string, accept *acceptanceEngines) error {
	r := bench.Reaper{
		CleanRun: func(ctx context.Context, host, slug string) error {
			store, err := runs.OpenDefault(runs.WithDockerHost(host))
			if err != nil {
				return err
			}
			res := store.Clean(ctx, slug, runs.CleanOptions{Force: true, KeepTranscript: true})
			var skips []string
			for _, a := range res.Actions {
				if a.Skipped() {
					skips = append(skips, a.Action+": "+a.Detail)
				}
			}
			if len(skips) > 0 {
				return errors.New(strings.Join(skips, "; "))
			}
			return nil
		},
		RemoveAcceptance: func(ctx context.Context, host string) ([]string, error) {
			runner, err := accept.checker(host)
			if err != nil {
				return nil, err
			}
			return runner.RemoveAcceptance(ctx, accept.labels)
		},
	}
	done, err := r.Reap(ctx, out, hosts)
	for _, line := range done {
		fmt.Fprintf(io.errOut, "resume: %s\n", safeLine(line))
	}
	if errors.Is(err, bench.ErrSweepRunning) {
		return usageErrorf("%v", err)
	}
	if err != nil {
		fmt.Fprintf(io.errOut, "warning: resume: %s\n", safeLine(err.Error()))
	}
	return nil
}

// acceptanceEngines holds one acceptance checker per docker engine,
// connected on first use.
type acceptanceEngines struct {
	labels map[string]string
	mu     sync.Mutex
	byHost map[string]workspace.AcceptanceChecker
	closer []func() error
}

func (a *acceptanceEngines) checker(host string) (workspace.AcceptanceChecker, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.byHost[host]; ok {
		return c, nil
	}
	eng, err := docker.ConnectEngineTo(host)
	if err != nil {
		return workspace.AcceptanceChecker{}, err
	}
	if a.byHost == nil {
		a.byHost = map[string]workspace.AcceptanceChecker{}
	}
	c := workspace.AcceptanceChecker{Engine: eng}
	a.byHost[host] = c
	a.closer = append(a.closer, eng.Close)
	return c, nil
}

// runner is the CaseScorer's Runner.
func (a *acceptanceEngines) runner(host string) (bench.AcceptanceRunner, error) {
	return a.checker(host)
}

func (a *acceptanceEngines) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.closer {
		_ = c() // connections only
	}
}

// serverAnswers reports whether a model server answers at all: any HTTP
// reply to its model listing counts (a 401 is a server that is up).
func serverAnswers(ctx context.Context, m bench.ModelSpec) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(m.BaseURL, "/")+"/models", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close() // only the status line mattered
	return nil
}
