package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// e2e is one end-to-end run: a real temp repository, the scripted model
// server on loopback, and dirtywork as a real process.
type e2e struct {
	t    *testing.T
	repo string
	home string
	srv  *scripted.Server
	base string
}

func newE2E(t *testing.T, script string) *e2e {
	t.Helper()
	t.Parallel()
	s, err := scripted.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	e := &e2e{t: t, home: filepath.Join(t.TempDir(), "dwhome"), srv: scripted.New(s)}
	if e.base, err = e.srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.srv.Close() })
	e.repo = filepath.Join(t.TempDir(), "repo")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", e.repo}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(e.repo, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	for name, content := range map[string]string{
		"README.md": "# demo\n", "src/app.py": "def main():\n    return 1\n", ".gitignore": "*.log\n",
	} {
		if err := os.WriteFile(filepath.Join(e.repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "initial")
	return e
}

// run runs dirtywork run with the scripted model and returns the parsed
// stdout object (nil when there was none), stderr and the exit code.
func (e *e2e) run(extra ...string) (map[string]any, string, int) {
	e.t.Helper()
	args := append([]string{
		"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
		"--model", scripted.DefaultModel, "--context-window", "32768",
	}, extra...)
	if !hasTask(extra) {
		args = append(args, "do the scripted task")
	}
	out, errOut, code, err := runCLIProcess(e.t, "", []string{"DIRTYWORK_HOME=" + e.home}, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	if out == "" {
		return nil, errOut, code
	}
	var payload map[string]any
	if strings.Count(out, "\n") != 1 {
		e.t.Fatalf("stdout is not exactly one line:\n%s", out)
	}
	if err := json.Unmarshal([]byte(out), &payload); err != nil {
		e.t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	return payload, errOut, code
}

func hasTask(extra []string) bool {
	return len(extra) > 0 && !strings.HasPrefix(extra[len(extra)-1], "-") && (len(extra) < 2 || !strings.HasPrefix(extra[len(extra)-2], "--"))
}

// normalKeys are the 24 keys of every normal-path payload (E-16).
var normalKeys = []string{
	"base_commit", "branch", "context_window_source", "files_changed", "files_changed_truncated",
	"final_message", "finalize_error", "last_assistant_text", "last_tool_result", "provider",
	"resumed_from", "run_dir", "schema_version", "status", "stuck_on", "timeouts", "transcript",
	"trimmed_turns", "turns", "usage", "verify", "watchdog_violation", "watchdog_violation_kind", "worktree",
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// events reads a transcript and returns its events in order.
func events(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("transcript line is not JSON: %v\n%s", err, sc.Text())
		}
		if _, ok := ev["ts"].(string); !ok {
			t.Fatalf("transcript line without ts: %s", sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

func eventNames(evs []map[string]any) string {
	var names []string
	for _, ev := range evs {
		n := ev["event"].(string)
		if n == "model_request" || n == "model_progress" {
			continue
		}
		if n == "nudge" {
			n += ":" + ev["kind"].(string)
		}
		names = append(names, n)
	}
	return strings.Join(names, ",")
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestRunCompletedEndToEnd(t *testing.T) {
	e := newE2E(t, `{"turns":[
		{"tool_calls":[{"name":"read_file","arguments":{"path":"src/app.py"}}]},
		{"tool_calls":[{"name":"edit_file","arguments":{"path":"src/app.py","old_string":"return 1","new_string":"return 2"}},
		               {"name":"write_file","arguments":{"path":"notes/new.txt","content":"hello\n"}}]},
		{"tool_calls":[{"name":"bash","arguments":{"command":"python3 -c 'print(6*7)'"}}]},
		{"finish":"changed app.py to return 2 and added notes"}]}`)
	payload, stderr, code := e.run()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if got := strings.Join(keysOf(payload), ","); got != strings.Join(normalKeys, ",") {
		t.Fatalf("stdout keys:\n%s\nwant\n%s", got, strings.Join(normalKeys, ","))
	}
	if payload["status"] != "completed" || payload["turns"] != float64(4) ||
		payload["final_message"] != "changed app.py to return 2 and added notes" {
		t.Fatalf("payload %v", payload)
	}
	files, _ := json.Marshal(payload["files_changed"])
	if string(files) != `["notes/new.txt","src/app.py"]` {
		t.Fatalf("files_changed %s", files)
	}
	wt := payload["worktree"].(string)
	if !strings.HasPrefix(wt, filepath.Join(e.repo, ".worktrees", "dw-")) {
		t.Fatalf("worktree %s is not a lane of the repo", wt)
	}
	if diff := gitOut(t, wt, "diff", "--", "src/app.py"); !strings.Contains(diff, "-    return 1\n+    return 2") {
		t.Fatalf("worktree diff:\n%s", diff)
	}
	if st := gitOut(t, e.repo, "status", "--porcelain"); st != "" {
		t.Fatalf("the main checkout changed:\n%s", st)
	}
	evs := events(t, payload["transcript"].(string))
	if got := eventNames(evs); got != "run_start,assistant,tool_result,assistant,tool_result,tool_result,assistant,tool_result,assistant,tool_result,run_end" {
		t.Fatalf("events %s", got)
	}
	start, end := evs[0], evs[len(evs)-1]
	sandbox, _ := start["sandbox"].(map[string]any)
	layers, _ := sandbox["layers"].(map[string]any)
	for _, layer := range []string{"user_ns", "root", "network", "seccomp", "landlock", "pids_limit", "memory_limit"} {
		if state, _ := layers[layer].(map[string]any); state["ok"] != true {
			t.Fatalf("run_start.sandbox = %v: the jail's %s must be in force", start["sandbox"], layer)
		}
	}
	if sandbox["network"] != "none" || sandbox["private_git"] != true || sandbox["pids_limit"] != float64(512) {
		t.Fatalf("run_start.sandbox = %v", start["sandbox"])
	}
	if start["base_ref"] != "HEAD" || start["base_commit"] != payload["base_commit"] {
		t.Fatalf("run_start %v", start)
	}
	if end["status"] != "completed" || end["export_status"] != "n/a" || end["prefix_reuse"] != float64(3) {
		t.Fatalf("run_end %v", end)
	}
	if !strings.Contains(end["diff_stat"].(string), "src/app.py") || end["untracked"] != "notes/" {
		t.Fatalf("run_end diff_stat %q untracked %q", end["diff_stat"], end["untracked"])
	}
	for _, ev := range evs {
		if ev["event"] == "tool_result" && strings.HasPrefix(ev["result"].(string), "ERROR") {
			t.Fatalf("a scripted call failed: %v", ev)
		}
		if ev["event"] == "tool_result" && ev["tool"] == "bash" && ev["result"] != "exit code: 0\n42" {
			t.Fatalf("bash result %q", ev["result"])
		}
	}
	rec, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runJSON map[string]any
	if err := json.Unmarshal(rec, &runJSON); err != nil {
		t.Fatal(err)
	}
	if runJSON["status"] != "completed" || runJSON["sandbox"] != "none" || runJSON["ended"] == nil || runJSON["allow_commit"] != false {
		t.Fatalf("run.json %v", runJSON)
	}
	if !strings.Contains(stderr, "worktree:   "+wt) || !strings.Contains(stderr, "transcript: ") {
		t.Fatalf("stderr lacks the progress lines:\n%s", stderr)
	}
}

// TestRunStatuses reaches each final status for real.
func TestRunStatuses(t *testing.T) {
	listDir := `{"tool_calls":[{"name":"list_dir","arguments":{}}]}`
	readSame := `{"tool_calls":[{"name":"read_file","arguments":{"path":"README.md"}}]}`
	tests := []struct {
		name, script string
		args         []string
		status       string
		message      string
	}{
		{"max_turns", `{"turns":[` + listDir + `,` + listDir + `,` + listDir + `]}`, []string{"--max-turns", "2"}, "max_turns", ""},
		{"timeout", `{"turns":[{"text":"slow","hold":true}]}`, []string{"--timeout", "1"}, "timeout", ""},
		{"context_exhausted by budget", `{"turns":[` + listDir + `]}`, []string{"--context-window", "10"}, "context_exhausted", ""},
		{"context_exhausted by server", `{"turns":[{"errors":[{"status":400,"body":"{\"error\":{\"message\":\"This model's maximum context length is 4096 tokens\"}}"}]}]}`, nil, "context_exhausted", ""},
		{"model_error by bad args", `{"turns":[{"tool_calls":[{"name":"read_file","arguments":{}}]},{"tool_calls":[{"name":"read_file","arguments":{}}]},{"tool_calls":[{"name":"read_file","arguments":{}}]}]}`, nil, "model_error", "aborted after 3 consecutive bad_args failures"},
		{"model_error by malformed body", `{"turns":[{"raw_body":"{\"choices\":[]}"}]}`, nil, "model_error", "malformed response"},
		{"stalled", `{"turns":[` + readSame + `,` + readSame + `,` + readSame + `]}`, []string{"--stall-turns", "2"}, "stalled", "no progress in 2 consecutive turns"},
		{"stuck", `{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"exit 7"}}]},{"tool_calls":[{"name":"bash","arguments":{"command":"exit 7"}}]}]}`, []string{"--stuck-repeats", "2"}, "stuck", "the same failing command ran 2 times in a row"},
		{"verify_failed", `{"turns":[{"finish":"done"}]}`, []string{"--verify", "test -f nothing-here", "--verify-rounds", "0"}, "verify_failed", "done"},
		{"budget_exceeded by bash, at the next call", `{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"mkdir a b c"}}]},{"tool_calls":[{"name":"list_dir","arguments":{}}]},{"finish":"never"}]}`, []string{"--max-worktree-files", "6"}, "budget_exceeded", "worktree exceeds 6 entries"},
		{"budget_exceeded by bash, at the end", `{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"mkdir a b c"}}]},{"finish":"done"}]}`, []string{"--max-worktree-files", "6"}, "budget_exceeded", "worktree exceeds 6 entries"},
		{"budget_exceeded", `{"turns":[{"tool_calls":[{"name":"write_file","arguments":{"path":"big.txt","content":"x"}}]},{"finish":"never"}]}`, []string{"--max-worktree-files", "3"}, "budget_exceeded", "worktree exceeds 3 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newE2E(t, tt.script)
			payload, stderr, code := e.run(tt.args...)
			if code != 1 || payload == nil {
				t.Fatalf("exit %d, payload %v\n%s", code, payload, stderr)
			}
			if payload["status"] != tt.status || !strings.Contains(payload["final_message"].(string), tt.message) {
				t.Fatalf("status %v, final_message %q; want %s, %q\n%s", payload["status"], payload["final_message"], tt.status, tt.message, stderr)
			}
			if got := strings.Join(keysOf(payload), ","); got != strings.Join(normalKeys, ",") {
				t.Fatalf("stdout keys %s", got)
			}
			evs := events(t, payload["transcript"].(string))
			if last := evs[len(evs)-1]; last["event"] != "run_end" || last["status"] != tt.status {
				t.Fatalf("last event %v", last)
			}
			if tt.status != "stuck" && payload["stuck_on"] != nil {
				t.Fatalf("stuck_on %v on a %s run", payload["stuck_on"], tt.status)
			}
		})
	}
}

func TestRunInterruptedBySignal(t *testing.T) {
	for i, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// A sleep length unique to this subtest, to find its processes
			// (other tests' scripts end in "sleep 600").
			sleep := fmt.Sprintf("sleep %d", 7391+i)
			e := newE2E(t, `{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"`+sleep+` & `+sleep+`","timeout":120}}]},{"finish":"x"}]}`)
			var out, errOut strings.Builder
			cmd := startCLI(t, "", []string{"DIRTYWORK_HOME=" + e.home}, &out, &errOut,
				"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base, "--model", scripted.DefaultModel,
				"--context-window", "32768", "sleep a while")
			waitFor(t, func() bool { return strings.Contains(pgrep(t), sleep) })
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("dirtywork did not stop within 30 s of the signal")
			}
			if cmd.ProcessState.ExitCode() != 1 {
				t.Fatalf("exit %d\n%s", cmd.ProcessState.ExitCode(), errOut.String())
			}
			var payload map[string]any
			if err := json.Unmarshal([]byte(out.String()), &payload); err != nil || payload["status"] != "interrupted" {
				t.Fatalf("payload %q (%v)", out.String(), err)
			}
			waitFor(t, func() bool { return !strings.Contains(pgrep(t), sleep) })
		})
	}
}

// pgrep lists the command lines of this machine's processes.
func pgrep(t *testing.T) string {
	t.Helper()
	out, _ := exec.Command("ps", "-eo", "args").Output()
	return string(out)
}

// waitFor polls cond until it holds; the ceiling is only a liveness
// bound, generous for a loaded machine.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunPreflightRefusals(t *testing.T) {
	e := newE2E(t, `{"turns":[{"finish":"x"}]}`)
	plain := t.TempDir()
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"not a repo", []string{"--repo", plain}, nil, "not"},
		{"unreachable server", []string{"--base-url", "http://127.0.0.1:1/v1"}, nil, "127.0.0.1:1"},
		{"model not loaded", []string{"--model", "other/model"}, nil, "model 'other/model' not loaded (loaded: scripted/model)."},
		{"bad env window", []string{"--context-window", "0"}, nil, "--context-window must be at least 1"},
		{"negative stall", []string{"--stall-turns", "-1"}, nil, "--stall-turns must be at least 0"},
		{"zero turns", []string{"--max-turns", "0"}, nil, "--max-turns must be at least 1"},
		{"bogus provider", []string{"--provider", "bogus"}, nil, "--provider must be openai or anthropic"},
		{"anthropic without a key", []string{"--provider", "anthropic"}, []string{"ANTHROPIC_API_KEY="}, "ANTHROPIC_API_KEY is not set"},
		{"allow-commit with docker", []string{"--sandbox", "docker", "--allow-commit"}, nil, "--allow-commit requires --sandbox none: docker export carries files, not commits"},
		{"unknown flag", []string{"--bogus"}, nil, "unknown flag"},
		{"unknown run", []string{"--branch-from", "@no-such-run"}, nil, "unknown run 'no-such-run'"},
		{"corrupt run.json", []string{"--branch-from", "@corrupt-run"}, nil, "run.json of 'corrupt-run' is corrupt"},
	}
	corrupt := filepath.Join(e.home, "runs", "corrupt-run")
	if err := os.MkdirAll(corrupt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corrupt, "run.json"), []byte(`{"slug": "corrupt-run", "bra`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{
				"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
				"--model", scripted.DefaultModel,
			}, tt.args...)
			args = append(args, "task")
			out, errOut, code, err := runCLIProcess(t, "", append([]string{"DIRTYWORK_HOME=" + e.home}, tt.env...), args...)
			if err != nil {
				t.Fatal(err)
			}
			if code != 2 || out != "" || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "error: ") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming %q", code, out, errOut, tt.want)
			}
			if entries, _ := os.ReadDir(filepath.Join(e.home, "runs")); len(entries) != 1 {
				t.Fatalf("a refused run left run dirs: %v", entries)
			}
			if entries, _ := os.ReadDir(filepath.Join(e.repo, ".worktrees")); len(entries) != 0 {
				t.Fatalf("a refused run left worktrees")
			}
		})
	}
	out, errOut, code, err := runCLIProcess(t, "", []string{"DIRTYWORK_HOME=" + e.home, "DIRTYWORK_CONTEXT_WINDOW=lots"},
		"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base, "--model", scripted.DefaultModel, "task")
	if err != nil || code != 2 || out != "" || !strings.Contains(errOut, "DIRTYWORK_CONTEXT_WINDOW must be a positive integer, got 'lots'") {
		t.Fatalf("env window: exit %d %q %q %v", code, out, errOut, err)
	}
}

func TestRunConfigFileDefaults(t *testing.T) {
	e := newE2E(t, `{"turns":[{"tool_calls":[{"name":"list_dir","arguments":{}}]},{"tool_calls":[{"name":"list_dir","arguments":{"path":"src"}}]},{"finish":"x"}]}`)
	cfgDir := filepath.Join(t.TempDir(), "xdg")
	if err := os.MkdirAll(filepath.Join(cfgDir, "dirtywork"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "dirtywork", "config.toml")
	if err := os.WriteFile(cfg, []byte("# defaults\nmax-turns = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) (string, string, int) {
		args := append([]string{
			"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
			"--model", scripted.DefaultModel, "--context-window", "32768",
		}, extra...)
		out, errOut, code, err := runCLIProcess(t, "", []string{"DIRTYWORK_HOME=" + e.home, "XDG_CONFIG_HOME=" + cfgDir}, append(args, "task")...)
		if err != nil {
			t.Fatal(err)
		}
		return out, errOut, code
	}
	if out, _, code := run(); code != 1 || !strings.Contains(out, `"status":"max_turns"`) || !strings.Contains(out, `"turns":1`) {
		t.Fatalf("config default not applied: %d %s", code, out)
	}
	if out, _, code := run("--max-turns", "5"); code != 0 || !strings.Contains(out, `"status":"completed"`) {
		t.Fatalf("a flag must beat the config file: %d %s", code, out)
	}
	for content, want := range map[string]string{
		"max-turns = \n":          "config.toml:1:",
		"# ok\nmax-turnz = 3\n":   "config.toml:2: unknown setting 'max-turnz'",
		"\n\nmax-turns = \"x\"\n": "config.toml:3: bad value for 'max-turns'",
	} {
		if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := run(); code != 2 || out != "" || !strings.Contains(errOut, want) {
			t.Fatalf("config %q: exit %d, stderr %q; want %q", content, code, errOut, want)
		}
	}
}

func TestRunBranchFromAnotherRun(t *testing.T) {
	e := newE2E(t, `{"turns":[{"tool_calls":[{"name":"write_file","arguments":{"path":"first.txt","content":"from run one\n"}}]},{"finish":"one"}]}`)
	first, stderr, code := e.run("first run")
	if code != 0 {
		t.Fatalf("first run: %d %s", code, stderr)
	}
	slug := filepath.Base(first["run_dir"].(string))
	second, stderr, code := e.run("--branch-from", "@"+slug, "second run")
	if code != 0 {
		t.Fatalf("second run: %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "snapshot ") || !strings.Contains(stderr, "(from @"+slug+")") {
		t.Fatalf("no snapshot line:\n%s", stderr)
	}
	data, err := os.ReadFile(filepath.Join(second["worktree"].(string), "first.txt"))
	if err != nil || string(data) != "from run one\n" {
		t.Fatalf("the second run does not start from the first's work: %q %v", data, err)
	}
	evs := events(t, second["transcript"].(string))
	if evs[0]["branch_from"] != first["branch"] {
		t.Fatalf("branch_from %v, want %v", evs[0]["branch_from"], first["branch"])
	}
	rec, _ := os.ReadFile(filepath.Join(second["run_dir"].(string), "run.json"))
	if !strings.Contains(string(rec), `"branch_from_run": "`+slug+`"`) {
		t.Fatalf("run.json lacks branch_from_run:\n%s", rec)
	}
}

// TestRunServerDiesMidRun: the model server goes away while a reply is
// awaited. The run ends as model_error after the retries, keeping its
// evidence, and still prints its one JSON object.
func TestRunServerDiesMidRun(t *testing.T) {
	e := newE2E(t, `{"turns":[{"tool_calls":[{"name":"list_dir","arguments":{}}]},{"text":"never sent","hold":true}]}`)
	go func() {
		// The second chat request arrived and waits on its reply (the
		// model listing does not count): the server goes away now.
		_ = e.srv.AwaitArrivals(t.Context(), 2)
		_ = e.srv.Close()
	}()
	payload, stderr, code := e.run()
	if code != 1 || payload == nil {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	ltr, _ := payload["last_tool_result"].(map[string]any)
	if payload["status"] != "model_error" || payload["turns"] != float64(1) || ltr["tool"] != "list_dir" {
		t.Fatalf("evidence lost: %v", payload)
	}
	if usage, _ := payload["usage"].(map[string]any); usage["prompt_tokens"] == float64(0) {
		t.Fatalf("usage lost: %v", payload["usage"])
	}
}

// TestRunRecordsWhatItWasGiven ports T-6, T-7, T-9 and T-15.
func TestRunRecordsWhatItWasGiven(t *testing.T) {
	finish := `{"turns":[{"finish":"ok"}]}`
	t.Run("unknown model window warns, unless the environment sets it", func(t *testing.T) {
		e := newE2E(t, finish)
		args := []string{"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base, "--model", scripted.DefaultModel, "task"}
		_, errOut, code, err := runCLIProcess(t, "", []string{"DIRTYWORK_HOME=" + e.home}, args...)
		if err != nil || code != 0 || !strings.Contains(errOut, "warning: no known context window for 'scripted/model'; assuming 32768 tokens") {
			t.Fatalf("exit %d %v\n%s", code, err, errOut)
		}
		_, errOut, code, err = runCLIProcess(t, "", []string{"DIRTYWORK_HOME=" + e.home, "DIRTYWORK_CONTEXT_WINDOW=8000"}, args...)
		if err != nil || code != 0 || strings.Contains(errOut, "assuming") {
			t.Fatalf("exit %d %v\n%s", code, err, errOut)
		}
	})
	t.Run("allow-commit is recorded and switches the prompt", func(t *testing.T) {
		e := newE2E(t, finish)
		for _, allow := range []bool{false, true} {
			args := []string{}
			if allow {
				args = append(args, "--allow-commit")
			}
			payload, stderr, code := e.run(args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			data, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "run.json"))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf(`"allow_commit": %v`, allow); !strings.Contains(string(data), want) {
				t.Fatalf("run.json lacks %s", want)
			}
		}
		chats := e.srv.ChatRequests()
		first, second := *chats[0].Messages[0].Content, *chats[len(chats)-1].Messages[0].Content
		if !strings.Contains(first, "Do not run git commit") || !strings.Contains(second, "Commit your work as you go") {
			t.Fatalf("system prompts:\n%s\n---\n%s", first, second)
		}
	})
	t.Run("task size advisory", func(t *testing.T) {
		e := newE2E(t, finish)
		_, stderr, code := e.run("--context-window", "2000", strings.Repeat("x", 4000))
		if code != 0 || !strings.Contains(stderr, "warning: the task text is ~1000 tokens, 50% of the 2000-token context window") {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		_, stderr, _ = e.run("--context-window", "2000", strings.Repeat("x", 400))
		if strings.Contains(stderr, "the task text is") {
			t.Fatalf("a small task warned:\n%s", stderr)
		}
	})
	t.Run("context window from the flag, everywhere", func(t *testing.T) {
		e := newE2E(t, finish)
		payload, stderr, code := e.run("--context-window", "5000")
		if code != 0 || payload["context_window_source"] != "flag" {
			t.Fatalf("exit %d %v\n%s", code, payload, stderr)
		}
		evs := events(t, payload["transcript"].(string))
		start, end := evs[0], evs[len(evs)-1]
		if start["context_window"] != float64(5000) || start["context_window_source"] != "flag" || end["context_window_source"] != "flag" {
			t.Fatalf("run_start %v run_end %v", start, end)
		}
		data, _ := os.ReadFile(filepath.Join(payload["run_dir"].(string), "run.json"))
		if !strings.Contains(string(data), `"context_window": 5000`) || !strings.Contains(string(data), `"context_window_source": "flag"`) {
			t.Fatalf("run.json:\n%s", data)
		}
	})
}
