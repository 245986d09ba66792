package gitops

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOpenCreatesLane(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	m := newManager(t, dir)
	lane, err := m.Open(t.Context(), OpenOptions{ID: "RUN/TASK", OwnerPID: 1234, OwnerSession: "sess"})
	if err != nil {
		t.Fatal(err)
	}
	enc := "_52_55_4e_2f_54_41_53_4b"
	want := Lane{
		ID:           "RUN/TASK",
		Worktree:     filepath.Join(dir, ".worktrees", "dw-"+enc),
		Branch:       "dirtywork/" + enc,
		BaseCommit:   gitT(t, dir, "rev-parse", "HEAD"),
		GitDir:       filepath.Join(dir, ".git", "worktrees", "dw-"+enc),
		OwnerPID:     1234,
		OwnerSession: "sess",
		Created:      "2026-03-04T05:06:07Z",
		Status:       StatusOpen,
	}
	if lane != want {
		t.Errorf("lane = %+v\nwant %+v", lane, want)
	}
	if got := manifestLanes(t, m); !slices.Equal(got, []Lane{want}) {
		t.Errorf("manifest = %+v", got)
	}
	if got := gitT(t, lane.Worktree, "rev-parse", "--abbrev-ref", "HEAD"); got != lane.Branch {
		t.Errorf("worktree is on %q, want %q", got, lane.Branch)
	}
	if b, err := os.ReadFile(filepath.Join(lane.Worktree, "README.md")); err != nil || string(b) != "hello\n" {
		t.Errorf("checkout: %q, %v", b, err)
	}
	// The operator's checkout does not see the lane.
	writeFile(t, filepath.Join(lane.Worktree, "agent-work.txt"), "work\n")
	if got := gitT(t, dir, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("main status = %q, want clean", got)
	}
	if got, err := gitE(dir, "config", "--get", "branch."+lane.Branch+".merge"); err == nil {
		t.Errorf("lane branch tracks %q; want no upstream", got)
	}
}

func TestOpenFromRef(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	first := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "tag", "v1")
	commitFile(t, dir, "later.txt", "later\n")
	m := newManager(t, dir)
	for i, from := range []string{"v1", first, "HEAD~1"} {
		lane, err := m.Open(t.Context(), OpenOptions{ID: "from-" + string(rune('a'+i)), From: from})
		if err != nil {
			t.Fatalf("from %s: %v", from, err)
		}
		if lane.BaseCommit != first {
			t.Errorf("from %s: base = %s, want %s", from, lane.BaseCommit, first)
		}
		if _, err := os.Stat(filepath.Join(lane.Worktree, "later.txt")); err == nil {
			t.Errorf("from %s: the lane has a file from after its base", from)
		}
	}
}

func TestOpenNoCheckoutLeavesOnlyGitFile(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	m := newManager(t, dir)
	lane, err := m.Open(t.Context(), OpenOptions{ID: "docker-run", NoCheckout: true})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(lane.Worktree)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != ".git" || !entries[0].Type().IsRegular() {
		t.Errorf("worktree holds %v, want only a .git file", entries)
	}
	if lane.BaseCommit != m.repo.Head {
		t.Errorf("base = %s, want %s", lane.BaseCommit, m.repo.Head)
	}
}

func TestOpenTwiceWritesExcludeOnce(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	m := newManager(t, dir)
	for _, id := range []string{"one", "two"} {
		if _, err := m.Open(t.Context(), OpenOptions{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), ".worktrees/"); n != 1 {
		t.Errorf("exclude has %d .worktrees/ lines:\n%s", n, b)
	}
}

func TestOpenFromLinkedWorktree(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	gitT(t, dir, "worktree", "add", "-q", "-b", "side", linked)
	linked, _ = filepath.EvalSymlinks(linked)
	m := newManager(t, linked)
	lane, err := m.Open(t.Context(), OpenOptions{ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if lane.Worktree != filepath.Join(linked, ".worktrees", "dw-x") {
		t.Errorf("worktree = %s", lane.Worktree)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude")); !strings.Contains(string(b), ".worktrees/\n") {
		t.Errorf("primary exclude = %q", b)
	}
	if got := gitT(t, linked, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("linked status = %q, want clean", got)
	}
	// The manifest lives in the common dir, so the primary sees the lane.
	if got := manifestLanes(t, newManager(t, dir)); len(got) != 1 || got[0].ID != "x" {
		t.Errorf("manifest from the primary = %+v", got)
	}
}

// assertNothingCreated checks that a refused Open left no lane behind: no
// worktree, no branch (unless it pre-existed), no manifest entry, nothing
// new in git's worktree list. worktrees is how many git should list (1 =
// only the main one); more means a lane with this id existed before.
func assertNothingCreated(t *testing.T, m *Manager, id string, worktrees int, branchPreexisted bool) {
	t.Helper()
	dir := m.repo.Root
	if enc, err := EncodeLaneID(id); err == nil && worktrees == 1 {
		dest := filepath.Join(dir, ".worktrees", "dw-"+enc)
		if fi, err := os.Lstat(dest); err == nil && fi.IsDir() {
			if entries, _ := os.ReadDir(dest); len(entries) > 0 {
				t.Errorf("destination %s holds %v", dest, entries)
			}
		}
		if got := branchExists(t, dir, "dirtywork/"+enc); got != branchPreexisted {
			t.Errorf("branch exists = %v, want %v", got, branchPreexisted)
		}
	}
	if got := worktreeCount(t, dir); got != worktrees {
		t.Errorf("git lists %d worktrees, want %d", got, worktrees)
	}
	if mf, err := readManifest(manifestPath(m.repo)); err == nil {
		if got := len(mf.Lanes); got != worktrees-1 {
			t.Errorf("manifest has %d lanes, want %d", got, worktrees-1)
		}
	}
}

func TestOpenRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		id, from   string
		setup      func(t *testing.T, m *Manager)
		want       error
		worktrees  int  // git's list afterwards (1 = only the main one)
		branchKept bool // the lane's branch pre-existed and must survive
	}{
		{name: "empty id", id: "", want: ErrInvalidLaneID, worktrees: 1},
		{name: "control character in id", id: "a\nb", want: ErrInvalidLaneID, worktrees: 1},
		{name: ".worktrees is a file", id: "x", want: ErrWorktreesNotDir, worktrees: 1, setup: func(t *testing.T, m *Manager) {
			writeFile(t, m.repo.LanesDir(), "not a dir")
		}},
		{name: ".worktrees is a symlink to a directory", id: "x", want: ErrWorktreesNotDir, worktrees: 1, setup: func(t *testing.T, m *Manager) {
			if err := os.Symlink(t.TempDir(), m.repo.LanesDir()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "empty directory at destination", id: "x", want: ErrDestinationExists, worktrees: 1, setup: func(t *testing.T, m *Manager) {
			if err := os.MkdirAll(filepath.Join(m.repo.LanesDir(), "dw-x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "file at destination", id: "x", want: ErrDestinationExists, worktrees: 1, setup: func(t *testing.T, m *Manager) {
			writeFile(t, filepath.Join(m.repo.LanesDir(), "dw-x"), "")
		}},
		{name: "dangling symlink at destination", id: "x", want: ErrDestinationExists, worktrees: 1, setup: func(t *testing.T, m *Manager) {
			if err := os.MkdirAll(m.repo.LanesDir(), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(t.TempDir(), "nowhere"), filepath.Join(m.repo.LanesDir(), "dw-x")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "branch exists", id: "x", want: ErrBranchExists, worktrees: 1, branchKept: true, setup: func(t *testing.T, m *Manager) {
			gitT(t, m.repo.Root, "branch", "dirtywork/x")
		}},
		{name: "bad ref", id: "x", from: "no-such-ref", want: ErrBadRef, worktrees: 1},
		{name: "option-like ref", id: "x", from: "--orphan", want: ErrBadRef, worktrees: 1},
		{name: "id already open", id: "x", want: ErrLaneOpen, worktrees: 2, branchKept: true, setup: func(t *testing.T, m *Manager) {
			if _, err := m.Open(t.Context(), OpenOptions{ID: "x"}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "corrupt manifest", id: "x", want: ErrCorruptManifest, worktrees: 1, setup: func(t *testing.T, m *Manager) {
			writeFile(t, manifestPath(m.repo), "{garbage")
		}},
		{name: "symlinked exclude file", id: "x", want: ErrUnsafeFile, worktrees: 1, setup: func(t *testing.T, m *Manager) {
			exclude := filepath.Join(m.repo.CommonDir, "info", "exclude")
			removePath(t, exclude)
			if err := os.Symlink(filepath.Join(t.TempDir(), "x"), exclude); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, newRepo(t))
			if tt.setup != nil {
				tt.setup(t, m)
			}
			var before string
			if tt.branchKept {
				before = gitT(t, m.repo.Root, "rev-parse", "dirtywork/x")
			}
			_, err := m.Open(t.Context(), OpenOptions{ID: tt.id, From: tt.from})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			assertNothingCreated(t, m, tt.id, tt.worktrees, tt.branchKept)
			if tt.branchKept {
				if after := gitT(t, m.repo.Root, "rev-parse", "dirtywork/x"); after != before {
					t.Errorf("pre-existing branch moved from %s to %s", before, after)
				}
			}
		})
	}
}

// TestOpenGitFailureRollsBack covers git worktree add failing in the two
// ways git leaves things: a failed checkout (git removes the worktree
// itself) and a failing post-checkout hook (git leaves the worktree).
func TestOpenGitFailureRollsBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		stderr string
	}{
		{"checkout fails", func(t *testing.T, dir string) {
			gitT(t, dir, "config", "filter.broken.clean", "cat")
			gitT(t, dir, "config", "filter.broken.smudge", "false")
			gitT(t, dir, "config", "filter.broken.required", "true")
			commitFile(t, dir, ".gitattributes", "*.txt filter=broken\n")
			commitFile(t, dir, "a.txt", "a\n")
		}, "smudge filter broken failed"},
		{"post-checkout hook fails", func(t *testing.T, dir string) {
			hook := filepath.Join(dir, ".git", "hooks", "post-checkout")
			writeFile(t, hook, "#!/bin/sh\necho hook says no >&2\nexit 3\n")
			if err := os.Chmod(hook, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "hook says no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t)
			tt.setup(t, dir)
			m := newManager(t, dir)
			_, err := m.Open(t.Context(), OpenOptions{ID: "x"})
			if !errors.Is(err, ErrWorktreeAdd) {
				t.Fatalf("err = %v, want ErrWorktreeAdd", err)
			}
			var ge *Error
			if !errors.As(err, &ge) || !strings.HasPrefix(err.Error(), "git worktree add failed: ") || !strings.Contains(err.Error(), tt.stderr) {
				t.Errorf("err = %q, want git's stderr %q after the prefix", err, tt.stderr)
			}
			assertNothingCreated(t, m, "x", 1, false)
			if _, err := os.Lstat(filepath.Join(dir, ".worktrees")); err == nil {
				t.Error(".worktrees created by the failed open was left behind")
			}
		})
	}
}

// raceGit wraps real git: just before `git worktree add` runs, it calls
// hook, simulating another process changing things between the checks and
// the creation.
func raceGit(hook func(ctx context.Context)) *Git {
	g := New()
	g.Command = func(ctx context.Context, name string, args ...string) *exec.Cmd {
		if i := slices.Index(args, "worktree"); i >= 0 && i+1 < len(args) && args[i+1] == "add" {
			hook(ctx)
		}
		return exec.CommandContext(ctx, name, args...)
	}
	return g
}

func TestOpenEscapedWorktreeIsRemoved(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	elsewhere := t.TempDir()
	m := newManager(t, dir)
	m.git = raceGit(func(context.Context) {
		// .worktrees is swapped for a symlink after it was checked.
		if err := os.Remove(m.repo.LanesDir()); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(elsewhere, m.repo.LanesDir()); err != nil {
			t.Error(err)
		}
	})
	_, err := m.Open(t.Context(), OpenOptions{ID: "x"})
	if !errors.Is(err, ErrWorktreeEscaped) {
		t.Fatalf("err = %v, want ErrWorktreeEscaped", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("the escaped worktree was left in %s: %v", elsewhere, entries)
	}
	assertNothingCreated(t, m, "x", 1, false)
}

func TestOpenCancelledDuringCreationRollsBack(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	m := newManager(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	m.git = raceGit(func(context.Context) { cancel() })
	_, err := m.Open(ctx, OpenOptions{ID: "x"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	assertNothingCreated(t, m, "x", 1, false)
}
