package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// git runs real git in dir (isolated by TestMain) and returns trimmed
// stdout, failing the test on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// newTestRepo makes a repository with one commit and returns its resolved
// path.
func newTestRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	git(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	writeTestFile(t, filepath.Join(dir, "README.md"), "hello\n")
	git(t, dir, "add", "README.md")
	git(t, dir, "commit", "-q", "-m", "initial")
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return resolved
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// openedLane is the JSON `lane open` prints.
type openedLane struct {
	ID         string `json:"id"`
	Worktree   string `json:"worktree"`
	Branch     string `json:"branch"`
	BaseCommit string `json:"base_commit"`
}

// closedLane is the JSON `lane close` prints.
type closedLane struct {
	ID       string   `json:"id"`
	Status   string   `json:"status"`
	Worktree string   `json:"worktree"`
	Branch   string   `json:"branch"`
	Changed  []string `json:"changed"`
}

// decodeOne decodes stdout that must be exactly one JSON value with
// exactly the wanted keys (when keys is not nil).
func decodeOne[T any](t *testing.T, stdout string, keys ...string) T {
	t.Helper()
	var v T
	if strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
		t.Fatalf("stdout is not one JSON line: %q", stdout)
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	if keys != nil {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
			t.Fatal(err)
		}
		var got []string
		for k := range raw {
			got = append(got, k)
		}
		slices.Sort(got)
		slices.Sort(keys)
		if !slices.Equal(got, keys) {
			t.Errorf("keys = %q, want %q", got, keys)
		}
	}
	return v
}

// mustOpen runs `lane open` in-process and returns its result.
func mustOpen(t *testing.T, repo, id string) openedLane {
	t.Helper()
	stdout, stderr, code := runCLI(t, "", nil, "lane", "open", "--repo", repo, "--id", id)
	if code != 0 {
		t.Fatalf("lane open %s: exit %d: %s", id, code, stderr)
	}
	return decodeOne[openedLane](t, stdout, "id", "worktree", "branch", "base_commit")
}

// mustClose runs `lane close` in-process and returns its result.
func mustClose(t *testing.T, repo, id string) closedLane {
	t.Helper()
	stdout, stderr, code := runCLI(t, "", nil, "lane", "close", id, "--repo", repo)
	if code != 0 {
		t.Fatalf("lane close %s: exit %d: %s", id, code, stderr)
	}
	return decodeOne[closedLane](t, stdout, "id", "status", "worktree", "branch", "changed", "commits_ahead")
}

func branchExists(t *testing.T, repo, branch string) bool {
	t.Helper()
	return exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch).Run() == nil
}

// TestLaneContract holds the lane to the commitments an isolation backend
// makes to a workflow engine.
func TestLaneContract(t *testing.T) {
	repo := newTestRepo(t)
	lane := mustOpen(t, repo, "run-7/task-3")

	// The lane is not the main checkout, and starts at its HEAD.
	if lane.Worktree == repo || !strings.HasPrefix(lane.Worktree, filepath.Join(repo, ".worktrees")+"/") {
		t.Fatalf("worktree %s is not a lane under %s/.worktrees", lane.Worktree, repo)
	}
	if lane.ID != "run-7/task-3" || lane.Branch != "dirtywork/run-7_2ftask-3" || lane.BaseCommit != git(t, repo, "rev-parse", "HEAD") {
		t.Errorf("open = %+v", lane)
	}
	if got := git(t, lane.Worktree, "rev-parse", "--show-toplevel"); got != lane.Worktree {
		t.Errorf("the lane's toplevel is %s", got)
	}

	// Work in the lane leaves the main tree's status empty.
	writeTestFile(t, filepath.Join(lane.Worktree, "agent-work.txt"), "work\n")
	if got := git(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("main status = %q, want empty", got)
	}

	// A dirty lane is retained on close.
	res := mustClose(t, repo, lane.ID)
	if res.Status != "retained-dirty" || !slices.Equal(res.Changed, []string{"?? agent-work.txt"}) || res.Worktree != lane.Worktree || res.Branch != lane.Branch {
		t.Errorf("close dirty = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(lane.Worktree, "agent-work.txt")); err != nil {
		t.Errorf("retained work is gone: %v", err)
	}

	// A clean lane is removed, and closing it again succeeds.
	clean := mustOpen(t, repo, "run-7/task-4")
	for i := range 2 {
		res := mustClose(t, repo, clean.ID)
		if res.Status != "removed" || res.Changed == nil || len(res.Changed) != 0 {
			t.Errorf("close clean #%d = %+v", i+1, res)
		}
		if _, err := os.Lstat(clean.Worktree); err == nil {
			t.Errorf("close clean #%d: worktree still there", i+1)
		}
		if branchExists(t, repo, clean.Branch) {
			t.Errorf("close clean #%d: branch still there", i+1)
		}
	}
	if got := git(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("main status at the end = %q, want empty", got)
	}
}

// TestLaneSurvivesOwnerCrash: the process that opened a lane is SIGKILLed
// before it closes it; the binding is still listed and close still works.
func TestLaneSurvivesOwnerCrash(t *testing.T) {
	repo := newTestRepo(t)
	pr, pw := io.Pipe()
	var stderr strings.Builder
	owner := startCLI(t, "", []string{testHoldEnv + "=1", "DIRTYWORK_SESSION=wf-1"}, pw, &stderr,
		"lane", "open", "--repo", repo, "--id", "crash/1")
	line, err := bufio.NewReader(pr).ReadString('\n')
	_ = pr.Close() // the rest of the owner's output is not needed
	if err != nil {
		t.Fatalf("reading the owner's output: %v (stderr %q)", err, stderr.String())
	}
	lane := decodeOne[openedLane](t, line)
	writeTestFile(t, filepath.Join(lane.Worktree, "half-done.txt"), "work\n")
	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := owner.Wait(); err == nil {
		t.Fatal("the owner exited cleanly; it should have been killed")
	}

	stdout, errOut, code := runCLI(t, "", nil, "lane", "list", "--repo", repo, "--json")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	var infos []struct {
		ID           string   `json:"id"`
		Worktree     string   `json:"worktree"`
		Branch       string   `json:"branch"`
		State        string   `json:"state"`
		Changed      []string `json:"changed"`
		OwnerPID     int      `json:"owner_pid"`
		OwnerSession string   `json:"owner_session"`
	}
	if err := json.Unmarshal([]byte(stdout), &infos); err != nil {
		t.Fatalf("list output %q: %v", stdout, err)
	}
	if len(infos) != 1 || infos[0].ID != "crash/1" || infos[0].Worktree != lane.Worktree || infos[0].Branch != lane.Branch ||
		infos[0].State != "dirty" || !slices.Equal(infos[0].Changed, []string{"?? half-done.txt"}) ||
		infos[0].OwnerPID != os.Getpid() || infos[0].OwnerSession != "wf-1" {
		t.Errorf("list after the crash = %+v", infos)
	}

	if res := mustClose(t, repo, "crash/1"); res.Status != "retained-dirty" {
		t.Errorf("close after the crash = %+v", res)
	}
	if err := os.Remove(filepath.Join(lane.Worktree, "half-done.txt")); err != nil {
		t.Fatal(err)
	}
	if res := mustClose(t, repo, "crash/1"); res.Status != "removed" {
		t.Errorf("close after cleaning up = %+v", res)
	}
}

// TestLaneConcurrentProcesses: four processes at a time open and close
// lanes in one repository, some left dirty; none fails and the manifest
// ends consistent with git.
func TestLaneConcurrentProcesses(t *testing.T) {
	repo := newTestRepo(t)
	const workers, cycles = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*cycles*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range cycles {
				id := fmt.Sprintf("worker-%d/cycle-%d", w, c)
				stdout, stderr, code, err := runCLIProcess(t, "", nil, "lane", "open", "--repo", repo, "--id", id)
				if err != nil {
					errs <- err
					return
				}
				if code != 0 {
					errs <- fmt.Errorf("open %s: exit %d: %s", id, code, stderr)
					return
				}
				var lane openedLane
				if err := json.Unmarshal([]byte(stdout), &lane); err != nil {
					errs <- fmt.Errorf("open %s: %q: %w", id, stdout, err)
					return
				}
				dirty := c%2 == 1
				if dirty {
					if err := os.WriteFile(filepath.Join(lane.Worktree, "work.txt"), []byte(id), 0o644); err != nil {
						errs <- err
						return
					}
				}
				stdout, stderr, code, err = runCLIProcess(t, "", nil, "lane", "close", id, "--repo", repo)
				if err != nil {
					errs <- err
					return
				}
				if code != 0 {
					errs <- fmt.Errorf("close %s: exit %d: %s", id, code, stderr)
					return
				}
				var res closedLane
				if err := json.Unmarshal([]byte(stdout), &res); err != nil {
					errs <- fmt.Errorf("close %s: %q: %w", id, stdout, err)
					return
				}
				if want := map[bool]string{true: "retained-dirty", false: "removed"}[dirty]; res.Status != want {
					errs <- fmt.Errorf("close %s = %s, want %s", id, res.Status, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	stdout, stderr, code := runCLI(t, "", nil, "lane", "list", "--repo", repo, "--json")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	var infos []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		State  string `json:"state"`
	}
	if err := json.Unmarshal([]byte(stdout), &infos); err != nil {
		t.Fatal(err)
	}
	var want []string
	for w := range workers {
		for c := 1; c < cycles; c += 2 {
			want = append(want, fmt.Sprintf("worker-%d/cycle-%d", w, c))
		}
	}
	var got []string
	for _, l := range infos {
		got = append(got, l.ID)
		if l.Status != "retained-dirty" || l.State != "dirty" {
			t.Errorf("lane %s: status %s, state %s", l.ID, l.Status, l.State)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("lanes left = %q, want the dirty ones %q", got, want)
	}
	if n := strings.Count(git(t, repo, "worktree", "list", "--porcelain"), "worktree "); n != 1+len(want) {
		t.Errorf("git lists %d worktrees, want %d", n, 1+len(want))
	}
	if n := len(strings.Fields(git(t, repo, "for-each-ref", "--format=%(refname)", "refs/heads/dirtywork/"))); n != len(want) {
		t.Errorf("%d lane branches, want %d", n, len(want))
	}
}

// assertNoLaneCreated checks a refused command left no lane behind in dir.
func assertNoLaneCreated(t *testing.T, dir string, worktrees int) {
	t.Helper()
	if entries, err := os.ReadDir(filepath.Join(dir, ".worktrees")); err == nil && len(entries) > worktrees-1 {
		t.Errorf(".worktrees holds %d entries, want %d", len(entries), worktrees-1)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return // not a repository: nothing more to look at
	}
	out, _ := exec.Command("git", "-C", dir, "for-each-ref", "--format=%(refname)", "refs/heads/dirtywork/").Output()
	if n := len(strings.Fields(string(out))); n != worktrees-1 {
		t.Errorf("%d lane branches, want %d", n, worktrees-1)
	}
	out, _ = exec.Command("git", "-C", dir, "worktree", "list", "--porcelain").Output()
	if n := strings.Count(string(out), "worktree "); n > worktrees {
		t.Errorf("git lists %d worktrees, want %d", n, worktrees)
	}
}

func TestLaneOpenRefusals(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T) (dir string)
		args      func(dir string) []string
		message   string
		worktrees int
	}{
		{
			"not a git work tree", func(t *testing.T) string { return t.TempDir() },
			func(d string) []string { return []string{"--repo", d, "--id", "x"} }, "is not inside a git work tree", 1,
		},
		{
			"missing path", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
			func(d string) []string { return []string{"--repo", d, "--id", "x"} }, "is not a directory", 1,
		},
		{"repository without commits", func(t *testing.T) string {
			d := filepath.Join(t.TempDir(), "empty")
			git(t, filepath.Dir(d), "init", "-q", "-b", "main", d)
			return d
		}, func(d string) []string { return []string{"--repo", d, "--id", "x"} }, "has no commits", 1},
		{"empty id", newTestRepo, func(d string) []string { return []string{"--repo", d, "--id", ""} }, "invalid lane id", 1},
		{"id with a control character", newTestRepo, func(d string) []string { return []string{"--repo", d, "--id", "a\tb"} }, "invalid lane id", 1},
		{"no id", newTestRepo, func(d string) []string { return []string{"--repo", d} }, "lane open needs --id", 1},
		{"no repo", newTestRepo, func(d string) []string { return []string{"--id", "x"} }, "lane open needs --repo", 1},
		{".worktrees is a file", func(t *testing.T) string {
			d := newTestRepo(t)
			writeTestFile(t, filepath.Join(d, ".worktrees"), "")
			return d
		}, func(d string) []string { return []string{"--repo", d, "--id", "x"} }, "exists but is not a real directory", 1},
		{".worktrees is a symlink", func(t *testing.T) string {
			d := newTestRepo(t)
			if err := os.Symlink(t.TempDir(), filepath.Join(d, ".worktrees")); err != nil {
				t.Fatal(err)
			}
			return d
		}, func(d string) []string { return []string{"--repo", d, "--id", "x"} }, "exists but is not a real directory", 1},
		{"id already open", func(t *testing.T) string {
			d := newTestRepo(t)
			mustOpen(t, d, "x")
			return d
		}, func(d string) []string { return []string{"--repo", d, "--id", "x"} }, `lane "x" is already open`, 2},
		{"bad ref", newTestRepo, func(d string) []string { return []string{"--repo", d, "--id", "x", "--from", "nope"} }, `"nope" does not name a commit`, 1},
		{"corrupt manifest", func(t *testing.T) string {
			d := newTestRepo(t)
			writeTestFile(t, filepath.Join(d, ".git", "dirtywork", "lanes.json"), "{oops")
			return d
		}, func(d string) []string { return []string{"--repo", d, "--id", "x"} }, "lane manifest is corrupt", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t)
			stdout, stderr, code := runCLI(t, "", nil, append([]string{"lane", "open"}, tt.args(dir)...)...)
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "error: ") || !strings.Contains(stderr, tt.message) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout, error containing %q", code, stdout, stderr, tt.message)
			}
			assertNoLaneCreated(t, dir, tt.worktrees)
		})
	}
}

func TestLaneCloseRefusals(t *testing.T) {
	repo := newTestRepo(t)
	for _, tt := range []struct {
		name    string
		args    []string
		message string
	}{
		{"unknown id", []string{"lane", "close", "never", "--repo", repo}, `no such lane "never"`},
		{"no id", []string{"lane", "close", "--repo", repo}, "exactly one lane id"},
		{"not a repository", []string{"lane", "close", "x", "--repo", t.TempDir()}, "is not inside a git work tree"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "", nil, tt.args...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "error: ") || !strings.Contains(stderr, tt.message) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 with %q", code, stdout, stderr, tt.message)
			}
		})
	}
}

func TestLaneCloseFindsRepoFromCurrentDirectory(t *testing.T) {
	repo := newTestRepo(t)
	lane := mustOpen(t, repo, "x")
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, sub, nil, "lane", "close", "x")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if res := decodeOne[closedLane](t, stdout); res.Status != "removed" || res.Worktree != lane.Worktree {
		t.Errorf("close = %+v", res)
	}
}

func TestLaneListText(t *testing.T) {
	repo := newTestRepo(t)
	stdout, stderr, code := runCLI(t, "", nil, "lane", "list", "--repo", repo)
	if code != 0 || stdout != "no lanes\n" {
		t.Errorf("empty list = %q, exit %d, %s", stdout, code, stderr)
	}
	stdout, _, code = runCLI(t, "", nil, "lane", "list", "--repo", repo, "--json")
	if code != 0 || stdout != "[]\n" {
		t.Errorf("empty list --json = %q, exit %d", stdout, code)
	}

	dirty := mustOpen(t, repo, "run-7/task-3")
	clean := mustOpen(t, repo, "run-7/task-4")
	writeTestFile(t, filepath.Join(dirty.Worktree, "agent-work.txt"), "w\n")
	writeTestFile(t, filepath.Join(dirty.Worktree, "README.md"), "changed\n")
	mustClose(t, repo, dirty.ID)
	stdout, stderr, code = runCLI(t, "", nil, "lane", "list", "--repo", repo)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "run-7/task-3  dirty\n" +
		"  worktree: " + dirty.Worktree + "\n" +
		"  branch:   dirtywork/run-7_2ftask-3\n" +
		"  base:     " + dirty.BaseCommit + "\n" +
		"  status:   retained-dirty\n" +
		"  changed:   M README.md\n" +
		"            ?? agent-work.txt\n" +
		"run-7/task-4  clean\n" +
		"  worktree: " + clean.Worktree + "\n" +
		"  branch:   dirtywork/run-7_2ftask-4\n" +
		"  base:     " + clean.BaseCommit + "\n"
	if stdout != want {
		t.Errorf("list =\n%s\nwant\n%s", stdout, want)
	}
}

func TestLaneRecover(t *testing.T) {
	repo := newTestRepo(t)
	gone := mustOpen(t, repo, "gone")
	live := mustOpen(t, repo, "live")
	if err := os.RemoveAll(gone.Worktree); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, "", nil, "lane", "recover", "--repo", repo)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	type entry struct {
		ID string `json:"id"`
	}
	rep := decodeOne[struct {
		Pruned       []entry `json:"pruned"`
		KeptBranches []entry `json:"kept_branches"`
		Live         []entry `json:"live"`
		Orphaned     []entry `json:"orphaned"`
	}](t, stdout, "pruned", "kept_branches", "live", "orphaned")
	if len(rep.Pruned) != 1 || rep.Pruned[0].ID != "gone" || len(rep.Live) != 1 || rep.Live[0].ID != "live" ||
		rep.KeptBranches == nil || len(rep.KeptBranches) != 0 || rep.Orphaned == nil || len(rep.Orphaned) != 0 {
		t.Errorf("recover = %+v", rep)
	}
	if branchExists(t, repo, gone.Branch) || !branchExists(t, repo, live.Branch) {
		t.Error("recover deleted the wrong branches")
	}
}

func TestLaneNeedsASubcommand(t *testing.T) {
	for _, args := range [][]string{{"lane"}, {"lane", "bogus"}} {
		stdout, stderr, code := runCLI(t, "", nil, args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "error: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}
