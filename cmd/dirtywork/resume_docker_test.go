//go:build docker

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// dockerCLI runs the built dirtywork with args in this setting and returns
// the parsed stdout object (nil when none), stderr and the exit code.
func (d *dockerRun) dockerCLI(args ...string) (map[string]any, string, int) {
	d.t.Helper()
	cmd := exec.CommandContext(d.t.Context(), d.bin, args...)
	cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost())
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		d.t.Fatal(err)
	}
	if out.Len() == 0 {
		return nil, errOut.String(), cmd.ProcessState.ExitCode()
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out.String()), &payload); err != nil {
		d.t.Fatalf("stdout %q: %v\n%s", out.String(), err, errOut.String())
	}
	return payload, errOut.String(), cmd.ProcessState.ExitCode()
}

// cleanupRun removes what the run named slug left in the daemon when the
// test ends.
func (d *dockerRun) cleanupRun(slug string) {
	d.t.Cleanup(func() {
		for _, path := range []string{
			"/containers/dw-" + slug + "?force=1", "/containers/dw-" + slug + "-export?force=1",
			"/containers/dw-" + slug + "-measure?force=1",
			"/volumes/dw-" + slug + "-work?force=1", "/volumes/dw-" + slug + "-tools?force=1",
		} {
			code, _, _ := engineRequest(context.WithoutCancel(d.t.Context()), http.MethodDelete, path)
			if code == http.StatusNoContent && strings.HasSuffix(path, "-work?force=1") {
				releaseStore(d.home, "dw-"+slug+"-work") // a volume the test left, removed here
			}
		}
	})
}

func (d *dockerRun) runArgs(extra ...string) []string {
	return append([]string{
		"run", "--sandbox", "docker", "--image", dockerTestImage, "--repo", d.repo, "--base-url", d.base,
		"--model", scripted.DefaultModel, "--context-window", "32768",
	}, extra...)
}

func (d *dockerRun) resumeArgs(extra ...string) []string {
	return append([]string{"resume", "--base-url", d.base, "--context-window", "32768"}, extra...)
}

// bashResults are the bash tool results of a transcript, in order.
func bashResults(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, ev := range events(t, path) {
		if ev["event"] == "tool_result" && ev["tool"] == "bash" {
			out = append(out, ev["result"].(string))
		}
	}
	return out
}

// TestResumeInDocker: a docker run that stopped is resumed; the new
// container starts with the prior run's tree (its changes and deletions,
// as uncommitted changes against the base), the export brings everything
// back and the stash is gone. A resume whose export fails gets the prior
// work back in the worktree, and its volume is kept.
func TestResumeInDocker(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	// Every run adds a line to notes.txt; the first also deletes
	// README.md; the third (three lines) makes more files than its
	// limits allow.
	step := `cat notes.txt 2>/dev/null; echo round >> notes.txt; ` +
		`[ "$(wc -l < notes.txt)" -eq 1 ] && rm README.md; ` +
		`[ "$(wc -l < notes.txt)" -ge 3 ] && mkdir many && (cd many && touch $(seq 1 40)); ` +
		`git status --porcelain; true`
	d := newDockerRun(t, bin, func([]string) any {
		return map[string]any{"turns": []any{
			toolCall("bash", map[string]any{"command": step}),
			map[string]any{"finish": "noted"},
		}}
	})
	first, stderr, code := d.dockerCLI(d.runArgs("--max-turns", "1", "keep notes")...)
	if first == nil {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	slug1 := filepath.Base(first["run_dir"].(string))
	d.cleanupRun(slug1)
	if code != 1 || first["status"] != "max_turns" {
		t.Fatalf("first run: exit %d %v\n%s", code, first["status"], stderr)
	}
	wt := first["worktree"].(string)
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(wt, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(data)
	}
	if read("notes.txt") != "round\n" {
		t.Fatalf("first run's notes: %q", read("notes.txt"))
	}

	second, stderr, code := d.dockerCLI(d.resumeArgs(slug1)...)
	if second == nil {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	slug2 := filepath.Base(second["run_dir"].(string))
	d.cleanupRun(slug2)
	if code != 0 || second["status"] != "completed" || second["worktree"] != wt || second["resumed_from"] != slug1 {
		t.Fatalf("resume: exit %d %v\n%s", code, second, stderr)
	}
	seen := bashResults(t, second["transcript"].(string))
	if len(seen) == 0 || !strings.Contains(seen[0], "round\n") || !strings.Contains(seen[0], " D README.md") ||
		!strings.Contains(seen[0], "?? notes.txt") {
		t.Fatalf("the resumed container did not start from the prior tree:\n%v", seen)
	}
	if read("notes.txt") != "round\nround\n" || !strings.HasPrefix(read("README.md"), "<") || read("src/app.py") != "def main():\n    return 1\n" {
		t.Fatalf("after the resume: notes %q, README %q, app %q", read("notes.txt"), read("README.md"), read("src/app.py"))
	}
	files, _ := json.Marshal(second["files_changed"])
	if string(files) != `["README.md","notes.txt"]` {
		t.Fatalf("files_changed %s, want the whole change against the base", files)
	}
	if stashes, _ := filepath.Glob(wt + ".pre-resume-*"); len(stashes) != 0 {
		t.Fatalf("stash left after a done export: %v", stashes)
	}
	if leftBehind(t, slug2) {
		t.Fatal("the resume left its container or volume")
	}

	// The third run breaks its file limit: its export fails, the prior
	// work is back in the worktree, the volume is kept for runs export.
	third, stderr, code := d.dockerCLI(d.resumeArgs(slug2, "--feedback", "more notes", "--max-worktree-files", "30")...)
	if third == nil {
		t.Fatalf("third: exit %d\n%s", code, stderr)
	}
	slug3 := filepath.Base(third["run_dir"].(string))
	d.cleanupRun(slug3)
	if code != 1 {
		t.Fatalf("third: exit %d %v\n%s", code, third, stderr)
	}
	if read("notes.txt") != "round\nround\n" || !strings.HasPrefix(read("README.md"), "<") {
		t.Fatalf("after the failed export the prior work is not back: notes %q README %q\n%s", read("notes.txt"), read("README.md"), stderr)
	}
	if _, err := os.Stat(filepath.Join(wt, "many")); err == nil {
		t.Fatal("the failed export left part of its tree in the worktree")
	}
	if stashes, _ := filepath.Glob(wt + ".pre-resume-*"); len(stashes) != 0 {
		t.Fatalf("stash left after a failed export: %v", stashes)
	}
	if !exists(t, "/volumes/dw-"+slug3+"-work") {
		t.Fatal("the failed export's volume is gone")
	}
}
