//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// faultCeiling is the liveness bound of a faulted run: far above any
// deadline the tests give, so only a run that never ends trips it.
const faultCeiling = 3 * time.Minute

// faultRun runs `dirtywork run` as a real process with env and args,
// killing it (and failing the test) when it outlives faultCeiling. It
// returns the stdout object, stderr and the exit code; it fails the test
// when stdout is not exactly one JSON object.
func faultRun(t *testing.T, env []string, args ...string) (map[string]any, string, int) {
	t.Helper()
	return faultWait(t, cliCommand(t, "", env, args...))
}

// faultWait runs cmd (dirtywork run, not yet started) to its end, killing
// it (and failing the test) when it outlives faultCeiling. It returns the
// stdout object, stderr and the exit code; it fails the test when stdout
// is not exactly one JSON object.
func faultWait(t *testing.T, cmd *exec.Cmd) (map[string]any, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var hung atomic.Bool
	timer := time.AfterFunc(faultCeiling, func() {
		hung.Store(true)
		_ = cmd.Process.Kill()
	})
	err := cmd.Wait()
	timer.Stop()
	if hung.Load() {
		t.Fatalf("the run did not end within %v (hung)\nstderr:\n%s", faultCeiling, stderr.String())
	}
	code := 0
	if err != nil {
		if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
			t.Fatalf("dirtywork did not exit normally: %v\n%s", err, stderr.String())
		}
		code = cmd.ProcessState.ExitCode()
	}
	out := stdout.String()
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout is not exactly one line (exit %d):\n%q\nstderr:\n%s", code, out, stderr.String())
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out), &payload); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	return payload, stderr.String(), code
}

// hostFaultRun is faultRun for a host-mode run of e's repository and
// scripted server.
func (e *e2e) hostFaultRun(extra ...string) (map[string]any, string, int) {
	e.t.Helper()
	args := append([]string{
		"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
		"--model", "scripted/model", "--context-window", "32768",
	}, extra...)
	return faultRun(e.t, []string{"DIRTYWORK_HOME=" + e.home}, append(args, "do the scripted task")...)
}

// faultWant is what a faulted run must have ended with.
type faultWant struct {
	status string
	code   int
	// finalContains is a part of final_message ("" = not checked).
	finalContains string
	// files are the work the model did before the fault: path in the
	// worktree → content.
	files map[string]string
}

// checkFault checks a faulted run's outcome, records and work: the status
// and exit code, the transcript readable by the transcript reader up to
// its last complete line (each line decoding as its event), run.json
// readable, `dirtywork runs show` and `runs show --diff` working on the
// run, and the work done before the fault in the worktree and the diff.
// env is the environment the run had (its DIRTYWORK_HOME).
func checkFault(t *testing.T, env []string, payload map[string]any, stderr string, code int, want faultWant) {
	t.Helper()
	if code != want.code || payload["status"] != want.status {
		t.Fatalf("exit %d, status %v; want %d, %s\npayload: %v\nstderr:\n%s", code, payload["status"], want.code, want.status, payload, stderr)
	}
	if final, _ := payload["final_message"].(string); !strings.Contains(final, want.finalContains) {
		t.Errorf("final_message %q does not contain %q", final, want.finalContains)
	}
	runDir, _ := payload["run_dir"].(string)
	slug := filepath.Base(runDir)

	// The transcript: every complete line is an event, at most the last
	// line is torn, and it begins with run_start (and ends with run_end
	// unless the fault kept that from being written).
	lines, problems, err := transcript.ReadFile(payload["transcript"].(string))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range problems {
		if p.Kind != transcript.ProblemPartial || i != len(problems)-1 {
			t.Errorf("transcript problem: %v", p)
		}
	}
	if len(lines) == 0 || lines[0].Event != transcript.EventRunStart {
		t.Fatalf("transcript does not start with run_start: %d lines", len(lines))
	}
	for _, l := range lines {
		if _, err := l.Decode(); err != nil {
			t.Errorf("transcript line %d: %v", l.Number, err)
		}
	}
	last := lines[len(lines)-1]
	if last.Event != transcript.EventRunEnd {
		t.Errorf("the last transcript line is %s, not run_end", last.Event)
	} else {
		var end struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(last.Raw, &end); err != nil || end.Status != want.status {
			t.Errorf("run_end status %q (%v), want %s", end.Status, err, want.status)
		}
	}

	// run.json: readable, with the final status; the space held back for
	// the run's end is given back.
	rec, err := transcript.ReadRun(runDir)
	if err != nil {
		t.Fatalf("run.json: %v", err)
	}
	if string(rec.Record.Status) != want.status {
		t.Errorf("run.json status %q, want %q", rec.Record.Status, want.status)
	}
	if _, err := os.Lstat(filepath.Join(runDir, transcript.ReserveName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the run's end reserve is still there: %v", err)
	}

	// The work: in the worktree, and in `runs show --diff`.
	worktree, _ := payload["worktree"].(string)
	for path, content := range want.files {
		if data, err := os.ReadFile(filepath.Join(worktree, path)); err != nil || string(data) != content {
			t.Errorf("work lost: %s is %q (%v), want %q", path, data, err, content)
		}
	}
	out, errOut, showCode, err := runCLIProcess(t, "", env, "runs", "show", slug, "--diff")
	if err != nil || showCode != 0 {
		t.Fatalf("runs show --diff: exit %d %v\n%s", showCode, err, errOut)
	}
	if !strings.Contains(out, "timeline:") {
		t.Errorf("runs show has no timeline:\n%s", out)
	}
	for path, content := range want.files {
		lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
		if !strings.Contains(out, path) || !strings.Contains(out, "\n+"+lines[len(lines)-1]+"\n") {
			t.Errorf("runs show --diff does not show %s:\n%s", path, out)
		}
	}
}

// changesThen is a script whose first two turns change the worktree and
// whose third is fault (a JSON turn object): the work a fault must not
// lose.
func changesThen(fault string) string {
	return `{"turns":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"before_fault.txt","content":"written before the fault\n"}}]},
		{"tool_calls":[{"name":"edit_file","arguments":{"path":"src/app.py","old_string":"return 1","new_string":"return 2"}}]},
		` + fault + `]}`
}

// workBeforeFault is what changesThen's first two turns leave.
var workBeforeFault = map[string]string{
	"before_fault.txt": "written before the fault\n",
	"src/app.py":       "def main():\n    return 2\n",
}

// TestFaultModelServer: the model server fails after two turns that
// changed the worktree. Each way of failing ends the run with a defined
// status and exit code, its stdout object, a readable transcript and
// run.json, and the work kept.
func TestFaultModelServer(t *testing.T) {
	t.Parallel()
	// A valid completion, sent so slowly it never finishes in time.
	slowBody, err := json.Marshal(`{"choices":[{"index":0,"message":{"role":"assistant","content":"too late"},"finish_reason":"stop"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		fault string
		// extra flags for the run
		extra []string
		// act runs while the run waits on the faulty reply.
		act  func(e *e2e)
		want faultWant
	}{
		{
			// The server closes its listener and every connection while
			// the third reply is awaited: the retries meet a refused
			// connection and the run ends as model_error.
			name:  "dies",
			fault: `{"text":"never sent","hold":true}`,
			act:   func(e *e2e) { _ = e.srv.Close() },
			want:  faultWant{status: "model_error", code: 1, finalContains: "127.0.0.1"},
		},
		{
			// The server accepts the request and never sends a byte: the
			// request is bounded by the run's deadline, and the run ends
			// as timeout when it passes.
			name:  "hangs",
			fault: `{"text":"never sent","hold":true}`,
			extra: []string{"--timeout", "20"},
			want:  faultWant{status: "timeout", code: 1},
		},
		{
			// A byte every 200 ms of a reply that would take minutes: the
			// whole-transfer deadline holds, the run ends as timeout.
			name:  "trickles",
			fault: `{"raw_body":` + string(slowBody) + `,"pad_bytes":2000,"drip_ms":200}`,
			extra: []string{"--timeout", "20"},
			want:  faultWant{status: "timeout", code: 1},
		},
		{
			// An invalid JSON body after good turns.
			name:  "garbage JSON",
			fault: `{"raw_body":"{\"choices\": [ this is not JSON"}`,
			want:  faultWant{status: "model_error", code: 1, finalContains: "JSON"},
		},
		{
			// An event stream that is not server-sent events at all.
			name:  "garbage stream",
			fault: `{"raw_stream":"<html><body>502 Bad Gateway</body></html>\n"}`,
			want:  faultWant{status: "model_error", code: 1, finalContains: "stream"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newE2E(t, changesThen(tc.fault))
			t.Cleanup(e.srv.Release)
			if tc.act != nil {
				go func() {
					// The third chat request arrived: the fault's turn.
					if e.srv.AwaitArrivals(t.Context(), 3) == nil {
						tc.act(e)
					}
				}()
			}
			payload, stderr, code := e.hostFaultRun(tc.extra...)
			want := tc.want
			want.files = workBeforeFault
			checkFault(t, []string{"DIRTYWORK_HOME=" + e.home}, payload, stderr, code, want)
			if payload["turns"] != float64(2) {
				t.Errorf("turns %v, want the 2 turns before the fault", payload["turns"])
			}
			if n := len(e.srv.ChatRequests()); n < 2 {
				t.Errorf("the server saw %d chat requests", n)
			}
			if err := e.srv.AwaitArrivals(t.Context(), 3); err != nil {
				t.Errorf("the fault's turn was never asked for: %v", err)
			}
		})
	}
}

// TestFaultRunsRootFills: the file system of DIRTYWORK_HOME (a 1 MiB
// tmpfs) fills while the transcript is written, from the model's large
// replies and tool output. The run goes on to its end (a full run dir does
// not change its outcome), names the lost records in finalize_error and on
// stderr, prints its stdout object, and keeps its work; the transcript
// holds only whole lines. The space the run held back at its start takes
// its end: run_end closes the transcript and run.json says how it ended.
func TestFaultRunsRootFills(t *testing.T) {
	big := strings.Repeat("all work and no play makes a long reply. ", 1500) // ~60 KB a turn
	bigText, err := json.Marshal(big)
	if err != nil {
		t.Fatal(err)
	}
	turns := []string{`{"tool_calls":[{"name":"write_file","arguments":{"path":"before_fault.txt","content":"written before the fault\n"}}]}`}
	for i := range 24 {
		turns = append(turns, `{"text":`+string(bigText)+`,"tool_calls":[{"name":"bash","arguments":{"command":"head -c 19000 /dev/zero | tr '\\0' `+string(rune('a'+i))+`"}}]}`)
	}
	turns = append(turns, `{"tool_calls":[{"name":"write_file","arguments":{"path":"after_fault.txt","content":"written on a full disk\n"}}]}`,
		`{"finish":"done on a full disk"}`)
	e := newE2E(t, `{"turns":[`+strings.Join(turns, ",")+`]}`)
	e.home = smallTmpfs(t)
	payload, stderr, code := e.hostFaultRun("--context-window", "4000000", "--max-turns", "40", "--stall-turns", "0", "--stuck-repeats", "0")
	checkFault(t, []string{"DIRTYWORK_HOME=" + e.home}, payload, stderr, code, faultWant{
		status: "completed", code: 0, finalContains: "done on a full disk",
		files: map[string]string{
			"before_fault.txt": "written before the fault\n",
			"after_fault.txt":  "written on a full disk\n",
		},
	})
	fe, _ := payload["finalize_error"].(string)
	for _, w := range []string{"transcript: write ", "no space left on device"} {
		if !strings.Contains(fe, w) {
			t.Errorf("finalize_error %q does not name %q", fe, w)
		}
	}
	if strings.Contains(fe, "run.json: ") {
		t.Errorf("run.json's end was lost: %q", fe)
	}
	if rec, err := transcript.ReadRun(payload["run_dir"].(string)); err != nil || rec.Record.FinalizeError == nil || !strings.Contains(*rec.Record.FinalizeError, "transcript: write ") {
		t.Errorf("run.json does not record the lost transcript lines: %v", err)
	}
	if !strings.Contains(stderr, "warning: evidence lost: ") {
		t.Errorf("stderr does not report the loss:\n%s", stderr)
	}
	// The disk filled mid-run: turns before it are in the transcript,
	// and the file ends on a whole line.
	data, err := os.ReadFile(payload["transcript"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte(`"event":"tool_result"`)); n < 2 {
		t.Errorf("only %d tool results reached the transcript before the disk filled", n)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("the transcript ends in a torn line: ...%q", data[max(0, len(data)-80):])
	}
}
