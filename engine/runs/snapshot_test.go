package runs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

func TestSnapshotCommitsTheWorktreeOntoItsBranch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "snap", map[string]any{"status": "max_turns"})
	res, err := e.store.Snapshot(t.Context(), "snap")
	if err != nil || res.Changed {
		t.Fatalf("clean worktree: %+v, %v (want nothing to snapshot)", res, err)
	}
	writeFile(t, filepath.Join(wt, "new.txt"), "n\n")
	if err := syscall.Mkfifo(filepath.Join(wt, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err = e.store.Snapshot(t.Context(), "snap")
	if err != nil || !res.Changed || !equal(res.Skipped, []string{"pipe"}) {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := git(t, repo, "show", "dirtywork/snap:new.txt"); got != "n" {
		t.Errorf("new.txt = %q", got)
	}
	assertNothingRan(t)
}

func TestSnapshotRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "empty", map[string]any{"status": "export_failed"})
	for _, n := range []string{"a.txt", "b.txt"} {
		_ = os.Remove(filepath.Join(wt, n))
	}
	if _, err := e.store.Snapshot(t.Context(), "empty"); !errors.Is(err, ErrEmptyTree) {
		t.Errorf("empty tree over a non-empty head: %v", err)
	}
	if got := git(t, repo, "ls-tree", "--name-only", "dirtywork/empty"); got == "" {
		t.Error("the branch lost its files")
	}

	wt = e.addLaneRun(repo, "stashed", nil)
	if err := os.Mkdir(wt+".pre-resume-other", 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Snapshot(t.Context(), "stashed"); err == nil || !strings.Contains(err.Error(), "pre-resume stash") {
		t.Errorf("stash: %v", err)
	}

	e.addRun("nowt", map[string]any{
		"repo": repo, "worktree": filepath.Join(repo, ".worktrees", "dw-nowt"), "branch": "dirtywork/nowt",
		"base_commit": "x", "sandbox": "none",
	})
	if _, err := e.store.Snapshot(t.Context(), "nowt"); err == nil || !strings.Contains(err.Error(), "missing; nothing to snapshot") {
		t.Errorf("missing worktree: %v", err)
	}
	e.addRun("strict", map[string]any{"repo": repo})
	if _, err := e.store.Snapshot(t.Context(), "strict"); err == nil || !strings.Contains(err.Error(), "missing 'worktree'") {
		t.Errorf("strict: %v", err)
	}

	e.addLaneRun(repo, "live", map[string]any{"status": "running"})
	lock, err := transcript.AcquireLiveness(filepath.Join(e.root, "live"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	if _, err := e.store.Snapshot(t.Context(), "live"); err == nil || !strings.Contains(err.Error(), "still in progress") {
		t.Errorf("live: %v", err)
	}
}

func TestStopRefusesARunThatIsNotAlive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addRun("done", map[string]any{"host_pid": os.Getpid()})
	if err := e.store.Stop("done"); !errors.Is(err, ErrNotAlive) {
		t.Errorf("stop of a finished run: %v", err)
	}
}

func TestOutcomeClasses(t *testing.T) {
	t.Parallel()
	for result, want := range map[string]string{
		"ERROR: command timed out after 120s": "timed out", "ERROR: no such file": "ERROR",
		"BLOCKED: sudo is not allowed": "BLOCKED", "exit code: 0\nok": "ok",
		"ERROR: grep timed out after 30s — narrow the pattern or path.": "timed out",
	} {
		if got := OutcomeClass(transcript.ToolResult{Result: result}); got != want {
			t.Errorf("%q: %s, want %s", result, got, want)
		}
	}
}
