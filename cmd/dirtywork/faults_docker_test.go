//go:build docker && linux

package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/transcript"
)

// dockerFaultRun runs d's docker run against the engine at host with the
// extra flags, as faultWait does.
func (d *dockerRun) dockerFaultRun(host string, extra ...string) (map[string]any, string, int) {
	d.t.Helper()
	args := append([]string{
		"run", "--sandbox", "docker", "--image", dockerTestImage, "--repo", d.repo, "--base-url", d.base,
		"--model", scripted.DefaultModel, "--context-window", "32768",
	}, extra...)
	cmd := exec.Command(d.bin, append(args, "do the scripted task")...)
	cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+host)
	cmd.WaitDelay = 5 * time.Second
	return faultWait(d.t, cmd)
}

// workTurns are two turns that change the worktree: the work a fault must
// not lose (workBeforeFault).
var workTurns = []any{
	toolCall("write_file", map[string]any{"path": "before_fault.txt", "content": "written before the fault\n"}),
	toolCall("edit_file", map[string]any{"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}),
}

// toolResultEvents are the transcript's tool_result events, typed.
func toolResultEvents(t *testing.T, path string) []transcript.ToolResult {
	t.Helper()
	lines, _, err := transcript.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []transcript.ToolResult
	for _, l := range lines {
		if ev, err := l.Decode(); err == nil {
			if tr, ok := ev.(transcript.ToolResult); ok {
				out = append(out, tr)
			}
		}
	}
	return out
}

// TestFaultContainerOOMKilled: a bash call allocates past the container's
// memory limit (--memory 128m), twice. The kernel's OOM killer ends the
// command, which the call reports to the model as "exit code: -1" (killed
// by a signal), and the run goes on to complete, with the work from before
// and after the kills exported. Each kill also replaces the container (a
// sandbox_reset event, reason oom, the work volume kept) and the result
// says so: the tool server reads its cgroup's OOM count before and after
// the command, so the reply knows of the kill whenever the daemon's oom
// event comes.
func TestFaultContainerOOMKilled(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	const hog = `python3 -c "x = b'x' * (1 << 30); print(len(x))"`
	d := newDockerRun(t, bin, func([]string) any {
		return map[string]any{"turns": append(append([]any{}, workTurns...),
			toolCall("bash", map[string]any{"command": hog}),
			// The container after the kill takes writes, and the kill is
			// the last tool result run.json records.
			map[string]any{"tool_calls": []any{
				map[string]any{"name": "write_file", "arguments": map[string]any{"path": "after_fault.txt", "content": "written after the kill\n"}},
				map[string]any{"name": "bash", "arguments": map[string]any{"command": hog}},
			}},
			map[string]any{"finish": "done despite the kill"},
		)}
	})
	d.removeLeftovers()
	payload, stderr, code := d.dockerFaultRun(dockerHost(), "--memory", "128m")
	files := map[string]string{"after_fault.txt": "written after the kill\n"}
	for k, v := range workBeforeFault {
		files[k] = v
	}
	checkFault(t, []string{"DIRTYWORK_HOME=" + d.home}, payload, stderr, code, faultWant{
		status: "completed", code: 0, finalContains: "done despite the kill", files: files,
	})
	const notice = "[the sandbox was reset after this command (oom); files in /work are kept"
	kills, noted := 0, 0
	for _, tr := range toolResultEvents(t, payload["transcript"].(string)) {
		if tr.Tool != "bash" {
			continue
		}
		kills++
		if !strings.HasPrefix(tr.Result, "exit code: -1\n") {
			t.Errorf("an OOM-killed call's result: %q", tr.Result)
		}
		if strings.Contains(tr.Result, notice) {
			noted++
		}
	}
	if kills != 2 {
		t.Errorf("%d bash results, want the 2 killed calls", kills)
	}
	lines, _, err := transcript.ReadFile(payload["transcript"].(string))
	if err != nil {
		t.Fatal(err)
	}
	resets := 0
	for _, l := range lines {
		if ev, err := l.Decode(); err == nil {
			if r, ok := ev.(transcript.SandboxReset); ok {
				if r.Reason != "oom" {
					t.Errorf("a sandbox_reset for %q", r.Reason)
				}
				resets++
			}
		}
	}
	if noted != kills || resets != kills {
		t.Errorf("%d sandbox_reset events and %d results saying the sandbox was reset, want one of each for each of the %d kills", resets, noted, kills)
	}
	rec, err := transcript.ReadRun(payload["run_dir"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if ltr := rec.Record.LastToolResult; ltr == nil || ltr.Tool != "bash" || !strings.HasPrefix(ltr.Result, "exit code: -1\n") {
		t.Errorf("run.json's last tool result: %+v", ltr)
	}
	// The model was told: the request after the last kill carries it.
	chats := d.srv.ChatRequests()
	msgs := chats[len(chats)-1].Messages
	if m := msgs[len(msgs)-1]; m.Role != "tool" || m.Content == nil || !strings.HasPrefix(*m.Content, "exit code: -1\n") {
		t.Errorf("the model was not told of the kill: %+v", m)
	}
	if leftBehind(t, filepath.Base(payload["run_dir"].(string))) {
		t.Error("the run left its container or work volume")
	}
}

// removeRunObjects removes, when the test ends and before the engine at
// host stops, whatever the run slug() names left on it: containers,
// volumes and a volume's file system under the home.
func (d *dockerRun) removeRunObjectsAt(host string) {
	d.t.Cleanup(func() {
		slug := d.slug()
		if slug == "" {
			return
		}
		ctx := context.WithoutCancel(d.t.Context())
		for _, path := range []string{
			"/containers/dw-" + slug + "?force=1", "/containers/dw-" + slug + "-export?force=1",
			"/containers/dw-" + slug + "-measure?force=1", "/containers/dw-" + slug + "-reap?force=1",
			"/volumes/dw-" + slug + "-work?force=1", "/volumes/dw-" + slug + "-tools?force=1",
		} {
			_, _, _ = engineRequestAt(ctx, host, http.MethodDelete, path)
		}
		releaseStore(d.home, "dw-"+slug+"-work")
	})
}

// TestFaultDockerDaemonRestarts: the docker daemon (a private one) is
// stopped (SIGTERM) and started again on the same data root and socket
// while the run waits on the model, after two turns that changed the work
// volume. Stopping the daemon stops the run's container, so the next tool
// call finds its tool server gone: the workspace replaces the container
// (a sandbox_reset event, "container died"), the work volume with the
// work so far is kept, the call tells the model so, and the run recovers:
// it completes and exports the work from before and after the restart.
func TestFaultDockerDaemonRestarts(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	eng := startPrivateEngine(t)
	d := newDockerRun(t, bin, func([]string) any {
		return map[string]any{"turns": append(append([]any{}, workTurns...),
			// Held until the daemon has restarted.
			map[string]any{"hold": true, "tool_calls": []any{
				map[string]any{"name": "bash", "arguments": map[string]any{"command": "cat before_fault.txt"}},
			}},
			toolCall("write_file", map[string]any{"path": "after_fault.txt", "content": "written after the restart\n"}),
			map[string]any{"finish": "done across a daemon restart"},
		)}
	})
	d.removeRunObjectsAt(eng.host)
	t.Cleanup(d.srv.Release)
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		if d.srv.AwaitArrivals(t.Context(), 3) != nil {
			return
		}
		eng.restart()
		d.srv.Release()
	}()
	payload, stderr, code := d.dockerFaultRun(eng.host)
	<-restarted
	const notice = "the sandbox was reset (container died)"
	told := false
	for _, tr := range toolResultEvents(t, payload["transcript"].(string)) {
		told = told || (tr.Tool == "bash" && strings.Contains(tr.Result, notice))
	}
	if !told {
		t.Errorf("no tool result tells of the reset\nstderr:\n%s", stderr)
	}
	lines, _, err := transcript.ReadFile(payload["transcript"].(string))
	if err != nil {
		t.Fatal(err)
	}
	resets := 0
	for _, l := range lines {
		if l.Event == transcript.EventSandboxReset {
			resets++
		}
	}
	if resets != 1 {
		t.Errorf("%d sandbox_reset events, want 1", resets)
	}
	files := map[string]string{"after_fault.txt": "written after the restart\n"}
	for k, v := range workBeforeFault {
		files[k] = v
	}
	checkFault(t, []string{"DIRTYWORK_HOME=" + d.home}, payload, stderr, code, faultWant{
		status: "completed", code: 0, finalContains: "done across a daemon restart", files: files,
	})
	slug := filepath.Base(payload["run_dir"].(string))
	for _, path := range []string{"/containers/dw-" + slug + "/json", "/volumes/dw-" + slug + "-work"} {
		if code, _, err := engineRequestAt(t.Context(), eng.host, http.MethodGet, path); err != nil || code != http.StatusNotFound {
			t.Errorf("GET %s on the restarted engine: HTTP %d %v: the run left it", path, code, err)
		}
	}
}
