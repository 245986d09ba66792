package host

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestGitWorksInARepositoryUnderTheHome(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	writeFile(t, filepath.Join(r.worktree, "tracked.txt"), "one\nchanged\n")
	for _, command := range []string{"git status", "git diff", "git log --oneline -1", "git diff --stat " + r.base} {
		if out, code := bash(t, w, command); code != 0 {
			t.Errorf("%q: exit %d: %s", command, code, out)
		}
	}
	if out, _ := bash(t, w, "git diff"); !strings.Contains(out, "+changed") {
		t.Errorf("git diff does not show the change: %q", out)
	}
	// Without --allow-commit the object store is read-only: no commit.
	if out, code := bash(t, w, "git commit -qam 'not allowed'"); code == 0 {
		t.Errorf("git commit succeeded without AllowCommit: %s", out)
	}
	if head := strings.TrimSpace(r.git(t, r.repo, "rev-parse", r.branch)); head != r.base {
		t.Errorf("branch moved to %s without AllowCommit", head)
	}
}

func TestGitCommitWithAllowCommit(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	cfg.AllowCommit = true
	w := open(t, cfg)
	writeFile(t, filepath.Join(r.worktree, "feature.txt"), "new feature\n")
	if out, code := bash(t, w, "git add feature.txt && git commit -q -m 'feat: add feature' && git log --oneline -1"); code != 0 {
		t.Fatalf("git add + commit: exit %d: %s", code, out)
	}
	head := strings.TrimSpace(r.git(t, r.repo, "rev-parse", r.branch))
	if head == r.base {
		t.Fatal("the branch did not move")
	}
	if msg := r.git(t, r.repo, "log", "-1", "--format=%s", r.branch); strings.TrimSpace(msg) != "feat: add feature" {
		t.Errorf("commit message %q", msg)
	}
	// The repository is still sound and its other refs untouched.
	r.git(t, r.repo, "fsck", "--no-progress")
	if main := strings.TrimSpace(r.git(t, r.repo, "rev-parse", "main")); main != r.base {
		t.Errorf("main moved to %s", main)
	}
	// Commit rights are not config rights, and the object store's info/
	// and pack/ stay read-only.
	for _, command := range []string{
		"git config core.hooksPath /tmp",
		"echo /tmp > " + filepath.Join(r.common, "objects", "info", "alternates"),
		"touch " + filepath.Join(r.common, "objects", "pack", "planted.pack"),
		"git update-ref refs/heads/main HEAD",
	} {
		if out, code := bash(t, w, command); code == 0 {
			t.Errorf("%q succeeded with AllowCommit: %s", command, out)
		}
	}
	if main := strings.TrimSpace(r.git(t, r.repo, "rev-parse", "main")); main != r.base {
		t.Errorf("main moved to %s", main)
	}
}

// A packed branch has no loose ref nor, after pruning, its directory:
// Open creates the directory so that the commit can write the ref.
func TestGitCommitWithPackedRef(t *testing.T) {
	r := newTestRepo(t)
	r.git(t, r.repo, "pack-refs", "--all", "--prune")
	if exists(filepath.Join(r.common, "refs", "heads", "dirtywork", "x")) {
		t.Fatal("the ref is still loose")
	}
	cfg := r.config()
	cfg.AllowCommit = true
	w := open(t, cfg)
	if out, code := bash(t, w, "echo y > y.txt && git add y.txt && git commit -q -m y"); code != 0 {
		t.Fatalf("commit on a packed branch: exit %d: %s", code, out)
	}
	if head := strings.TrimSpace(r.git(t, r.repo, "rev-parse", r.branch)); head == r.base {
		t.Fatal("the branch did not move")
	}
}
