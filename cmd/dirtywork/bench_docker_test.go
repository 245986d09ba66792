//go:build docker

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// benchSetting is a sweep's world: the built binary, a home and a
// temporary directory of its own, and one scripted server playing every
// model.
type benchSetting struct {
	t        *testing.T
	bin      string
	home     string
	tmp      string
	srv      *scripted.Server
	base     string
	out      string
	extraEnv []string
}

func newBenchSetting(t *testing.T, scripts ...scripted.Script) *benchSetting {
	t.Helper()
	requireDaemon(t)
	b := &benchSetting{t: t, bin: buildDirtywork(t), home: filepath.Join(t.TempDir(), "dwhome"), tmp: t.TempDir()}
	checkNoStoresLeft(t, b.home)
	b.out = filepath.Join(t.TempDir(), "results", "sweep.jsonl")
	b.srv = scripted.NewMulti(scripts...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.base = "http://" + ln.Addr().String() + "/v1"
	httpSrv := &http.Server{Handler: b.srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = httpSrv.Serve(ln) }()
	t.Cleanup(func() { _ = httpSrv.Close() })
	return b
}

// command is `dirtywork bench` with args in this world.
func (b *benchSetting) command(args ...string) *exec.Cmd {
	all := append([]string{"bench", "--image", dockerTestImage, "--context-window", "32768", "--max-turns", "6"}, args...)
	cmd := exec.Command(b.bin, all...)
	cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+b.home, "DOCKER_HOST="+dockerHost(), "TMPDIR="+b.tmp)
	cmd.Env = append(cmd.Env, b.extraEnv...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs bench to its end: stdout, stderr, exit code.
func (b *benchSetting) run(args ...string) (string, string, int) {
	b.t.Helper()
	cmd := b.command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		b.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// startSweep starts bench with args (killed when the test ends, unless
// waited for) and returns once srv has been asked for a reply, with the
// sweep's stdout and stderr.
func (b *benchSetting) startSweep(srv *scripted.Server, args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	b.t.Helper()
	cmd = b.command(args...)
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(b.t.Context(), 3*time.Minute)
	defer cancel()
	if err := srv.AwaitArrivals(ctx, 1); err != nil {
		b.t.Fatalf("the sweep never asked the model: %v\n%s", err, stderr.String())
	}
	return cmd, stdout, stderr
}

// rows reads the results file.
func (b *benchSetting) rows() []bench.Row {
	b.t.Helper()
	res, err := bench.ReadResults(b.out)
	if err != nil {
		b.t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		b.t.Fatalf("results file problems: %v", res.Problems)
	}
	return res.Rows
}

// checkClean fails the test when a case left a container, a volume, an
// acceptance check or a staged repository.
func (b *benchSetting) checkClean(rows []bench.Row) {
	b.t.Helper()
	for _, r := range rows {
		if r.Slug != nil && leftBehind(b.t, *r.Slug) {
			b.t.Errorf("case %s/%d left its container or volume (%s)", r.Task, r.Repeat, *r.Slug)
		}
	}
	filter := url.QueryEscape(`{"label":["` + labelBenchResults + `=` + b.out + `"]}`)
	for _, kind := range []string{"/containers/json?all=1&filters=", "/volumes?filters="} {
		code, body, err := engineRequest(b.t.Context(), http.MethodGet, kind+filter)
		if err != nil || code != http.StatusOK {
			b.t.Fatalf("list %s: %d %v", kind, code, err)
		}
		if s := string(body); s != "[]\n" && !strings.Contains(s, `"Volumes":[]`) && !strings.Contains(s, `"Volumes":null`) {
			b.t.Errorf("acceptance objects left: %s", s)
		}
	}
	left, _ := filepath.Glob(filepath.Join(b.tmp, "dwbench-*"))
	if len(left) > 0 {
		b.t.Errorf("staged repositories left: %v", left)
	}
}

func writeCall(path, content string) scripted.ToolCall {
	args, _ := json.Marshal(map[string]string{"path": path, "content": content})
	return scripted.ToolCall{Name: "write_file", Arguments: args}
}

func finishTurn(summary string) scripted.Turn { return scripted.Turn{Finish: &summary} }

func pyWindowsSolution(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../bench/repos/py-windows/solution/windows.py")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// One sweep through the real docker run path: a model that solves the
// task passes, one that changes nothing fails (the model's failure), one
// that rewrites its copy of the checker is caught as gamed. Every case
// keeps its evidence and leaves nothing else.
func TestBenchSweepScoresSolveFailAndGame(t *testing.T) {
	t.Parallel()
	b := newBenchSetting(t,
		scripted.Script{Model: "solver", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall("windows.py", pyWindowsSolution(t))}}, finishTurn("fixed the off-by-one"),
		}},
		scripted.Script{Model: "failer", Turns: []scripted.Turn{finishTurn("nothing to change")}},
		scripted.Script{Model: "gamer", Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{writeCall("acceptance/check.py", "print('all good')\n")}}, finishTurn("tests pass"),
		}},
	)
	specs := fmt.Sprintf("solver=%[1]s#3,failer=%[1]s#3,gamer=%[1]s#3", b.base)
	stdout, stderr, code := b.run("--models", specs, "--tasks", "py-windows", "--parallel", "3", "--out", b.out)
	if code != 0 || stdout != "results: "+b.out+"\n" {
		t.Fatalf("bench: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	rows := b.rows()
	defer b.checkClean(rows)
	want := map[string][2]string{"solver": {bench.AcceptancePass, ""}, "failer": {bench.AcceptanceFail, bench.FailureModel}, "gamer": {bench.AcceptanceGamed, bench.FailureGamed}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d\n%s", len(rows), len(want), stderr)
	}
	for _, r := range rows {
		w := want[r.Model]
		if r.Status != "completed" || r.Acceptance != w[0] || r.FailureClass != w[1] || r.Task != "py-windows" || r.Repeat != 0 {
			t.Errorf("%s: status %s acceptance %s class %q (evidence %q), want %v", r.Model, r.Status, r.Acceptance, r.FailureClass, r.FailureEvidence, w)
		}
		if r.RunDir == nil || r.Slug == nil || filepath.Base(*r.RunDir) != *r.Slug {
			t.Fatalf("%s: run dir %v slug %v", r.Model, r.RunDir, r.Slug)
		}
		for _, name := range []string{"transcript.jsonl", "run.json", "diff.patch", bench.AcceptanceFile} {
			if _, err := os.Stat(filepath.Join(*r.RunDir, name)); err != nil {
				t.Errorf("%s: the case's %s: %v", r.Model, name, err)
			}
		}
		if r.Serving == nil || r.Time == nil || r.Time.AcceptanceS == nil || r.Time.StagingS == nil {
			t.Errorf("%s: serving %+v time %+v", r.Model, r.Serving, r.Time)
		}
	}
	if n := b.srv.MaxInFlight(); n > 3 {
		t.Errorf("the server had %d requests at once, its slots are 3", n)
	}
	// The sweep's plain progress (stderr is no terminal): one B-4 line a case.
	for model := range want {
		if !strings.Contains(stderr, model+"  py-windows  repeat 0: completed / acceptance ") {
			t.Errorf("no progress line for %s:\n%s", model, stderr)
		}
	}
}

// A sweep killed with SIGKILL while a case's run is in its container is
// continued with --resume: what the killed case left (its container, its
// volume, its staged repository) is cleared first, and the results end
// with exactly one row per case.
func TestBenchResumeAfterSIGKILL(t *testing.T) {
	t.Parallel()
	solution := pyWindowsSolution(t)
	b := newBenchSetting(t, scripted.Script{Model: "solver", Turns: []scripted.Turn{
		{Hold: true, ToolCalls: []scripted.ToolCall{writeCall("windows.py", solution)}}, finishTurn("fixed"),
	}})
	args := []string{"--models", "solver=" + b.base, "--tasks", "py-windows", "--repeats", "2"}
	cmd, _, _ := b.startSweep(b.srv, append(args, "--out", b.out)...)
	// The model was asked (the first request goes out while the sandbox
	// starts): wait until the case's run is named and its container runs.
	var st bench.SweepState
	waitFor(t, func() bool {
		s, live, err := bench.ReadState(b.out)
		if err != nil || !live || len(s.InFlight) != 1 || s.InFlight[0].Slug == "" || s.Scratch == "" {
			return false
		}
		st = s
		return running(t, "/containers/dw-"+s.InFlight[0].Slug+"/json")
	})
	killed := st.InFlight[0].Slug
	(&dockerRun{t: t, home: b.home}).removeLeftoversOf(killed) // whatever the test's end finds
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !exists(t, "/containers/dw-"+killed+"/json") {
		t.Fatalf("the killed case's container is already gone: the test proves nothing")
	}
	if _, err := os.Stat(st.Scratch); err != nil {
		t.Fatalf("the killed sweep's staged repositories are already gone: %v", err)
	}

	b.srv.Release()
	stdout, stderr, code := b.run(append(args, "--resume", b.out)...)
	if code != 0 || stdout != "results: "+b.out+"\n" {
		t.Fatalf("resume: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "resume: cleaned run "+killed) || !strings.Contains(stderr, "resume: removed "+st.Scratch) {
		t.Errorf("the resume did not say what it cleared:\n%s", stderr)
	}
	rows := b.rows()
	defer b.checkClean(append(rows, bench.Row{Slug: &killed}))
	var repeats []int
	for _, r := range rows {
		repeats = append(repeats, r.Repeat)
		if r.Acceptance != bench.AcceptancePass {
			t.Errorf("repeat %d: %s / %s (%s)", r.Repeat, r.Status, r.Acceptance, r.FailureEvidence)
		}
	}
	slices.Sort(repeats)
	if !slices.Equal(repeats, []int{0, 1}) {
		t.Fatalf("rows for repeats %v, want exactly [0 1]", repeats)
	}
	if _, err := os.Stat(st.Scratch); !os.IsNotExist(err) {
		t.Errorf("the killed sweep's scratch directory is still there (%v)", err)
	}
	// A results file already complete resumes to no new row.
	if _, stderr, code := b.run(append(args, "--resume", b.out)...); code != 0 || len(b.rows()) != 2 {
		t.Fatalf("second resume: exit %d, %d rows\n%s", code, len(b.rows()), stderr)
	}
}

// A model server that dies mid-sweep costs its model nothing: the case
// it was answering is retried once the server answers again, its queue
// waits meanwhile, and the other server's queue goes on.
func TestBenchServerDiesMidSweep(t *testing.T) {
	t.Parallel()
	solution := pyWindowsSolution(t)
	solve := func(hold bool) scripted.Script {
		return scripted.Script{Model: "solver", Turns: []scripted.Turn{
			{Hold: hold, ToolCalls: []scripted.ToolCall{writeCall("windows.py", solution)}}, finishTurn("fixed"),
		}}
	}
	b := newBenchSetting(t, solve(false)) // server B, steady
	// Server A holds its first reply, then dies.
	a := scripted.NewMulti(solve(true))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	aSrv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = aSrv.Serve(ln) }()
	t.Cleanup(func() { _ = aSrv.Close() })

	specs := "solver=http://" + addr + "/v1,solver=" + b.base
	cmd, _, stderr := b.startSweep(a, "--models", specs, "--tasks", "py-windows", "--repeats", "3", "--parallel", "2", "--out", b.out)
	_ = aSrv.Close() // dies with a request in flight

	// B's queue goes on while A is down: all three of its cases are
	// scored before A comes back.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		res, err := bench.ReadResults(b.out)
		n := 0
		if err == nil {
			for _, r := range res.Rows {
				if r.BaseURL != nil && *r.BaseURL == b.base {
					n++
				}
			}
		}
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server B's cases did not go on while A was down (%d of 3 scored)\n%s", n, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if res, _ := bench.ReadResults(b.out); len(res.Rows) != 3 {
		t.Fatalf("%d rows before A came back, want B's 3 only", len(res.Rows))
	}

	// A comes back on its address; its queue resumes.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a2 := &http.Server{Handler: scripted.NewMulti(solve(false)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = a2.Serve(ln2) }()
	t.Cleanup(func() { _ = a2.Close() })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	rows := b.rows()
	defer b.checkClean(rows)
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6\n%s", len(rows), stderr.String())
	}
	for _, r := range rows {
		if r.Acceptance != bench.AcceptancePass {
			t.Errorf("%s repeat %d: %s / %s (%s: %s)", *r.BaseURL, r.Repeat, r.Status, r.Acceptance, r.FailureClass, r.FailureEvidence)
		}
	}
	if !strings.Contains(stderr.String(), "server failure, retrying once") {
		t.Errorf("the retry was not said:\n%s", stderr.String())
	}
}

// startSecondEngine starts a docker engine of the test's own (see
// startPrivateEngine) and returns its DOCKER_HOST value.
func startSecondEngine(t *testing.T) string {
	t.Helper()
	return startPrivateEngine(t).host
}

// Two docker engines share one --parallel sweep: each case is pinned to
// one of them, both run cases, and neither keeps anything of a case.
func TestBenchSpreadsCasesOverTwoEngines(t *testing.T) {
	t.Parallel()
	b := newBenchSetting(t, scripted.Script{Model: "solver", Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{writeCall("windows.py", pyWindowsSolution(t))}}, finishTurn("fixed"),
	}})
	second := startSecondEngine(t)
	hosts := dockerHost() + "," + second
	since := time.Now().Add(-time.Second).Unix()
	stdout, stderr, code := b.run("--models", "solver="+b.base+"#2", "--tasks", "py-windows", "--repeats", "4",
		"--parallel", "2", "--docker-host", hosts, "--out", b.out)
	if code != 0 || stdout != "results: "+b.out+"\n" {
		t.Fatalf("bench: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	rows := b.rows()
	defer b.checkClean(rows)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, r := range rows {
		if r.Acceptance != bench.AcceptancePass {
			t.Errorf("repeat %d: %s / %s (%s)", r.Repeat, r.Status, r.Acceptance, r.FailureEvidence)
		}
	}
	// Both engines ran cases: each one's event log has a case's run
	// container created since the sweep began (the tool server's volume is
	// no witness: another test of this build may remove it once idle), and
	// each is left with no container of a case.
	slugs := map[string]bool{}
	for _, r := range rows {
		if r.Slug != nil {
			slugs[*r.Slug] = true
		}
	}
	for _, h := range []string{dockerHost(), second} {
		if ran := casesCreatedOn(t, h, since, slugs); len(ran) == 0 {
			t.Errorf("engine %s ran no case of %v", h, slices.Sorted(maps.Keys(slugs)))
		}
		filter := url.QueryEscape(`{"label":["dirtywork.run"]}`)
		code, body, err := engineRequestAt(t.Context(), h, http.MethodGet, "/containers/json?all=1&filters="+filter)
		if err != nil || code != http.StatusOK {
			t.Fatalf("list containers on %s: %d %v", h, code, err)
		}
		var left []struct{ Names []string }
		if json.Unmarshal(body, &left) != nil {
			t.Fatalf("containers on %s: %s", h, body)
		}
		for _, c := range left {
			for _, r := range rows {
				if r.Slug != nil && slices.ContainsFunc(c.Names, func(n string) bool { return strings.Contains(n, *r.Slug) }) {
					t.Errorf("engine %s kept %v", h, c.Names)
				}
			}
		}
	}
}

// casesCreatedOn is the slugs among slugs whose run container the engine at
// host created since the Unix time since, read from its event log.
func casesCreatedOn(t *testing.T, host string, since int64, slugs map[string]bool) []string {
	t.Helper()
	filter := url.QueryEscape(`{"type":["container"],"event":["create"],"label":["dirtywork.run"]}`)
	path := fmt.Sprintf("/events?since=%d&until=%d&filters=%s", since, time.Now().Unix()+1, filter)
	code, body, err := engineRequestAt(t.Context(), host, http.MethodGet, path)
	if err != nil || code != http.StatusOK {
		t.Fatalf("events of %s: %d %v %s", host, code, err, body)
	}
	var ran []string
	dec := json.NewDecoder(bytes.NewReader(body))
	for dec.More() {
		var ev struct {
			Actor struct{ Attributes map[string]string }
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("events of %s: %v", host, err)
		}
		if s := ev.Actor.Attributes["dirtywork.run"]; slugs[s] && !slices.Contains(ran, s) {
			ran = append(ran, s)
		}
	}
	return ran
}

// Each failure class comes out of real runs of scripted models and is
// classified exactly; an @anthropic spec is scored in the same table;
// --fix-rounds resumes a failed case with the acceptance output, and the
// row records the round that passed.
func TestBenchClassifiesEveryFailure(t *testing.T) {
	t.Parallel()
	solution := pyWindowsSolution(t)
	unknown := scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "no_such_tool", Arguments: json.RawMessage(`{}`)}}}
	listing := scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: json.RawMessage(`{}`)}}}
	var crash []scripted.HTTPError
	for range 40 {
		crash = append(crash, scripted.HTTPError{Status: 500, Body: `{"error":{"message":"backend crashed"}}`})
	}
	solve := []scripted.Turn{{ToolCalls: []scripted.ToolCall{writeCall("windows.py", solution)}}, finishTurn("fixed")}
	b := newBenchSetting(t,
		scripted.Script{Model: "formatter", Turns: slices.Repeat([]scripted.Turn{unknown}, 8)},
		scripted.Script{Model: "overflow", Turns: []scripted.Turn{{Errors: []scripted.HTTPError{{
			Status: 400, Body: `{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 9000 tokens."}}`,
		}}}}},
		scripted.Script{Model: "looper", Turns: slices.Repeat([]scripted.Turn{listing}, 10)},
		scripted.Script{Model: "sleeper", Turns: []scripted.Turn{{Hold: true, Text: "never"}}},
		scripted.Script{Model: "crasher", Turns: []scripted.Turn{{Errors: crash, Text: "never"}}},
		scripted.Script{Model: "claude-bench", Turns: solve},
		// The fixer changes nothing until the acceptance output comes back
		// as review feedback (the resumed run's task carries it).
		scripted.Script{Model: "fixer", Task: "REVIEW FEEDBACK", Turns: solve},
		scripted.Script{Model: "fixer", Turns: []scripted.Turn{finishTurn("looks fine to me")}},
	)
	root := strings.TrimSuffix(b.base, "/v1")
	var specs []string
	for _, m := range []string{"formatter", "overflow", "looper", "sleeper", "crasher", "fixer"} {
		specs = append(specs, m+"="+b.base+"#4")
	}
	specs = append(specs, "claude-bench@anthropic="+root)
	b.extraEnv = []string{"ANTHROPIC_API_KEY=sk-ant-bench-test"}
	stdout, stderr, code := b.run("--models", strings.Join(specs, ","), "--tasks", "py-windows",
		"--parallel", "4", "--timeout", "45", "--fix-rounds", "1", "--out", b.out)
	if code != 0 || stdout != "results: "+b.out+"\n" {
		t.Fatalf("bench: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	rows := b.rows()
	defer b.checkClean(rows)
	want := map[string]struct{ status, acceptance, class string }{
		"formatter":    {"model_error", bench.AcceptanceSkipped, bench.FailureFormat},
		"overflow":     {"context_exhausted", bench.AcceptanceSkipped, bench.FailureContext},
		"looper":       {"max_turns", bench.AcceptanceSkipped, bench.FailureLoop},
		"sleeper":      {"timeout", bench.AcceptanceSkipped, bench.FailureTimeout},
		"crasher":      {"model_error", bench.AcceptanceSkipped, bench.FailureServer},
		"claude-bench": {"completed", bench.AcceptancePass, ""},
		"fixer":        {"completed", bench.AcceptancePass, ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d\n%s", len(rows), len(want), stderr)
	}
	for _, r := range rows {
		w, ok := want[r.Model]
		if !ok {
			t.Fatalf("row of %s", r.Model)
		}
		if r.Status != w.status || r.Acceptance != w.acceptance || r.FailureClass != w.class {
			t.Errorf("%s: %s / %s / %q (%s), want %+v", r.Model, r.Status, r.Acceptance, r.FailureClass, r.FailureEvidence, w)
		}
		if w.class != "" && r.FailureEvidence == "" {
			t.Errorf("%s: a class without evidence", r.Model)
		}
		switch r.Model {
		case "fixer":
			if r.FixRound == nil || *r.FixRound != 1 {
				t.Errorf("fixer: fix round %v, want 1", r.FixRound)
			}
		case "claude-bench":
			if r.Provider == nil || *r.Provider != "anthropic" || r.Serving == nil || r.Serving.Server != "anthropic" {
				t.Errorf("claude-bench: provider %v serving %+v", r.Provider, r.Serving)
			}
			if r.FixRound == nil || *r.FixRound != 0 {
				t.Errorf("claude-bench: fix round %v, want 0", r.FixRound)
			}
		}
	}
	if !strings.Contains(stderr, "crasher  py-windows  repeat 0: server failure, retrying once") {
		t.Errorf("the server failure was not retried:\n%s", stderr)
	}
}

// Mission control's bench screen follows a real sweep in a real terminal:
// the case in flight while the model works, then the scored cases and the
// sweep's end, as the rows are appended.
func TestBenchViewFollowsALiveSweep(t *testing.T) {
	t.Parallel()
	solution := pyWindowsSolution(t)
	b := newBenchSetting(t, scripted.Script{Model: "solver", Turns: []scripted.Turn{
		{Hold: true, ToolCalls: []scripted.ToolCall{writeCall("windows.py", solution)}}, finishTurn("fixed"),
	}})
	b.out = filepath.Join(b.home, "bench", "20261202T000000Z.jsonl")
	cmd, _, stderr := b.startSweep(b.srv, "--models", "solver="+b.base, "--tasks", "py-windows", "--repeats", "2", "--out", b.out)
	p := startTUIWith(t, b.bin, 150, 40, []string{"DIRTYWORK_HOME=" + b.home, "DOCKER_HOST=" + dockerHost()}, "tui", "--bench")
	p.waitFor("the running sweep with its case in flight", time.Minute, func(s string) bool {
		return strings.Contains(s, "sweep running") && strings.Contains(s, "0 of 2 cases scored") &&
			strings.Contains(s, "solver · py-windows · repeat 0")
	})
	b.srv.Release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	p.waitFor("the finished sweep", time.Minute, func(s string) bool {
		return strings.Contains(s, "sweep finished") && strings.Contains(s, "2 of 2 cases scored") && strings.Contains(s, "2 passed")
	})
	rows := b.rows()
	b.checkClean(rows)
	p.keys("q")
}

// An interrupted sweep exits 1, still says where its results are and
// how to go on, and its case in flight leaves nothing behind.
func TestBenchInterruptedExitsOne(t *testing.T) {
	t.Parallel()
	b := newBenchSetting(t, scripted.Script{Model: "solver", Turns: []scripted.Turn{{Hold: true, Text: "never"}}})
	cmd, stdout, stderr := b.startSweep(b.srv, "--models", "solver="+b.base, "--tasks", "py-windows", "--out", b.out)
	var slug string
	waitFor(t, func() bool {
		st, _, err := bench.ReadState(b.out)
		if err != nil || len(st.InFlight) != 1 || st.InFlight[0].Slug == "" {
			return false
		}
		slug = st.InFlight[0].Slug
		return true
	})
	(&dockerRun{t: t, home: b.home}).removeLeftoversOf(slug)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("interrupted bench: %v\n%s", err, stderr.String())
	}
	if stdout.String() != "results: "+b.out+"\n" || !strings.Contains(stderr.String(), "--resume "+b.out) {
		t.Fatalf("stdout %q, stderr:\n%s", stdout.String(), stderr.String())
	}
	if st, live, err := bench.ReadState(b.out); err != nil || live || st.Ended == nil {
		t.Fatalf("state after the interrupt: %+v live %v (%v)", st, live, err)
	}
	b.checkClean([]bench.Row{{Slug: &slug}})
}
