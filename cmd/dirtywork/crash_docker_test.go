//go:build docker

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

func crashScript(slowBash bool) func([]string) any {
	bash := "printf 'written by bash\\n' > bravo.txt"
	if slowBash {
		bash += " && sleep 120"
	}
	return func([]string) any {
		return map[string]any{"turns": []any{
			toolCall("write_file", map[string]any{"path": "alpha.txt", "content": crashFiles["alpha.txt"]}),
			toolCall("bash", map[string]any{"command": bash}),
			toolCall("write_file", map[string]any{"path": "big.txt", "content": crashFiles["big.txt"]}),
			map[string]any{"finish": "three files"},
		}}
	}
}

// crashed is a dirtywork process stopped at a pause point.
type crashed struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	stderr strings.Builder
}

// startPaused starts dirtywork with args and waits until it announces
// point; nothing is timed, the announcement is the signal.
func (d *dockerRun) startPaused(point string, args ...string) *crashed {
	d.t.Helper()
	c := &crashed{cmd: exec.Command(d.bin, args...)}
	// A temporary directory of the test's own: what a process killed at
	// the point leaves there (the base pack it had not yet removed) goes
	// with the test.
	c.cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost(), pause.Env+"="+point, "TMPDIR="+d.t.TempDir())
	c.cmd.WaitDelay = 5 * time.Second
	c.cmd.Stdout = &c.stdout
	errPipe, err := c.cmd.StderrPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	announced := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		seen := false
		for sc.Scan() {
			c.stderr.WriteString(sc.Text() + "\n")
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
			_ = c.cmd.Wait()
			d.t.Fatalf("dirtywork %v ended without reaching %s:\n%s%s", args, point, c.stdout.String(), c.stderr.String())
		}
	case <-time.After(3 * time.Minute):
		d.t.Fatalf("dirtywork %v did not reach %s:\n%s", args, point, c.stderr.String())
	}
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
}

// onlySlug is the slug of the one run whose run dir was made after before.
func (d *dockerRun) newSlug(before map[string]bool) string {
	d.t.Helper()
	entries, _ := os.ReadDir(filepath.Join(d.home, "runs"))
	for _, e := range entries {
		if !before[e.Name()] {
			return e.Name()
		}
	}
	d.t.Fatal("no new run dir")
	return ""
}

func (d *dockerRun) runDirs() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(filepath.Join(d.home, "runs"))
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// inContainer reports whether /work/<name> exists in the container,
// through the Engine API's archive endpoint (read-only, works on a
// running container).
func inContainer(t *testing.T, container, name string) bool {
	t.Helper()
	code, _, err := engineRequest(t.Context(), http.MethodHead, "/containers/"+container+"/archive?path="+url.QueryEscape("/work/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return code == http.StatusOK
}

// labelled lists the names of the containers and volumes labelled for
// slug.
func labelled(t *testing.T, slug string) []string {
	t.Helper()
	filter := url.QueryEscape(`{"label":["dirtywork.run=` + slug + `"]}`)
	var names []string
	code, body, err := engineRequest(t.Context(), http.MethodGet, "/containers/json?all=1&filters="+filter)
	if err != nil || code != http.StatusOK {
		t.Fatalf("list containers: %d %v %s", code, err, body)
	}
	var cs []struct{ Names []string }
	if err := json.Unmarshal(body, &cs); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		names = append(names, c.Names...)
	}
	code, body, err = engineRequest(t.Context(), http.MethodGet, "/volumes?filters="+filter)
	if err != nil || code != http.StatusOK {
		t.Fatalf("list volumes: %d %v %s", code, err, body)
	}
	var vs struct{ Volumes []struct{ Name string } }
	if err := json.Unmarshal(body, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Volumes {
		names = append(names, v.Name)
	}
	return names
}

// TestCrashAtEveryPoint SIGKILLs dirtywork at each named point of a docker
// run's life and of the review commands, then checks that the container
// stops within 5 s, `runs list` reports the run not alive, `runs
// reconcile` (and, for a run that ended and was being reviewed, `runs
// clean --force`, the operator's next step) leaves no container, volume,
// worktree or branch except the parked ref, and that the parked ref holds
// every file the worker wrote, also when the only copy was in the volume.
func TestCrashAtEveryPoint(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	all := []string{"alpha.txt", "bravo.txt", "big.txt"}
	for _, tc := range []struct {
		point string
		// written are the files the worker wrote when the process stops.
		written []string
		// review: the run ends first; args are the review command killed.
		review []string
		resume bool
	}{
		{point: pause.Lane},
		{point: pause.Volume},
		{point: pause.Container},
		{point: pause.MidWrite, written: []string{"alpha.txt"}},
		{point: pause.MidBash, written: []string{"alpha.txt", "bravo.txt"}},
		{point: pause.MidExport, written: all},
		{point: pause.Stash, written: all, resume: true},
		{point: pause.RunJSON, written: all},
		{point: pause.Verdict, written: all, review: []string{"runs", "verdict", "SLUG", "cleanup", "--note", "crash"}},
		{point: pause.Park, written: all, review: []string{"runs", "clean", "SLUG", "--force"}},
		{point: pause.Merge, written: all, review: []string{"runs", "merge", "SLUG"}},
	} {
		t.Run(tc.point, func(t *testing.T) {
			d := newDockerRun(t, bin, crashScript(tc.point == pause.MidBash))
			runArgs := d.runArgs("crash test")
			var slug string
			var proc *crashed
			switch {
			case tc.review != nil:
				payload, stderr, code := d.dockerCLI(runArgs...)
				if code != 0 {
					t.Fatalf("the run to review: exit %d\n%s", code, stderr)
				}
				slug = filepath.Base(payload["run_dir"].(string))
				d.cleanupRun(slug)
				if tc.point == pause.Merge {
					if out, stderr, code := d.cliText("runs", "accept", slug); code != 0 {
						t.Fatalf("accept: exit %d\n%s%s", code, out, stderr)
					}
				}
				args := append([]string(nil), tc.review...)
				for i, a := range args {
					if a == "SLUG" {
						args[i] = slug
					}
				}
				proc = d.startPaused(tc.point, args...)
			case tc.resume:
				first, stderr, _ := d.dockerCLI(d.runArgs("--max-turns", "1", "crash test")...)
				if first == nil || first["status"] != "max_turns" {
					t.Fatalf("the run to resume: %v\n%s", first, stderr)
				}
				d.cleanupRun(filepath.Base(first["run_dir"].(string)))
				before := d.runDirs()
				proc = d.startPaused(tc.point, d.resumeArgs(filepath.Base(first["run_dir"].(string)))...)
				slug = d.newSlug(before)
				d.cleanupRun(slug)
			default:
				before := d.runDirs()
				proc = d.startPaused(tc.point, runArgs...)
				slug = d.newSlug(before)
				d.cleanupRun(slug)
			}
			container := "dw-" + slug
			if tc.point == pause.MidBash {
				// The command is on its way to the tool server: wait for it
				// to have written its file (a condition, not a delay).
				deadline := time.Now().Add(30 * time.Second)
				for !inContainer(t, container, "bravo.txt") {
					if time.Now().After(deadline) {
						t.Fatal("the bash command never wrote its file")
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			proc.kill(t)
			killed := time.Now()

			// The container stops within 5 s.
			for running(t, "/containers/"+container+"/json") {
				if time.Since(killed) > 5*time.Second {
					t.Fatalf("the container still runs %s after the kill", time.Since(killed))
				}
				time.Sleep(50 * time.Millisecond)
			}
			// runs list: not alive.
			out, errOut, code := d.cliText("runs", "list", "--json")
			var rows []map[string]any
			if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
				t.Fatalf("runs list --json: exit %d %q %s", code, out, errOut)
			}
			for _, r := range rows {
				if r["slug"] == slug && r["alive"] != false {
					t.Fatalf("runs list says %s is alive after the kill: %v", slug, r)
				}
			}
			rec, err := transcript.ReadRecord(filepath.Join(d.home, "runs", slug))
			if err != nil {
				t.Fatalf("run.json after the kill: %v", err)
			}
			wt, _ := rec.String("worktree")
			branch, _ := rec.String("branch")

			out, errOut, code = d.cliText("runs", "reconcile", "--repo", d.repo)
			t.Logf("runs reconcile:\n%s%s", out, errOut)
			if code != 0 {
				t.Fatalf("runs reconcile: exit %d", code)
			}
			if tc.review != nil {
				// The run had ended: its worktree is the operator's to
				// review, and reconcile leaves it. Cleaning it is the next
				// step, and loses nothing either.
				if out, errOut, code := d.cliText("runs", "clean", slug, "--force"); code != 0 {
					t.Fatalf("runs clean --force: exit %d\n%s\n%s", code, out, errOut)
				}
			}
			if left := labelled(t, slug); len(left) != 0 {
				t.Errorf("containers or volumes left: %v", left)
			}
			if wt != "" {
				if _, err := os.Lstat(wt); err == nil {
					t.Errorf("worktree %s left", wt)
				}
				if stashes, _ := filepath.Glob(wt + ".pre-resume-*"); len(stashes) != 0 {
					t.Errorf("stash left: %v", stashes)
				}
			}
			if wts := gitOut(t, d.repo, "worktree", "list", "--porcelain"); strings.Contains(wts, ".worktrees/") {
				t.Errorf("git still lists a worktree:\n%s", wts)
			}
			if refs := gitOut(t, d.repo, "for-each-ref", "--format=%(refname)", "refs/heads/dirtywork/"); refs != "" {
				t.Errorf("branches left: %s (run's is %s)", refs, branch)
			}
			if len(tc.written) == 0 {
				return
			}
			// No work lost: the parked ref holds every file written.
			parked := "refs/dirtywork/parked/" + slug
			if tc.point == pause.Merge {
				// The merge did not move its branch: the work is parked,
				// not merged.
				if out := gitOut(t, d.repo, "log", "--format=%s", "main"); strings.Contains(out, "crash test") {
					t.Errorf("main moved although the merge was killed before its branch moved:\n%s", out)
				}
			}
			for _, name := range tc.written {
				cmd := exec.CommandContext(t.Context(), "git", "-C", d.repo, "show", parked+":"+name)
				got, err := cmd.Output()
				if err != nil || string(got) != crashFiles[name] {
					t.Errorf("git show %s:%s = %.60q (%v); want the worker's file", parked, name, got, err)
				}
			}
		})
	}
}

// cliText runs the built dirtywork and returns its stdout, stderr and exit
// code.
func (d *dockerRun) cliText(args ...string) (string, string, int) {
	d.t.Helper()
	cmd := exec.CommandContext(d.t.Context(), d.bin, args...)
	cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost())
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}
