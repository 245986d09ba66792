package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/transcript"
)

// detach starts `dirtywork run --detach` and returns its announcement,
// stderr and exit code.
func (e *e2e) detach(extra ...string) (map[string]any, string, int) {
	e.t.Helper()
	args := append([]string{
		"run", "--detach", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
		"--model", scripted.DefaultModel, "--context-window", "32768",
	}, extra...)
	if !hasTask(extra) {
		args = append(args, "do the scripted task")
	}
	start := time.Now()
	out, errOut, code, err := runCLIProcess(e.t, "", []string{"DIRTYWORK_HOME=" + e.home}, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		e.t.Fatalf("run --detach took %s to return", d)
	}
	if out == "" {
		return nil, errOut, code
	}
	if strings.Count(out, "\n") != 1 {
		e.t.Fatalf("stdout is not one line:\n%s", out)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		e.t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	return obj, errOut, code
}

// wait runs `dirtywork runs wait` and returns stdout, stderr, exit code.
func (e *e2e) wait(args ...string) (string, string, int) {
	e.t.Helper()
	out, errOut, code, err := runCLIProcess(e.t, "", []string{"DIRTYWORK_HOME=" + e.home}, append([]string{"runs", "wait"}, args...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out, errOut, code
}

func TestRunDetachAndWait(t *testing.T) {
	e := newE2E(t, `{"turns":[
		{"hold": true, "tool_calls":[{"name":"write_file","arguments":{"path":"d.txt","content":"detached\n"}}]},
		{"finish":"done in the background"}
	]}`)
	ann, stderr, code := e.detach()
	if code != 0 || ann == nil {
		t.Fatalf("run --detach: exit %d, %v\n%s", code, ann, stderr)
	}
	keys := keysOf(ann)
	if !slices.Equal(keys, []string{"pid", "run_dir", "slug", "transcript"}) {
		t.Fatalf("announcement keys %v", keys)
	}
	if m := undocumented(documentedKeys(t), "Detached runs", ann); len(m) > 0 {
		t.Errorf("announcement keys not in the contract: %v", m)
	}
	slug, runDir := ann["slug"].(string), ann["run_dir"].(string)
	pid := int(ann["pid"].(float64))
	if runDir != filepath.Join(e.home, "runs", slug) || ann["transcript"] != filepath.Join(runDir, "transcript.jsonl") {
		t.Fatalf("announcement %v", ann)
	}
	if !strings.Contains(stderr, "worktree:   ") {
		t.Fatalf("the parent did not relay the run's first lines:\n%s", stderr)
	}
	// The run is alive, in a session of its own, owned by no terminal.
	if alive, err := transcript.IsAlive(runDir); err != nil || !alive {
		res, _ := os.ReadFile(filepath.Join(runDir, "result.json"))
		log, _ := os.ReadFile(filepath.Join(runDir, "stderr.log"))
		t.Fatalf("detached run not alive right after the announcement (%v); result %s\nstderr.log:\n%s", err, res, log)
	}
	if sid, err := unix.Getsid(pid); err != nil || sid != pid {
		t.Fatalf("the run's session is %d (%v), want its own (%d)", sid, err, pid)
	}
	rec, err := transcript.ReadRecord(runDir)
	if err != nil || rec["host_pid"] != json.Number(strconv.Itoa(pid)) {
		t.Fatalf("run.json host_pid %v, want %d (%v)", rec["host_pid"], pid, err)
	}

	e.srv.Release()
	out, werr, code := e.wait(slug)
	if code != 0 {
		t.Fatalf("runs wait: exit %d\n%s\n%s", code, out, werr)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out), &payload); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("runs wait printed %q (%v)", out, err)
	}
	if !slices.Equal(keysOf(payload), normalKeys) || payload["status"] != "completed" || payload["final_message"] != "done in the background" {
		t.Fatalf("result %v", payload)
	}
	kept, err := os.ReadFile(filepath.Join(runDir, "result.json"))
	if err != nil || string(kept) != out {
		t.Fatalf("result.json %q, runs wait printed %q (%v)", kept, out, err)
	}
	if data, err := os.ReadFile(filepath.Join(payload["worktree"].(string), "d.txt")); err != nil || string(data) != "detached\n" {
		t.Fatalf("the detached run's work: %q %v", data, err)
	}
	log, err := os.ReadFile(filepath.Join(runDir, "stderr.log"))
	if err != nil || !strings.Contains(string(log), "worktree:   ") || !strings.Contains(string(log), "transcript: ") {
		t.Fatalf("stderr.log %q (%v)", log, err)
	}
	// A run that ended is waited for at once; --timeout 0 only looks.
	if out2, _, code := e.wait(slug, "--timeout", "0"); code != 0 || out2 != out {
		t.Fatalf("second wait: exit %d %q", code, out2)
	}
}

func TestRunDetachRefusalIsTheRunsRefusal(t *testing.T) {
	e := newE2E(t, `{"turns":[{"finish":"x"}]}`)
	for name, args := range map[string][]string{
		"preflight": {"--model", "other/model"},
		"usage":     {"--max-turns", "0"},
	} {
		ann, stderr, code := e.detach(args...)
		if code != 2 || ann != nil || !strings.Contains(stderr, "error: ") {
			t.Fatalf("%s: exit %d, stdout %v, stderr %q", name, code, ann, stderr)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(e.home, "runs")); len(entries) != 0 {
		t.Fatalf("a refused detached run left %d run dirs", len(entries))
	}
	if entries, _ := os.ReadDir(filepath.Join(e.repo, ".worktrees")); len(entries) != 0 {
		t.Fatal("a refused detached run left a worktree")
	}
}

func TestRunsWaitTimeoutKillAndUnknown(t *testing.T) {
	e := newE2E(t, `{"turns":[{"hold": true, "finish":"never"}]}`)
	ann, stderr, code := e.detach()
	if code != 0 {
		t.Fatalf("run --detach: exit %d\n%s", code, stderr)
	}
	slug := ann["slug"].(string)
	pid := int(ann["pid"].(float64))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	start := time.Now()
	out, werr, code := e.wait(slug, "--timeout", "0.3")
	if code != ExitWaitTimeout || out != "" || !strings.Contains(werr, "run '"+slug+"' is still running after 0.3s") {
		t.Fatalf("timeout: exit %d, stdout %q, stderr %q", code, out, werr)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("runs wait --timeout 0.3 returned after %s", d)
	}

	// SIGKILL the run while runs wait waits: the wait returns, with what
	// run.json says and alive false.
	// The waiter probes the run's liveness lock once per poll: two probes
	// (closes of the lock file opened for reading) and it is waiting.
	probes := watchReadCloses(t, filepath.Join(ann["run_dir"].(string), ".alive"))
	var waitOut, waitErr strings.Builder
	waiter := startCLI(t, "", []string{"DIRTYWORK_HOME=" + e.home}, &waitOut, &waitErr, "runs", "wait", slug)
	probes.await(2, 30*time.Second)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- waiter.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("runs wait on a killed run: %v\n%s", err, waitErr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runs wait did not return after the run was killed")
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(waitOut.String()), &obj); err != nil {
		t.Fatalf("runs wait printed %q: %v", waitOut.String(), err)
	}
	if obj["alive"] != false || obj["status"] != "running" || obj["slug"] != slug || obj["error"] == nil ||
		obj["run_dir"] != ann["run_dir"] || obj["transcript"] != ann["transcript"] {
		t.Fatalf("killed run: %v", obj)
	}
	if m := undocumented(documentedKeys(t), "Detached runs", obj); len(m) > 0 {
		t.Errorf("runs wait keys not in the contract: %v", m)
	}

	for _, tc := range []struct{ args []string }{{[]string{"no-such-run"}}, {[]string{"../x"}}, {[]string{slug, "--timeout", "-1"}}} {
		if out, werr, code := e.wait(tc.args...); code != 2 || out != "" || !strings.HasPrefix(werr, "error: ") {
			t.Fatalf("%v: exit %d, %q, %q", tc.args, code, out, werr)
		}
	}
}

// TestDetachedRunSurvivesItsTerminal: a run detached from a real terminal
// goes on when the terminal goes away (tmux's server is killed, so the
// shell in it gets its hangup).
func TestDetachedRunSurvivesItsTerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is needed for the terminal test: ", err)
	}
	e := newE2E(t, `{"turns":[{"hold": true, "finish":"outlived the terminal"}]}`)
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	outFile := filepath.Join(t.TempDir(), "out.json")
	script := strings.Join([]string{
		"DIRTYWORK_TEST_MAIN=1", "DIRTYWORK_HOME=" + e.home, shellQuote(os.Args[0]),
		"run", "--detach", "--sandbox", "none", "--repo", shellQuote(e.repo), "--base-url", e.base,
		"--model", scripted.DefaultModel, "--context-window", "32768", "task", ">", shellQuote(outFile), "; sleep 600",
	}, " ")
	cmd := exec.Command(tmux, "-S", sock, "new-session", "-d", "-x", "120", "-y", "30", "sh", "-c", script)
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	var ann map[string]any
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(outFile); err == nil && json.Unmarshal(data, &ann) == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ann == nil {
		t.Fatal("no announcement from the run in the terminal")
	}
	if out, err := exec.Command(tmux, "-S", sock, "kill-server").CombinedOutput(); err != nil {
		t.Fatalf("kill tmux: %v\n%s", err, out)
	}
	e.srv.Release()
	out, werr, code := e.wait(ann["slug"].(string), "--timeout", "60")
	if code != 0 || !strings.Contains(out, `"final_message":"outlived the terminal"`) {
		t.Fatalf("after the terminal went away: exit %d %q %q", code, out, werr)
	}
}
