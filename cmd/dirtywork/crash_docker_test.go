//go:build docker

package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
)

// crashScript is crashTurns for a docker run's scripted server; a slow
// bash sleeps after writing its file.
func crashScript(slowBash bool) func([]string) any {
	sleep := ""
	if slowBash {
		sleep = "sleep 120"
	}
	return func([]string) any { return crashTurns(sleep) }
}

// startPaused starts dirtywork with args and TMPDIR tmp and waits until
// it announces point.
func (d *dockerRun) startPaused(tmp, point string, args ...string) *crashed {
	d.t.Helper()
	cmd := exec.Command(d.bin, args...)
	// A temporary directory of the test's own: what a process killed at
	// the point leaves there (the base pack it had not yet removed) is
	// found there, and goes with the test.
	cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost(), "TMPDIR="+tmp)
	return startPausedCmd(d.t, cmd, point)
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
		// ended: run.json says the run ended when the process dies.
		ended bool
	}{
		{point: pause.Lane},
		{point: pause.Volume},
		{point: pause.Container},
		{point: pause.Reply},
		{point: pause.MidWrite, written: []string{"alpha.txt"}},
		{point: pause.ToolDone, written: []string{"alpha.txt"}},
		{point: pause.MidBash, written: []string{"alpha.txt", "bravo.txt"}},
		{point: pause.Verify, written: all},
		{point: pause.Finalize, written: all},
		{point: pause.MidExport, written: all},
		{point: pause.Stash, written: all, resume: true},
		{point: pause.RunJSON, written: all},
		{point: pause.Output, written: all, ended: true},
		{point: pause.Verdict, written: all, review: []string{"runs", "verdict", "SLUG", "cleanup", "--note", "crash"}},
		{point: pause.Park, written: all, review: []string{"runs", "clean", "SLUG", "--force"}},
		{point: pause.Merge, written: all, review: []string{"runs", "merge", "SLUG"}},
	} {
		t.Run(tc.point, func(t *testing.T) {
			d := newDockerRun(t, bin, crashScript(tc.point == pause.MidBash))
			tmp := t.TempDir()
			runArgs := d.runArgs("crash test")
			if tc.point == pause.Verify {
				runArgs = d.runArgs("--verify", "test -f alpha.txt", "crash test")
			}
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
				proc = d.startPaused(tmp, tc.point, args...)
			case tc.resume:
				first, stderr, _ := d.dockerCLI(d.runArgs("--max-turns", "1", "crash test")...)
				if first == nil || first["status"] != "max_turns" {
					t.Fatalf("the run to resume: %v\n%s", first, stderr)
				}
				d.cleanupRun(filepath.Base(first["run_dir"].(string)))
				before := d.runDirs()
				proc = d.startPaused(tmp, tc.point, d.resumeArgs(filepath.Base(first["run_dir"].(string)))...)
				slug = d.newSlug(before)
				d.cleanupRun(slug)
			default:
				before := d.runDirs()
				proc = d.startPaused(tmp, tc.point, runArgs...)
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
			status, _ := rec.String("status")
			wantStatus := "running"
			if tc.review != nil || tc.ended {
				wantStatus = "completed"
			}
			if status != wantStatus {
				t.Errorf("run.json status %q, want %q", status, wantStatus)
			}
			for _, r := range rows {
				if r["slug"] == slug && r["status"] != wantStatus {
					t.Errorf("runs list shows %s as %v, want %s", slug, r["status"], wantStatus)
				}
			}
			noTranscript := tc.point == pause.Lane || tc.point == pause.Volume || tc.point == pause.Container
			checkCrashTranscript(t, filepath.Join(d.home, "runs", slug), tc.point, noTranscript, len(tc.written))
			wt, _ := rec.String("worktree")
			branch, _ := rec.String("branch")

			out, errOut, code = d.cliTextEnv([]string{"TMPDIR=" + tmp}, "runs", "reconcile", "--repo", d.repo)
			t.Logf("runs reconcile:\n%s%s", out, errOut)
			if code != 0 {
				t.Fatalf("runs reconcile: exit %d", code)
			}
			if tc.review != nil || tc.ended {
				// The run had ended: its worktree is the operator's to
				// review, and reconcile leaves it. Cleaning it is the next
				// step, and loses nothing either.
				if out, errOut, code := d.cliText("runs", "clean", slug, "--force", "--keep-transcript"); code != 0 {
					t.Fatalf("runs clean --force: exit %d\n%s\n%s", code, out, errOut)
				}
			}
			if left := labelled(t, slug); len(left) != 0 {
				t.Errorf("containers or volumes left: %v", left)
			}
			// Reconcile reaped what the killed process left in its
			// temporary directory (a base pack, before the upload).
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
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
			checkResumeRefused(t, slug, d.runDirs, func() (string, string, int) {
				return d.cliText(d.resumeArgs(slug)...)
			})
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
	return d.cliTextEnv(nil, args...)
}

// cliTextEnv is cliText with env added to the environment.
func (d *dockerRun) cliTextEnv(env []string, args ...string) (string, string, int) {
	d.t.Helper()
	cmd := exec.CommandContext(d.t.Context(), d.bin, args...)
	cmd.Env = append(append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost()), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}
