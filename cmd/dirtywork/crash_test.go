package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
)

// The worker of the crash runs writes three files in three turns: one
// with write_file, one with bash, one with write_file again (large enough
// that an export of the tree passes the mid-export point part way).
var crashFiles = map[string]string{
	"alpha.txt": "written by write_file\n",
	"bravo.txt": "written by bash\n",
	"big.txt":   strings.Repeat("a line of the worker's, kept whole\n", 400),
}

// crashTurns is the crash runs' script; sleep, when set, is a command the
// bash turn runs after writing its file, so that the run is killed in
// the middle of it.
func crashTurns(sleep string) map[string]any {
	call := func(name string, args map[string]any) map[string]any {
		return map[string]any{"tool_calls": []any{map[string]any{"name": name, "arguments": args}}}
	}
	bash := "printf 'written by bash\\n' > bravo.txt"
	if sleep != "" {
		bash += " && " + sleep
	}
	return map[string]any{"turns": []any{
		call("write_file", map[string]any{"path": "alpha.txt", "content": crashFiles["alpha.txt"]}),
		call("bash", map[string]any{"command": bash, "timeout": 300}),
		call("write_file", map[string]any{"path": "big.txt", "content": crashFiles["big.txt"]}),
		map[string]any{"finish": "three files"},
	}}
}

// crashed is a dirtywork process stopped at a pause point.
type crashed struct {
	cmd    *exec.Cmd
	point  string
	stdout strings.Builder
	stderr strings.Builder
}

// startPausedCmd starts cmd with the pause point armed and waits until it
// announces point; nothing is timed, the announcement is the signal. The
// process is killed when the test ends, unless the test reaped it.
func startPausedCmd(t *testing.T, cmd *exec.Cmd, point string) *crashed {
	t.Helper()
	c := &crashed{cmd: cmd, point: point}
	cmd.Env = append(cmd.Env, pause.Env+"="+point)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout = &c.stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	announced := make(chan bool, 1)
	var text strings.Builder
	go func() {
		sc := bufio.NewScanner(errPipe)
		seen := false
		for sc.Scan() {
			if !seen {
				text.WriteString(sc.Text() + "\n")
			}
			if !seen && strings.HasPrefix(sc.Text(), "dirtywork: paused at "+point+" ") {
				seen = true
				announced <- true
			}
		}
		if !seen {
			announced <- false
		}
		_, _ = io.Copy(io.Discard, errPipe)
	}()
	select {
	case ok := <-announced:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("dirtywork %v ended without reaching %s:\n%s%s", cmd.Args[1:], point, c.stdout.String(), text.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("dirtywork %v did not reach %s", cmd.Args[1:], point)
	}
	c.stderr.WriteString(text.String())
	return c
}

// kill SIGKILLs the paused process and reaps it.
func (c *crashed) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := c.cmd.Wait()
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the process did not die by SIGKILL: %v", err)
	}
	if c.stdout.Len() != 0 {
		t.Errorf("the killed process printed a result: %s", c.stdout.String())
	}
}

// descendants lists the processes below pid (children, their children…)
// by walking /proc: what a killed run must not leave running.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces: the
		// fields after the last ')' are state, ppid, ...
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
			if _, ok := parent[q]; !ok {
				break
			}
		}
	}
	return out
}

// alive reports whether pid still runs (a zombie counts as gone).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
}

// hostCrash is one host-mode run (or review command) to be killed.
type hostCrash struct {
	*e2e
	// tmp is the TMPDIR of every process of the test: what a killed run
	// leaves there is found, and must be gone after reconcile.
	tmp string
}

func (h *hostCrash) env() []string {
	return []string{"DIRTYWORK_HOME=" + h.home, "TMPDIR=" + h.tmp}
}

func (h *hostCrash) runArgs(extra ...string) []string {
	return append([]string{
		"run", "--sandbox", "none", "--repo", h.repo, "--base-url", h.base,
		"--model", scripted.DefaultModel, "--context-window", "32768", "--verify", "test -f alpha.txt",
	}, append(extra, "crash test")...)
}

// cli runs dirtywork to completion and returns stdout, stderr and the
// exit code.
func (h *hostCrash) cli(args ...string) (string, string, int) {
	h.t.Helper()
	out, errOut, code, err := runCLIProcess(h.t, "", h.env(), args...)
	if err != nil {
		h.t.Fatal(err)
	}
	return out, errOut, code
}

func (h *hostCrash) runDirs() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(filepath.Join(h.home, "runs"))
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// listRow is the run's row of `runs list --json`.
func (h *hostCrash) listRow(slug string) map[string]any {
	h.t.Helper()
	out, errOut, code := h.cli("runs", "list", "--json")
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		h.t.Fatalf("runs list --json: exit %d %q %s", code, out, errOut)
	}
	for _, r := range rows {
		if r["slug"] == slug {
			return r
		}
	}
	h.t.Fatalf("runs list does not show %s:\n%s", slug, out)
	return nil
}

// crashPoint is one point of a host run's life (or of a review of it)
// where dirtywork is killed.
type crashPoint struct {
	point string
	// written are the files the worker wrote when the process stops.
	written []string
	// review: the run ends first; args are the review command killed.
	review []string
	// ended: the run's record says it ended when the process dies, so it
	// is the operator's to review, not a crash for reconcile to clean.
	ended bool
	// noTranscript: the process dies before the transcript exists.
	noTranscript bool
}

// hostCrashPoints are the points a host run is killed at, in the order
// of its life, then those of the review commands.
var hostCrashPoints = []crashPoint{
	{point: pause.Lane, noTranscript: true},
	{point: pause.Transcript},
	{point: pause.Jail},
	{point: pause.Reply},
	{point: pause.ToolDone, written: []string{"alpha.txt"}},
	{point: pause.MidBash, written: []string{"alpha.txt", "bravo.txt"}},
	{point: pause.Verify, written: []string{"alpha.txt", "bravo.txt", "big.txt"}},
	{point: pause.Finalize, written: []string{"alpha.txt", "bravo.txt", "big.txt"}},
	{point: pause.RunJSON, written: []string{"alpha.txt", "bravo.txt", "big.txt"}},
	{point: pause.Output, written: []string{"alpha.txt", "bravo.txt", "big.txt"}, ended: true},
	{point: pause.Verdict, written: []string{"alpha.txt", "bravo.txt", "big.txt"}, ended: true, review: []string{"runs", "verdict", "SLUG", "cleanup", "--note", "crash"}},
	{point: pause.Park, written: []string{"alpha.txt", "bravo.txt", "big.txt"}, ended: true, review: []string{"runs", "clean", "SLUG", "--force"}},
	{point: pause.Merge, written: []string{"alpha.txt", "bravo.txt", "big.txt"}, ended: true, review: []string{"runs", "merge", "SLUG"}},
}

// TestCrashAtEveryPointHost SIGKILLs a host-mode (--sandbox none)
// `dirtywork run` at each named point of its life, and the review
// commands at theirs, then checks that what is on disk is in a defined
// state: run.json reads, the transcript reads without a problem and holds
// every tool call the worker made, `runs list` shows the run not alive
// with a status, `runs reconcile` (and `runs clean --force` for a run that
// had ended) leaves no worktree, branch, process or temporary directory,
// `resume` continues the run or refuses it with a reason, and the parked
// ref holds every file the worker wrote.
func TestCrashAtEveryPointHost(t *testing.T) {
	if len(hostCrashPoints) < 10 {
		t.Fatalf("only %d crash points", len(hostCrashPoints))
	}
	for i, tc := range hostCrashPoints {
		t.Run(tc.point, func(t *testing.T) {
			sleep := ""
			if tc.point == pause.MidBash {
				// A sleep length of this test's own, to find its process.
				sleep = fmt.Sprintf("sleep %d", 8231+i)
			}
			script, err := json.Marshal(crashTurns(sleep))
			if err != nil {
				t.Fatal(err)
			}
			h := &hostCrash{e2e: newE2E(t, string(script)), tmp: t.TempDir()}
			var slug string
			var proc *crashed
			if tc.review != nil {
				out, errOut, code := h.cli(h.runArgs()...)
				if code != 0 {
					t.Fatalf("the run to review: exit %d\n%s%s", code, out, errOut)
				}
				var payload map[string]any
				if err := json.Unmarshal([]byte(out), &payload); err != nil {
					t.Fatal(err)
				}
				slug = filepath.Base(payload["run_dir"].(string))
				if tc.point == pause.Merge {
					if out, errOut, code := h.cli("runs", "accept", slug); code != 0 {
						t.Fatalf("accept: exit %d\n%s%s", code, out, errOut)
					}
				}
				args := append([]string(nil), tc.review...)
				for i, a := range args {
					if a == "SLUG" {
						args[i] = slug
					}
				}
				proc = startPausedCmd(t, cliCommand(t, "", h.env(), args...), tc.point)
			} else {
				before := h.runDirs()
				proc = startPausedCmd(t, cliCommand(t, "", h.env(), h.runArgs()...), tc.point)
				for name := range h.runDirs() {
					if !before[name] {
						slug = name
					}
				}
				if slug == "" {
					t.Fatal("no new run dir")
				}
			}
			runDir := filepath.Join(h.home, "runs", slug)
			rec, err := transcript.ReadRecord(runDir)
			if err != nil {
				t.Fatalf("run.json at %s: %v", tc.point, err)
			}
			wt, _ := rec.String("worktree")
			if tc.point == pause.MidBash {
				// The command is on its way to the tool server: wait for it
				// to have written its file (a condition, not a delay).
				waitFor(t, func() bool {
					b, _ := os.ReadFile(filepath.Join(wt, "bravo.txt"))
					return string(b) == crashFiles["bravo.txt"]
				})
			}
			below := descendants(proc.cmd.Process.Pid)
			proc.kill(t)

			// Nothing the process started outlives it: the jail and the
			// worker's command die with it.
			waitFor(t, func() bool {
				for _, p := range below {
					if alive(p) {
						return false
					}
				}
				return true
			})
			if sleep != "" && strings.Contains(pgrep(t), sleep) {
				t.Errorf("the worker's %q outlived the run", sleep)
			}

			// run.json reads, and says the run ended or still runs.
			rec, err = transcript.ReadRecord(runDir)
			if err != nil {
				t.Fatalf("run.json after the kill: %v", err)
			}
			status, _ := rec.String("status")
			wantStatus := "running"
			if tc.ended {
				wantStatus = "completed"
			}
			if status != wantStatus {
				t.Errorf("run.json status %q, want %q", status, wantStatus)
			}
			branch, _ := rec.String("branch")
			checkCrashTranscript(t, runDir, tc.point, tc.noTranscript, len(tc.written))

			// runs list: the run, not alive, with its status.
			row := h.listRow(slug)
			if row["alive"] != false || row["status"] != wantStatus {
				t.Errorf("runs list after the kill: %v; want alive false, status %s", row, wantStatus)
			}

			out := h.reconcile()
			if !tc.ended && !strings.Contains(out, "crashed-run "+slug+": clean") {
				t.Errorf("reconcile did not clean the crashed run %s", slug)
			}
			if tc.ended {
				// The run had ended: its worktree is the operator's to
				// review, and reconcile leaves it. Cleaning it is the next
				// step, and loses nothing either.
				if _, err := os.Stat(filepath.Join(wt, ".git")); tc.point != pause.Park && err != nil {
					t.Errorf("reconcile removed the worktree of an ended run: %v", err)
				}
				if out, errOut, code := h.cli("runs", "clean", slug, "--force", "--keep-transcript"); code != 0 {
					t.Fatalf("runs clean --force --keep-transcript: exit %d\n%s\n%s", code, out, errOut)
				}
			}
			row = h.listRow(slug)
			if row["alive"] != false || row["status"] != wantStatus {
				t.Errorf("runs list after reconcile: %v; want alive false, status %s", row, wantStatus)
			}
			h.checkNothingLeft(wt, branch)
			h.checkParked(slug, tc)
			h.checkResume(slug)
		})
	}
}

// reconcile runs `runs reconcile` on the test's repository and returns
// its report. The test's processes reach no docker daemon, and no run of
// its runs root used docker: reconcile notes that it did not look there
// and succeeds; anything else on stderr fails the test.
func (h *hostCrash) reconcile() string {
	t := h.t
	t.Helper()
	out, errOut, code := h.cli("runs", "reconcile", "--repo", h.repo)
	t.Logf("runs reconcile:\n%s%s", out, errOut)
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if line != "" && !strings.HasPrefix(line, "note: docker: ") {
			t.Fatalf("runs reconcile failed: %s", line)
		}
	}
	if code != 0 {
		t.Fatalf("runs reconcile: exit %d", code)
	}
	return out
}

// checkCrashTranscript reads a killed run's transcript: every line whole
// and decodable, one run_start once it was due, and a tool call for each
// file of the worker's on disk (no work without its record). Before the
// transcript was due (noTranscript) there is none, or an empty one.
func checkCrashTranscript(t *testing.T, runDir, point string, noTranscript bool, written int) {
	t.Helper()
	path := filepath.Join(runDir, transcript.TranscriptName)
	lines, problems, err := transcript.ReadFile(path)
	if noTranscript {
		if err == nil && len(lines) > 0 {
			t.Errorf("the transcript has %d lines before the run started", len(lines))
		}
		return
	}
	if err != nil || len(problems) > 0 {
		t.Fatalf("the transcript does not read cleanly: %v %v", err, problems)
	}
	calls, starts := 0, 0
	for _, l := range lines {
		ev, err := l.Decode()
		if err != nil {
			t.Errorf("line %d (%s) does not decode: %v", l.Number, l.Event, err)
		}
		switch ev := ev.(type) {
		case transcript.Assistant:
			calls += len(ev.ToolCalls)
		case transcript.RunStart:
			starts++
		}
	}
	if point != pause.Transcript && starts != 1 {
		t.Errorf("%d run_start events", starts)
	}
	// Each file is written by a call of its own.
	if calls < written {
		t.Errorf("the transcript records %d tool calls, but %d files the worker wrote are on disk", calls, written)
	}
}

// checkNothingLeft: no worktree, stash, branch, git worktree entry or
// temporary directory of the run.
func (h *hostCrash) checkNothingLeft(wt, branch string) {
	t := h.t
	t.Helper()
	if wt != "" {
		if _, err := os.Lstat(wt); err == nil {
			t.Errorf("worktree %s left", wt)
		}
	}
	if wts := gitOut(t, h.repo, "worktree", "list", "--porcelain"); strings.Contains(wts, ".worktrees/") {
		t.Errorf("git still lists a worktree:\n%s", wts)
	}
	if refs := gitOut(t, h.repo, "for-each-ref", "--format=%(refname)", "refs/heads/dirtywork/"); refs != "" {
		t.Errorf("branches left: %s (run's is %s)", refs, branch)
	}
	if left, _ := os.ReadDir(h.tmp); len(left) != 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("temporary files left in TMPDIR: %v", names)
	}
}

// checkParked: the parked ref holds every file the worker wrote.
func (h *hostCrash) checkParked(slug string, tc crashPoint) {
	t := h.t
	t.Helper()
	parked := "refs/dirtywork/parked/" + slug
	if tc.point == pause.Merge {
		// The merge did not move its branch: the work is parked, not
		// merged.
		if out := gitOut(t, h.repo, "log", "--format=%s", "main"); strings.Contains(out, "crash test") {
			t.Errorf("main moved although the merge was killed before its branch moved:\n%s", out)
		}
	}
	for _, name := range tc.written {
		got, err := exec.CommandContext(t.Context(), "git", "-C", h.repo, "show", parked+":"+name).Output()
		if err != nil || string(got) != crashFiles[name] {
			t.Errorf("git show %s:%s = %.60q (%v); want the worker's file", parked, name, got, err)
		}
	}
}

// checkResume resumes the killed run once reconcile (or clean) took its
// worktree, its work parked: there is nothing to continue from, and the
// resume says so (exit 2, the run and its missing worktree named) and
// makes no run.
func (h *hostCrash) checkResume(slug string) {
	h.t.Helper()
	checkResumeRefused(h.t, slug, h.runDirs, func() (string, string, int) {
		return h.cli("resume", slug, "--base-url", h.base, "--context-window", "32768")
	})
}

// checkResumeRefused runs resume (a resume of slug) and checks it refuses
// to continue a run whose worktree is gone, and makes no run.
func checkResumeRefused(t *testing.T, slug string, runDirs func() map[string]bool, resume func() (string, string, int)) {
	t.Helper()
	before := runDirs()
	out, errOut, code := resume()
	if code != 2 || out != "" || !strings.Contains(errOut, "run '"+slug+"'") || !strings.Contains(errOut, "is missing; nothing to resume") {
		t.Errorf("resume of the cleaned run: exit %d, stdout %q, stderr %q; want a refusal naming the missing worktree", code, out, errOut)
	}
	if after := runDirs(); len(after) != len(before) {
		t.Errorf("the refused resume made a run: %d run dirs, were %d", len(after), len(before))
	}
}
