package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshotWorktree(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	commitFile(t, dir, "a.txt", "one\n")
	m := newManager(t, dir)
	lane, err := m.Open(t.Context(), OpenOptions{ID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	g := New()
	snap, err := g.SnapshotWorktree(t.Context(), lane.Worktree, lane.GitDir, "snapshot of run-1")
	if err != nil || snap.Changed || snap.Commit != lane.BaseCommit {
		t.Fatalf("clean worktree: %+v %v", snap, err)
	}

	writeFile(t, filepath.Join(lane.Worktree, "a.txt"), "two\n")
	writeFile(t, filepath.Join(lane.Worktree, "new", "b.txt"), "bee\n")
	writeFile(t, filepath.Join(lane.Worktree, ".gitignore"), "*.log\n")
	writeFile(t, filepath.Join(lane.Worktree, "x.log"), "ignored\n")
	// A hook and a filter the snapshot must not run.
	hooks := filepath.Join(dir, ".git", "hooks")
	writeFile(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\ntouch "+filepath.Join(dir, "HOOK-RAN")+"\n")
	if err := os.Chmod(filepath.Join(hooks, "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "config", "filter.evil.clean", "touch "+filepath.Join(dir, "FILTER-RAN")+"; cat")
	writeFile(t, filepath.Join(lane.Worktree, ".gitattributes"), "*.txt filter=evil\n")

	snap, err = g.SnapshotWorktree(t.Context(), lane.Worktree, lane.GitDir, "snapshot of run-1")
	if err != nil || !snap.Changed {
		t.Fatalf("dirty worktree: %+v %v", snap, err)
	}
	// Checked before this test's own plain git commands, which do run them.
	for _, marker := range []string{"HOOK-RAN", "FILTER-RAN"} {
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			t.Errorf("%s: the snapshot ran repository code", marker)
		}
	}
	if got := gitT(t, lane.Worktree, "rev-parse", lane.Branch); got != snap.Commit {
		t.Fatalf("branch at %s, want %s", got, snap.Commit)
	}
	files := gitT(t, lane.Worktree, "ls-tree", "-r", "--name-only", snap.Commit)
	for _, want := range []string{"a.txt", "new/b.txt", ".gitignore", ".gitattributes"} {
		if !strings.Contains(files, want) {
			t.Errorf("snapshot lacks %s:\n%s", want, files)
		}
	}
	if strings.Contains(files, "x.log") {
		t.Error("snapshot holds an ignored file")
	}
	if got := gitT(t, lane.Worktree, "show", snap.Commit+":a.txt"); got != "two" {
		t.Errorf("a.txt in snapshot = %q", got)
	}
	if st, err := g.Run(t.Context(), Call{Dir: lane.Worktree, Args: []string{"status", "--porcelain"}, Neutral: true}); err != nil || len(st) != 0 {
		t.Errorf("worktree not clean after the snapshot:\n%s", st)
	}
}

func TestSnapshotRefusesAnEmptyTreeOverFiles(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	commitFile(t, dir, "a.txt", "one\n")
	m := newManager(t, dir)
	// A lane made without a checkout holds only its .git file, as a
	// docker run's lane does when its export never filled it.
	lane, err := m.Open(t.Context(), OpenOptions{ID: "run-empty", NoCheckout: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New().SnapshotWorktree(t.Context(), lane.Worktree, lane.GitDir, "snapshot")
	if !errors.Is(err, ErrEmptyTree) || !strings.Contains(err.Error(), "empty tree") {
		t.Fatalf("snapshot of an empty worktree: %v, want ErrEmptyTree", err)
	}
	if got := gitT(t, dir, "rev-parse", lane.Branch); got != lane.BaseCommit {
		t.Fatalf("the branch moved to %s", got)
	}
}

func TestFindLinkedWorktree(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	commitFile(t, dir, "a.txt", "one\n")
	m := newManager(t, dir)
	lane, err := m.Open(t.Context(), OpenOptions{ID: "run-linked"})
	if err != nil {
		t.Fatal(err)
	}
	g := New()
	repo := m.Repo()
	got, err := g.FindLinkedWorktree(t.Context(), repo, lane.Worktree)
	if err != nil || got.GitDir != lane.GitDir || got.Branch != lane.Branch {
		t.Fatalf("found %+v, %v; want git dir %s on %s", got, err, lane.GitDir, lane.Branch)
	}
	// A rewritten .git file changes nothing: the answer comes from the
	// common dir.
	writeFile(t, filepath.Join(lane.Worktree, ".git"), "gitdir: /somewhere/else\n")
	if got2, err := g.FindLinkedWorktree(t.Context(), repo, lane.Worktree); err != nil || got2.GitDir != lane.GitDir {
		t.Fatalf("after rewriting .git: %+v, %v", got2, err)
	}
	for name, path := range map[string]string{
		"main worktree": repo.Root,
		"plain dir":     t.TempDir(),
		"missing":       filepath.Join(t.TempDir(), "gone"),
	} {
		if _, err := g.FindLinkedWorktree(t.Context(), repo, path); !errors.Is(err, ErrNotLinkedWorktree) {
			t.Errorf("%s: %v, want ErrNotLinkedWorktree", name, err)
		}
	}
}
