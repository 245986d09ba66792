//go:build docker

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// TestRunsExport: a docker run whose export fails (its tree is over the
// export's file cap) keeps its volume and leaves an empty worktree;
// `runs export` with a larger cap then brings the work back, updates
// run.json (export_failed becomes completed) and removes the volume. A
// second export is refused: the volume is gone and the worktree full.
func TestRunsExport(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	d := newDockerRun(t, bin, func([]string) any {
		return map[string]any{"turns": []any{
			toolCall("bash", map[string]any{"command": "mkdir many && cd many && touch $(seq 1 30)"}),
			toolCall("edit_file", map[string]any{"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}),
			map[string]any{"finish": "done"},
		}}
	})
	d.removeLeftovers()
	var out, errOut strings.Builder
	cmd := d.command(t.Context(), "make many files")
	cmd.Args = append(cmd.Args[:len(cmd.Args)-1], "--max-worktree-files", "20", cmd.Args[len(cmd.Args)-1])
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out.String()), &payload); err != nil {
		t.Fatalf("stdout %q: %v\n%s", out.String(), err, errOut.String())
	}
	if payload["status"] != "budget_exceeded" && payload["status"] != "export_failed" {
		t.Fatalf("status %v, want the cap to stop the run or its export\n%s", payload["status"], errOut.String())
	}
	slug := d.slug()
	runDir := filepath.Join(d.home, "runs", slug)
	rec, err := transcript.ReadRecord(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := rec["export_status"].(string); !strings.HasPrefix(s, "export_failed") {
		t.Fatalf("export_status %v, want a failed export", rec["export_status"])
	}
	worktree := payload["worktree"].(string)
	if names := dirNames(t, worktree); len(names) != 1 || names[0] != ".git" {
		t.Fatalf("worktree after the failed export: %q", names)
	}
	if code, _, _ := engineRequest(t.Context(), http.MethodGet, "/volumes/dw-"+slug+"-work"); code != http.StatusOK {
		t.Fatalf("the volume was not kept: %d", code)
	}

	export := func(args ...string) (int, string, string) {
		c := exec.CommandContext(t.Context(), bin, append([]string{"runs", "export"}, args...)...)
		c.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost())
		var o, e strings.Builder
		c.Stdout, c.Stderr = &o, &e
		err := c.Run()
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return c.ProcessState.ExitCode(), o.String(), e.String()
	}
	if code, _, stderr := export("no-such-run"); code != 2 || !strings.Contains(stderr, "no-such-run") {
		t.Errorf("unknown slug: exit %d, %q", code, stderr)
	}
	code, stdout, stderr := export(slug, "--max-worktree-files", "1000")
	if code != 0 || !strings.HasPrefix(stdout, "exported '"+slug+"' into "+worktree) {
		t.Fatalf("runs export: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "src/app.py") {
		t.Errorf("stdout without the diff stat: %q", stdout)
	}
	app, err := os.ReadFile(filepath.Join(worktree, "src", "app.py"))
	if err != nil || !strings.Contains(string(app), "return 2") {
		t.Errorf("app.py after the export: %q %v", app, err)
	}
	if n := len(dirNames(t, filepath.Join(worktree, "many"))); n != 30 {
		t.Errorf("%d files in many/, want 30", n)
	}
	if st := gitOut(t, worktree, "status", "--porcelain"); !strings.Contains(st, "M src/app.py") || !strings.Contains(st, "?? many/") {
		t.Errorf("git status in the worktree: %q (the index must be the base's)", st)
	}
	rec, err = transcript.ReadRecord(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if rec["export_status"] != "ok" || rec["worktree_files"] == nil {
		t.Errorf("run.json after the export: export_status %v, worktree_files %v", rec["export_status"], rec["worktree_files"])
	}
	if want := payload["status"]; want == "export_failed" && rec["status"] != "completed" {
		t.Errorf("status %v, want export_failed to become completed", rec["status"])
	} else if want == "budget_exceeded" && rec["status"] != "budget_exceeded" {
		t.Errorf("status %v, want budget_exceeded kept", rec["status"])
	}
	patch, err := os.ReadFile(filepath.Join(runDir, "diff.patch"))
	if err != nil || !strings.Contains(string(patch), "+    return 2") {
		t.Errorf("diff.patch: %q %v", patch, err)
	}
	if code, _, _ := engineRequest(t.Context(), http.MethodGet, "/volumes/dw-"+slug+"-work"); code != http.StatusNotFound {
		t.Errorf("the volume is still there after the export: %d", code)
	}
	if code, _, _ := engineRequest(t.Context(), http.MethodGet, "/containers/dw-"+slug+"-export/json"); code != http.StatusNotFound {
		t.Errorf("the export container is still there: %d", code)
	}
	if code, _, stderr := export(slug); code != 2 || !strings.Contains(stderr, "not empty") {
		t.Errorf("a second export: exit %d, %q; want the full worktree refused", code, stderr)
	}
}

// dirNames lists dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestRunsExportAfterSIGKILL: a docker run whose process is SIGKILLed in
// the middle of a command leaves its volume and a lane holding the base
// tree (its baseline filled it); `runs export` takes that lane and brings
// every file of the worker's back.
func TestRunsExportAfterSIGKILL(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	d := newDockerRun(t, bin, func([]string) any {
		return map[string]any{"turns": []any{
			toolCall("bash", map[string]any{"command": "mkdir -p out/deep && for i in $(seq 1 50); do echo $i > out/f$i; done && echo deep > out/deep/x && rm README.md && " +
				"mkdir hidden && printf '*\\n' > hidden/.gitignore && echo 'x = 1' > hidden/mod.py"}),
			toolCall("write_file", map[string]any{"path": "notes.md", "content": "written by a tool\n"}),
			toolCall("edit_file", map[string]any{"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}),
			toolCall("bash", map[string]any{"command": "sleep 600"}),
			map[string]any{"finish": "done"},
		}}
	})
	d.removeLeftovers()
	cmd := d.command(t.Context(), "work, then hang")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Mid-bash: the model asked for the sleep, and the command runs in
	// the worker's container.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if slug := d.slug(); slug != "" && containerRuns(t, "dw-"+slug, "sleep 600") {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the run never reached its last command")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	slug := d.slug()
	runDir := filepath.Join(d.home, "runs", slug)
	rec, err := transcript.ReadRecord(runDir)
	if err != nil {
		t.Fatal(err)
	}
	worktree, _ := rec["worktree"].(string)
	if b, err := os.ReadFile(filepath.Join(worktree, "README.md")); err != nil || string(b) != "# demo\n" {
		t.Fatalf("the lane does not hold the base tree: README.md %q, %v", b, err)
	}
	// Where the kernel held the volume's size, its file system outlived
	// the process: the image, on its loop device, holds the tree.
	stored := sizeLimitKind(t, runDir) == "filesystem"
	if left := storesUnder(d.home); stored && len(left) != 3 {
		t.Errorf("the killed run's file system: %q, want its image, its mount and its loop device", left)
	}
	t.Logf("size limit: filesystem %v", stored)
	c := exec.CommandContext(t.Context(), bin, "runs", "export", slug, "--keep-volume")
	c.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost())
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("runs export: %v\n%s", err, out)
	}
	for name, want := range map[string]string{"out/f1": "1\n", "out/f50": "50\n", "out/deep/x": "deep\n", "notes.md": "written by a tool\n"} {
		if b, err := os.ReadFile(filepath.Join(worktree, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	// The finalize's seal never ran: the export seals the lane instead,
	// taking the worker's ignored files out and listing them.
	if _, err := os.Lstat(filepath.Join(worktree, "hidden", "mod.py")); !os.IsNotExist(err) {
		t.Errorf("the worker's ignored file reached the lane: %v", err)
	}
	if after, err := transcript.ReadRecord(runDir); err != nil || !strings.Contains(fmt.Sprint(after["ignored_changes"]), "hidden/mod.py") {
		t.Errorf("ignored_changes %v (%v) lacks hidden/mod.py", after["ignored_changes"], err)
	}
	if app, err := os.ReadFile(filepath.Join(worktree, "src", "app.py")); err != nil || !strings.Contains(string(app), "return 2") {
		t.Errorf("app.py: %q %v", app, err)
	}
	if _, err := os.Lstat(filepath.Join(worktree, "README.md")); !os.IsNotExist(err) {
		t.Errorf("README.md, which the worker removed, is back: %v", err)
	}
	rec, err = transcript.ReadRecord(runDir)
	if err != nil || rec["export_status"] != "ok" {
		t.Errorf("run.json after the export: %v, %v", rec["export_status"], err)
	}
	// Kept, the volume keeps its file system; cleaning the run removes
	// both (the work parked first).
	if left := storesUnder(d.home); stored && len(left) != 3 {
		t.Errorf("the kept volume's file system: %q", left)
	}
	c = exec.CommandContext(t.Context(), bin, "runs", "clean", slug, "--force")
	c.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost())
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("runs clean --force: %v\n%s", err, out)
	}
	if left := storesUnder(d.home); len(left) != 0 {
		t.Errorf("after runs clean: %q", left)
	}
	if left := labelled(t, slug); len(left) != 0 {
		t.Errorf("after runs clean: %q", left)
	}
}

// TestRunsCleanForceSalvagesAnUnexportableVolume: a run whose export
// failed (its tree past its file cap) keeps its volume; a member the
// export refuses whatever the caps (a 3 GB sparse file, past the export's
// default byte cap, put there as root) makes the volume unexportable.
// `runs clean` without --force keeps it, and with --force parks what the
// export would write of it on its own, names what it could not, and
// removes the volume and its file system.
func TestRunsCleanForceSalvagesAnUnexportableVolume(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	d := newDockerRun(t, bin, func([]string) any {
		return map[string]any{"turns": []any{
			toolCall("bash", map[string]any{"command": "echo kept > kept.txt && mkdir -p deep/er && echo deeper > deep/er/x"}),
			map[string]any{"finish": "done"},
		}}
	})
	d.removeLeftovers()
	payload, stderr, _ := d.dockerCLI(d.runArgs("--max-worktree-files", "5", "leave a tree the export refuses")...)
	if payload == nil {
		t.Fatalf("no result:\n%s", stderr)
	}
	slug := filepath.Base(payload["run_dir"].(string))
	rec, err := transcript.ReadRecord(payload["run_dir"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := rec["export_status"].(string); !strings.HasPrefix(s, "export_failed: archive exceeds 5 files") {
		t.Fatalf("export_status %q, want the file cap's refusal", s)
	}
	// Not --rm: the daemon removes such a container after the CLI returns,
	// and until then it holds the volume. docker rm removes it at once.
	helper := "dw-" + slug + "-sparse"
	sparse := exec.CommandContext(t.Context(), "docker", "run", "--name", helper, "--network", "none", "--user", "0:0",
		"--mount", "type=volume,src=dw-"+slug+"-work,dst=/work", "--entrypoint", "/usr/bin/truncate", dockerTestImage, "-s", "3G", "/work/sparse")
	sparse.Env = append(os.Environ(), "DOCKER_HOST="+dockerHost())
	sparseOut, err := sparse.CombinedOutput()
	rm := exec.Command("docker", "rm", "-f", helper)
	rm.Env = sparse.Env
	if rmOut, rmErr := rm.CombinedOutput(); rmErr != nil {
		t.Fatalf("remove the helper container: %v\n%s", rmErr, rmOut)
	}
	if err != nil {
		t.Fatalf("make the volume unexportable: %v\n%s", err, sparseOut)
	}
	out, errOut, code := d.cliText("runs", "clean", slug)
	if code != 1 || !strings.Contains(out, "skip-volume: dw-"+slug+"-work") || !strings.Contains(out, "--force") {
		t.Fatalf("runs clean: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := engineRequest(t.Context(), http.MethodGet, "/volumes/dw-"+slug+"-work"); code != http.StatusOK {
		t.Fatalf("the volume went without --force: %d", code)
	}
	out, errOut, code = d.cliText("runs", "clean", slug, "--force")
	t.Logf("runs clean --force:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("runs clean --force: exit %d", code)
	}
	for _, want := range []string{"salvaged-volume: dw-" + slug + "-work", "not-parked: sparse: archive exceeds", "removed-volume: dw-" + slug + "-work", "parked: refs/dirtywork/parked/" + slug} {
		if !strings.Contains(out, want) {
			t.Errorf("runs clean --force says nothing of %q", want)
		}
	}
	parked := "refs/dirtywork/parked/" + slug
	for name, want := range map[string]string{"kept.txt": "kept", "deep/er/x": "deeper", "README.md": "# demo"} {
		if got := gitOut(t, d.repo, "show", parked+":"+name); got != want {
			t.Errorf("parked %s = %q, want %q", name, got, want)
		}
	}
	if got := gitOut(t, d.repo, "ls-tree", "--name-only", parked, "sparse"); got != "" {
		t.Errorf("the refused member was parked: %q", got)
	}
	if left := labelled(t, slug); len(left) != 0 {
		t.Errorf("left after runs clean --force: %q", left)
	}
	if left := storesUnder(d.home); len(left) != 0 {
		t.Errorf("volume file systems left: %q", left)
	}
}

// containerRuns reports whether a process of the container runs a command
// line holding args (false while the container does not exist).
func containerRuns(t *testing.T, container, args string) bool {
	t.Helper()
	code, body, err := engineRequest(t.Context(), http.MethodGet, "/containers/"+container+"/top")
	if err != nil {
		t.Fatalf("top %s: %v", container, err)
	}
	if code != http.StatusOK {
		return false // not there yet, or not running
	}
	var top struct {
		Titles    []string
		Processes [][]string
	}
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("top %s: %v: %s", container, err, body)
	}
	for _, p := range top.Processes {
		if len(p) > 0 && strings.Contains(p[len(p)-1], args) {
			return true
		}
	}
	return false
}
