package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/transcript"
)

// paneProcess is the pid of the process the pane's shell runs whose
// arguments include arg ("" and 0 when none).
func (p *tmuxPane) paneProcess(arg string) int {
	p.t.Helper()
	shell, err := strconv.Atoi(strings.TrimSpace(p.tmux("display-message", "-p", "-t", "e2e", "#{pane_pid}")))
	if err != nil {
		p.t.Fatal(err)
	}
	for _, pid := range descendants(shell) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) > 1 && args[1] == arg && alive(pid) {
			return pid
		}
	}
	return 0
}

// secondRequestOut reports whether the run's transcript records its first
// tool result and its second model request: the one the model holds.
func secondRequestOut(runDir string) bool {
	lines, _, _ := transcript.ReadFile(filepath.Join(runDir, transcript.TranscriptName))
	requests, results := 0, 0
	for _, l := range lines {
		switch l.Event {
		case "model_request":
			requests++
		case "tool_result":
			results++
		}
	}
	return requests == 2 && results == 1
}

// TestE2EKillMissionControlWithFourLiveRuns: four runs launched from
// mission control are live (their model holds its last reply) when
// mission control dies by SIGKILL. The runs go on: they were started
// detached. Mission control started again in the same pane and home shows
// the four as running, then, once the model answers, as finished and to
// review; each transcript is whole, and there are exactly four runs.
func TestE2EKillMissionControlWithFourLiveRuns(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	done := "done"
	// The first reply writes a file; the second (the finish) waits for
	// Release, so the runs are surely live when mission control dies.
	srv := scripted.New(scripted.Script{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "write_file", Arguments: []byte(`{"path":"k.txt","content":"kept\n"}`)}}},
		{Finish: &done, Hold: true},
	}})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo := newTestRepo(t)
	// Whatever happens, no run outlives the test: the held replies are
	// let go (a run then finishes), and a run still alive is killed.
	t.Cleanup(func() {
		srv.Release()
		for slug, r := range records(t, home) {
			if pid, ok := r["host_pid"].(float64); ok {
				if live, _ := transcript.IsAlive(filepath.Join(home, "runs", slug)); live {
					_ = syscall.Kill(int(pid), syscall.SIGKILL)
				}
			}
		}
		for slug := range records(t, home) {
			waitFor(t, func() bool {
				live, err := transcript.IsAlive(filepath.Join(home, "runs", slug))
				return err == nil && !live
			})
		}
	})

	p := startTUI(t, 160, 45, []string{"DIRTYWORK_HOME=" + home, "TMPDIR=" + tmp},
		"tui", "--base-url", base, "--model", scripted.DefaultModel, "--repo", repo, "--sandbox", "none",
		"--notify", "none", "--max-parallel", "4")
	p.waitText("mission control", 30*time.Second)
	tasks := []string{"kill test one", "kill test two", "kill test three", "kill test four"}
	for i, task := range tasks {
		p.keys("L")
		p.waitText("Launch a run", 30*time.Second)
		p.typeText(task)
		p.keys("C-s")
		p.waitFor(fmt.Sprintf("launch %d and the form closed", i+1), 60*time.Second, func(s string) bool {
			r, _, q, ok := counts(s)
			return ok && r+q == i+1 && !strings.Contains(s, "Launch a run")
		})
	}
	p.waitFor("four runs running", 2*time.Minute, func(s string) bool {
		r, _, _, ok := counts(s)
		return ok && r == 4
	})
	// Live on disk too: each holds its liveness lock, with its first tool
	// call done and the model's answer to the second request pending.
	recs := records(t, home)
	if len(recs) != 4 {
		t.Fatalf("%d runs in the root, want 4", len(recs))
	}
	pids := map[string]int{}
	for slug, r := range recs {
		waitFor(t, func() bool { return secondRequestOut(filepath.Join(home, "runs", slug)) })
		live, err := transcript.IsAlive(filepath.Join(home, "runs", slug))
		pid, _ := r["host_pid"].(float64)
		if err != nil || !live || pid == 0 {
			t.Fatalf("run %s is not live before the kill: %v %v (pid %v)", slug, live, err, r["host_pid"])
		}
		pids[slug] = int(pid)
	}

	tui := p.paneProcess("tui")
	if tui == 0 {
		t.Fatal("no tui process in the pane")
	}
	if err := syscall.Kill(tui, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.waitText("[exited 137]", 30*time.Second)

	// The runs did not notice: every one is alive, in the same process.
	for slug, pid := range pids {
		live, err := transcript.IsAlive(filepath.Join(home, "runs", slug))
		if err != nil || !live || !alive(pid) {
			t.Fatalf("run %s (pid %d) died with mission control: %v %v", slug, pid, live, err)
		}
	}

	// Mission control again, in the same pane and home: the four are
	// running.
	p.tmux("respawn-pane", "-k", "-t", "e2e", filepath.Join(p.dir, "run.sh"))
	p.waitText("mission control", 30*time.Second)
	p.waitFor("the four runs shown running", 60*time.Second, func(s string) bool {
		r, rv, q, ok := counts(s)
		return ok && r == 4 && rv == 0 && q == 0
	})

	// The model answers: each run finishes in its own process, and the
	// screen follows.
	srv.Release()
	screen, _ := p.waitFor("four runs to review", 2*time.Minute, func(s string) bool {
		r, rv, q, ok := counts(s)
		return ok && r == 0 && rv == 4 && q == 0
	})
	for _, task := range tasks {
		if !strings.Contains(screen, task) {
			t.Errorf("%q is not in the list:\n%s", task, screen)
		}
	}

	recs = records(t, home)
	if len(recs) != 4 {
		t.Fatalf("%d runs in the root after the restart, want 4", len(recs))
	}
	seen := map[string]bool{}
	for slug, r := range recs {
		task, _ := r["task"].(string)
		if seen[task] {
			t.Errorf("two runs of %q", task)
		}
		seen[task] = true
		if r["status"] != "completed" || r["host_pid"] != float64(pids[slug]) {
			t.Errorf("run %s: status %v, pid %v (was %d)", slug, r["status"], r["host_pid"], pids[slug])
		}
		waitFor(t, func() bool { return !alive(pids[slug]) })
		lines, problems, err := transcript.ReadFile(filepath.Join(home, "runs", slug, transcript.TranscriptName))
		if err != nil || len(problems) > 0 || len(lines) == 0 {
			t.Fatalf("transcript of %s: %v %v", slug, err, problems)
		}
		var events []string
		for _, l := range lines {
			if l.Event != "model_request" && l.Event != "model_progress" {
				events = append(events, l.Event)
			}
		}
		got := strings.Join(events, ",")
		if want := "run_start,assistant,tool_result,assistant,tool_result,run_end"; got != want {
			t.Errorf("transcript of %s: %s, want %s", slug, got, want)
		}
		if b, err := os.ReadFile(filepath.Join(r["worktree"].(string), "k.txt")); err != nil || string(b) != "kept\n" {
			t.Errorf("the run's file in %v: %q %v", r["worktree"], b, err)
		}
	}
	for _, task := range tasks {
		if !seen[task] {
			t.Errorf("no run of %q", task)
		}
	}
	p.keys("q")
	p.waitText("[exited 0]", 20*time.Second)
	// The runs' worktrees go with the test's directory; git forgets them.
	if out, err := exec.Command("git", "-C", repo, "worktree", "prune").CombinedOutput(); err != nil {
		t.Fatalf("git worktree prune: %v\n%s", err, out)
	}
}
