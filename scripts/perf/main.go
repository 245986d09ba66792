// Command perf runs dirtywork on the reference scenario (a scripted model
// that answers instantly, 20 turns of one tool call each, against a
// generated repository) and reports where the time goes: the whole run,
// process start to the first model request, the harness time between a
// reply and the next request per tool call, and the time after the last
// reply. It builds the binary it measures.
//
//	go run ./scripts/perf -files 200 -runs 5
//	go run ./scripts/perf -files 20000 -runs 3
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

//go:embed std20.json
var std20 []byte

func main() {
	files := flag.Int("files", 200, "files in the generated repository")
	runs := flag.Int("runs", 5, "runs to take medians over")
	scenario := flag.String("scenario", "", "scenario script (default: the embedded std20)")
	bin := flag.String("binary", "", "dirtywork binary to measure (default: build one)")
	flag.BoolVar(&verbose, "v", false, "print each run's phase timings")
	flag.StringVar(&fixtureDir, "fixture", "", "keep the generated repository in this directory and reuse it when it is there")
	sandboxFlag := flag.String("sandbox", "none", "sandbox to measure: none (host) or docker")
	flag.DurationVar(&modelDelay, "model-delay", 0, "how long the scripted model takes for each reply (e.g. 500ms)")
	flag.BoolVar(&freshHome, "fresh-home", false, "give every run a DIRTYWORK_HOME of its own (no warm-up run)")
	image := flag.String("image", "dirtywork-worker:dev", "worker image for -sandbox docker")
	verify := flag.String("verify", "", "a --verify command for every run (its cost is in the time after the last reply)")
	runArgs := flag.String("run-args", "", "more flags for every run, space-separated (e.g. --allow-network)")
	flag.Parse()
	sandboxArgs = append([]string{"--sandbox", *sandboxFlag}, strings.Fields(*runArgs)...)
	if *verify != "" {
		sandboxArgs = append(sandboxArgs, "--verify", *verify)
	}
	if *sandboxFlag == "docker" {
		sandboxArgs = append(sandboxArgs, "--image", *image)
	}
	if err := run(*files, *runs, *scenario, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}

// sandboxArgs select the sandbox the runs use.
var sandboxArgs []string

// verbose prints each run's phase timings (DIRTYWORK_TIMINGS) as it ends.
var verbose bool

// fixtureDir, when set, keeps the generated repository for later runs.
var fixtureDir string

// modelDelay is how long each scripted reply takes before its first byte.
var modelDelay time.Duration

// freshHome gives each run a new DIRTYWORK_HOME.
var freshHome bool

// sample is one run's figures.
type sample struct {
	whole, first, after time.Duration
	// model is the time the model spent on requests (arrival to the end
	// of the reply), harness the rest of the whole run.
	model, harness time.Duration
	// resets counts the run's sandbox_reset events: there must be none.
	resets int
	// checkout is when the lane (worktree checkout included) was ready;
	// afterCheckout is from then to the first model request.
	checkout, afterCheckout time.Duration
	gaps                    map[string][]time.Duration // harness time per tool call, by tool
}

func run(files, runs int, scenarioPath, bin string) error {
	data := std20
	if scenarioPath != "" {
		var err error
		if data, err = os.ReadFile(scenarioPath); err != nil {
			return err
		}
	}
	script, err := scripted.ParseScript(data)
	if err != nil {
		return err
	}
	for i := range script.Turns {
		script.Turns[i].DelayMS = int(modelDelay / time.Millisecond)
	}
	work, err := os.MkdirTemp("", "dirtywork-perf-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	if bin == "" {
		bin = filepath.Join(work, "dirtywork")
		build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/dirtywork")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build: %w\n%s", err, out)
		}
	}
	repo := filepath.Join(work, "repo")
	if fixtureDir != "" {
		repo = filepath.Join(fixtureDir, fmt.Sprintf("repo-%d", files))
	}
	if _, err := os.Stat(filepath.Join(repo, ".git")); err == nil && fixtureDir != "" {
		fmt.Printf("fixture: reusing %s\n", repo)
	} else {
		t0 := time.Now()
		if err := makeFixture(repo, files); err != nil {
			return err
		}
		fmt.Printf("fixture: %d files in %.1f s\n", files, time.Since(t0).Seconds())
	}

	var samples []sample
	if !freshHome {
		// One home for every run, as an operator has, warmed by a run
		// that is not measured: what dirtywork keeps across runs (the
		// jail's probe, python's user site) is then in place.
		if _, err := measure(bin, repo, filepath.Join(work, "home"), script); err != nil {
			return fmt.Errorf("warm-up run: %w", err)
		}
	}
	for i := range runs {
		home := filepath.Join(work, "home")
		if freshHome {
			home = filepath.Join(work, fmt.Sprintf("home%d", i))
		}
		s, err := measure(bin, repo, home, script)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		samples = append(samples, s)
	}
	report(files, samples)
	return nil
}

// measure runs the scenario once with a fresh scripted server.
func measure(bin, repo, home string, script scripted.Script) (sample, error) {
	srv := scripted.New(script)
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		return sample{}, err
	}
	defer func() { _ = srv.Close() }()
	args := append([]string{"run"}, sandboxArgs...)
	args = append(args, "--repo", repo, "--base-url", base, "--model", script.ModelID(), "--context-window", "65536", script.Task)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+home, "DIRTYWORK_TIMINGS=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	end := time.Now()
	if err != nil {
		return sample{}, fmt.Errorf("%w\n%s\n%s", err, out.String(), errOut.String())
	}
	var payload struct {
		Status     string `json:"status"`
		Transcript string `json:"transcript"`
		Worktree   string `json:"worktree"`
		Branch     string `json:"branch"`
	}
	if err := json.Unmarshal(out.Bytes(), &payload); err != nil || payload.Status != "completed" {
		return sample{}, fmt.Errorf("run did not complete: %s %s", out.String(), errOut.String())
	}
	if err := removeLane(repo, payload.Worktree, payload.Branch); err != nil {
		return sample{}, err
	}
	events, err := os.ReadFile(payload.Transcript)
	if err != nil {
		return sample{}, fmt.Errorf("read the transcript: %w", err)
	}
	resets := bytes.Count(events, []byte(`"event":"sandbox_reset"`))
	reqs := srv.Requests()
	var chats []scripted.Request
	for _, r := range reqs {
		if r.Chat != nil {
			chats = append(chats, r)
		}
	}
	slices.SortFunc(chats, func(a, b scripted.Request) int { return a.Turn - b.Turn })
	s := sample{
		whole: end.Sub(start), first: chats[0].Time.Sub(start), after: end.Sub(chats[len(chats)-1].Done),
		gaps: map[string][]time.Duration{}, resets: resets,
	}
	for _, line := range strings.Split(errOut.String(), "\n") {
		var phase string
		var ns int64
		if _, err := fmt.Sscanf(line, "timings: %s %d", &phase, &ns); err != nil {
			continue
		}
		at := time.Unix(0, ns)
		if verbose {
			fmt.Printf("    %-22s %8.1f ms\n", phase, float64(at.Sub(start).Microseconds())/1000)
		}
		if phase == "lane" {
			s.checkout, s.afterCheckout = at.Sub(start), chats[0].Time.Sub(at)
		}
	}
	if verbose {
		fmt.Printf("    %-22s %8.1f ms\n    %-22s %8.1f ms\n    %-22s %8.1f ms\n",
			"first request", float64(chats[0].Time.Sub(start).Microseconds())/1000,
			"last reply", float64(chats[len(chats)-1].Done.Sub(start).Microseconds())/1000,
			"exit", float64(end.Sub(start).Microseconds())/1000)
	}
	for _, c := range chats {
		s.model += c.Done.Sub(c.Time)
	}
	s.harness = s.whole - s.model
	for k := 1; k < len(chats); k++ {
		tool := "?"
		if t := script.Turns[k-1]; len(t.ToolCalls) > 0 {
			tool = t.ToolCalls[0].Name
		}
		s.gaps[tool] = append(s.gaps[tool], chats[k].Time.Sub(chats[k-1].Done))
		s.gaps["all"] = append(s.gaps["all"], chats[k].Time.Sub(chats[k-1].Done))
	}
	return s, nil
}

// removeLane removes a measured run's worktree and branch, so a fixture
// kept across invocations stays as it was made: runs that pile up in it
// slow the next ones' git.
func removeLane(repo, worktree, branch string) error {
	for _, args := range [][]string{{"worktree", "remove", "--force", worktree}, {"branch", "-D", branch}} {
		c := exec.Command("git", append([]string{"-C", repo}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func report(files int, samples []sample) {
	pick := func(f func(sample) time.Duration) time.Duration {
		var ds []time.Duration
		for _, s := range samples {
			ds = append(ds, f(s))
		}
		return median(ds)
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	fmt.Printf("%s, %d files, medians of %d runs\n", strings.Join(sandboxArgs, " "), files, len(samples))
	fmt.Printf("  whole run              %s\n", ms(pick(func(s sample) time.Duration { return s.whole })))
	fmt.Printf("  model time             %s\n", ms(pick(func(s sample) time.Duration { return s.model })))
	fmt.Printf("  harness (whole-model)  %s\n", ms(pick(func(s sample) time.Duration { return s.harness })))
	fmt.Printf("  to first model request %s\n", ms(pick(func(s sample) time.Duration { return s.first })))
	fmt.Printf("    worktree ready at    %s (lane opened, checkout included)\n", ms(pick(func(s sample) time.Duration { return s.checkout })))
	if d := pick(func(s sample) time.Duration { return s.afterCheckout }); d >= 0 {
		fmt.Printf("    then first request   %s\n", ms(d))
	} else {
		// The lane is opened while the model is first asked: the request
		// went out before the worktree was ready.
		fmt.Printf("    first request sent   %s before it (the lane opens meanwhile)\n", ms(-d))
	}
	fmt.Printf("  after the last reply   %s\n", ms(pick(func(s sample) time.Duration { return s.after })))
	tools := map[string][]time.Duration{}
	for _, s := range samples {
		for k, v := range s.gaps {
			tools[k] = append(tools[k], v...)
		}
	}
	var names []string
	for k := range tools {
		names = append(names, k)
	}
	slices.Sort(names)
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %s", k, ms(median(tools[k]))))
	}
	fmt.Printf("  harness per tool call  %s\n", strings.Join(parts, ", "))
	resets := 0
	for _, s := range samples {
		resets += s.resets
	}
	fmt.Printf("  sandbox resets         %d in %d runs\n", resets, len(samples))
}

// makeFixture writes the reference repository: n small files under
// src/dDDD/fNNNNN.txt (50 a directory) and a README, in one commit with a
// fixed identity and date, as the reference scenario's generator does.
func makeFixture(dest string, n int) error {
	const per = 50
	readme := fmt.Sprintf("# perf fixture\n\nA generated repository of %d small text files under src/, %d per directory,\n"+
		"used to benchmark an agent harness. Nothing here is meant to be built.\n\n"+
		"Layout: src/dDDD/fNNNNN.txt (file i lives in directory i / %d).\n"+
		"Each file has a single \"TODO: refine item i\" line that scenarios edit.\n", n, per, per)
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dest, "README.md"), []byte(readme), 0o644); err != nil {
		return err
	}
	for i := range n {
		dir := filepath.Join(dest, "src", fmt.Sprintf("d%03d", i/per))
		if i%per == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		body := fmt.Sprintf("# fixture file %05d\nid = %d\nname = \"item-%d\"\nTODO: refine item %d\nalpha = %d\nbeta = %d\n"+
			"lorem ipsum dolor sit amet, consectetur adipiscing elit\nsed do eiusmod tempor incididunt ut labore et dolore magna\n"+
			"status = \"open\"\n# end of file %05d\n", i, i, i, i, (i*7)%1000, (i*13)%1000, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d.txt", i)), []byte(body), 0o644); err != nil {
			return err
		}
	}
	env := append(os.Environ(), "GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@localhost",
		"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@localhost",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	for _, args := range [][]string{{"init", "-q", "-b", "main", "."}, {"add", "-A"}, {"-c", "commit.gpgsign=false", "commit", "-q", "-m", fmt.Sprintf("fixture: %d files", n)}} {
		c := exec.Command("git", args...)
		c.Dir, c.Env = dest, env
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", args[0], err, out)
		}
	}
	return nil
}
