package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// openLane opens a lane with id in a new repository.
func openLane(t *testing.T, id string) (*Manager, Lane) {
	t.Helper()
	m := newManager(t, newRepo(t))
	lane, err := m.Open(t.Context(), OpenOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return m, lane
}

// assertRemoved checks a lane's worktree, branch and manifest entry are
// gone and git lists only the main worktree.
func assertRemoved(t *testing.T, m *Manager, lane Lane) {
	t.Helper()
	if _, err := os.Lstat(lane.Worktree); err == nil {
		t.Errorf("worktree %s still exists", lane.Worktree)
	}
	if branchExists(t, m.repo.Root, lane.Branch) {
		t.Errorf("branch %s still exists", lane.Branch)
	}
	if n := worktreeCount(t, m.repo.Root); n != 1 {
		t.Errorf("git lists %d worktrees, want 1", n)
	}
	if got := manifestLanes(t, m); len(got) != 0 {
		t.Errorf("manifest still has %+v", got)
	}
}

// assertRetained checks a lane's worktree and branch survive and the
// manifest says retained-dirty.
func assertRetained(t *testing.T, m *Manager, lane Lane) {
	t.Helper()
	if !branchExists(t, m.repo.Root, lane.Branch) {
		t.Errorf("branch %s is gone", lane.Branch)
	}
	got := manifestLanes(t, m)
	if len(got) != 1 || got[0].Status != StatusRetainedDirty {
		t.Errorf("manifest = %+v, want one retained-dirty lane", got)
	}
}

func TestCloseCleanLaneRemovesItIdempotently(t *testing.T) {
	t.Parallel()
	m, lane := openLane(t, "x")
	for i := range 2 {
		res, err := m.Close(t.Context(), "x")
		if err != nil {
			t.Fatalf("close %d: %v", i+1, err)
		}
		want := CloseResult{ID: "x", Status: StatusRemoved, Worktree: lane.Worktree, Branch: lane.Branch, Changed: []string{}}
		if !closeResultEqual(res, want) {
			t.Errorf("close %d = %+v, want %+v", i+1, res, want)
		}
		assertRemoved(t, m, lane)
	}
}

func closeResultEqual(a, b CloseResult) bool {
	return a.ID == b.ID && a.Status == b.Status && a.Worktree == b.Worktree && a.Branch == b.Branch &&
		slices.Equal(a.Changed, b.Changed) && a.CommitsAhead == b.CommitsAhead && a.Changed != nil
}

func TestCloseDirtyLaneIsRetained(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		dirty   func(t *testing.T, lane Lane)
		changed []string
		ahead   int
	}{
		{"untracked file", func(t *testing.T, lane Lane) {
			writeFile(t, filepath.Join(lane.Worktree, "agent-work.txt"), "work\n")
		}, []string{"?? agent-work.txt"}, 0},
		{"untracked file in a new directory", func(t *testing.T, lane Lane) {
			writeFile(t, filepath.Join(lane.Worktree, "new", "deep.txt"), "work\n")
		}, []string{"?? new/deep.txt"}, 0},
		{"modified tracked file", func(t *testing.T, lane Lane) {
			writeFile(t, filepath.Join(lane.Worktree, "README.md"), "changed\n")
		}, []string{" M README.md"}, 0},
		{"staged file", func(t *testing.T, lane Lane) {
			writeFile(t, filepath.Join(lane.Worktree, "s.txt"), "s\n")
			gitT(t, lane.Worktree, "add", "s.txt")
		}, []string{"A  s.txt"}, 0},
		{"deleted file", func(t *testing.T, lane Lane) {
			removePath(t, filepath.Join(lane.Worktree, "README.md"))
		}, []string{" D README.md"}, 0},
		{"commit on the lane branch", func(t *testing.T, lane Lane) {
			commitFile(t, lane.Worktree, "c.txt", "c\n")
		}, []string{}, 1},
		{"commit on a detached HEAD", func(t *testing.T, lane Lane) {
			gitT(t, lane.Worktree, "checkout", "-q", "--detach")
			commitFile(t, lane.Worktree, "c.txt", "c\n")
			commitFile(t, lane.Worktree, "d.txt", "d\n")
		}, []string{}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, lane := openLane(t, "x")
			tt.dirty(t, lane)
			for i := range 2 { // closing again re-judges and still retains
				res, err := m.Close(t.Context(), "x")
				if err != nil {
					t.Fatal(err)
				}
				want := CloseResult{ID: "x", Status: StatusRetainedDirty, Worktree: lane.Worktree, Branch: lane.Branch, Changed: tt.changed, CommitsAhead: tt.ahead}
				if !closeResultEqual(res, want) {
					t.Errorf("close %d = %+v, want %+v", i+1, res, want)
				}
				if _, err := os.Stat(lane.Worktree); err != nil {
					t.Errorf("worktree gone: %v", err)
				}
				assertRetained(t, m, lane)
			}
		})
	}
}

func TestCloseRetainedLaneOnceCleanIsRemoved(t *testing.T) {
	t.Parallel()
	m, lane := openLane(t, "x")
	work := filepath.Join(lane.Worktree, "agent-work.txt")
	writeFile(t, work, "work\n")
	if res, err := m.Close(t.Context(), "x"); err != nil || res.Status != StatusRetainedDirty {
		t.Fatalf("first close = %+v, %v", res, err)
	}
	removePath(t, work)
	if res, err := m.Close(t.Context(), "x"); err != nil || res.Status != StatusRemoved {
		t.Fatalf("close after cleaning = %+v, %v", res, err)
	}
	assertRemoved(t, m, lane)
}

func TestCloseIgnoredFilesDoNotCount(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	commitFile(t, dir, ".gitignore", "*.log\n")
	m := newManager(t, dir)
	lane, err := m.Open(t.Context(), OpenOptions{ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(lane.Worktree, "build.log"), "noise\n")
	res, err := m.Close(t.Context(), "x")
	if err != nil || res.Status != StatusRemoved {
		t.Fatalf("close = %+v, %v; want removed", res, err)
	}
	assertRemoved(t, m, lane)
}

func TestCloseVanishedWorktree(t *testing.T) {
	t.Parallel()
	t.Run("no commits: pruned and removed", func(t *testing.T) {
		m, lane := openLane(t, "x")
		if err := os.RemoveAll(lane.Worktree); err != nil {
			t.Fatal(err)
		}
		res, err := m.Close(t.Context(), "x")
		if err != nil || res.Status != StatusRemoved {
			t.Fatalf("close = %+v, %v; want removed", res, err)
		}
		assertRemoved(t, m, lane)
	})
	t.Run("commits beyond base: branch kept", func(t *testing.T) {
		m, lane := openLane(t, "x")
		commitFile(t, lane.Worktree, "c.txt", "c\n")
		tip := gitT(t, lane.Worktree, "rev-parse", "HEAD")
		if err := os.RemoveAll(lane.Worktree); err != nil {
			t.Fatal(err)
		}
		res, err := m.Close(t.Context(), "x")
		if err != nil || res.Status != StatusRetainedDirty || res.CommitsAhead != 1 {
			t.Fatalf("close = %+v, %v; want retained-dirty with 1 commit", res, err)
		}
		assertRetained(t, m, lane)
		if got := gitT(t, m.repo.Root, "rev-parse", lane.Branch); got != tip {
			t.Errorf("branch at %s, want %s", got, tip)
		}
		if n := worktreeCount(t, m.repo.Root); n != 1 {
			t.Errorf("git still lists %d worktrees; the vanished one was not pruned", n)
		}
	})
}

func TestCloseLeavesUnknownDirectoryAlone(t *testing.T) {
	t.Parallel()
	m, lane := openLane(t, "x")
	// git forgets the worktree while its directory (with work) stays.
	if err := os.RemoveAll(lane.GitDir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(lane.Worktree, "agent-work.txt"), "work\n")
	res, err := m.Close(t.Context(), "x")
	if err != nil || res.Status != StatusRetainedDirty {
		t.Fatalf("close = %+v, %v; want retained-dirty", res, err)
	}
	if _, err := os.Stat(filepath.Join(lane.Worktree, "agent-work.txt")); err != nil {
		t.Errorf("work lost: %v", err)
	}
	assertRetained(t, m, lane)
}

// TestCloseIgnoresRedirectedGitFile: a worker that rewrites the lane's .git
// file to point at another repository cannot make a dirty lane look clean.
func TestCloseIgnoresRedirectedGitFile(t *testing.T) {
	t.Parallel()
	m, lane := openLane(t, "x")
	decoy := newRepo(t)
	commitFile(t, decoy, "agent-work.txt", "work\n") // through the decoy the lane looks clean
	writeFile(t, filepath.Join(lane.Worktree, "agent-work.txt"), "work\n")
	writeFile(t, filepath.Join(lane.Worktree, ".git"), "gitdir: "+filepath.Join(decoy, ".git")+"\n")
	res, err := m.Close(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusRetainedDirty || !slices.Contains(res.Changed, "?? agent-work.txt") {
		t.Fatalf("close = %+v; want retained-dirty with the agent's file", res)
	}
}

func TestCloseUnknownID(t *testing.T) {
	t.Parallel()
	m := newManager(t, newRepo(t))
	if _, err := m.Close(t.Context(), "never-opened"); !errors.Is(err, ErrNoLane) {
		t.Fatalf("err = %v, want ErrNoLane", err)
	}
}

func TestReopenAfterRemoval(t *testing.T) {
	t.Parallel()
	m, _ := openLane(t, "x")
	if _, err := m.Close(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	lane, err := m.Open(t.Context(), OpenOptions{ID: "x"})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if got := manifestLanes(t, m); len(got) != 1 || got[0] != lane {
		t.Errorf("manifest = %+v", got)
	}
}

// A lane opened without a checkout that nothing was written into holds
// only its .git file: git calls its base files deleted, yet closing it
// loses nothing, so it is removed. One file written into it keeps it.
func TestCloseEmptyNoCheckoutLane(t *testing.T) {
	t.Parallel()
	for _, withWork := range []bool{false, true} {
		m := newManager(t, newRepo(t))
		lane, err := m.Open(t.Context(), OpenOptions{ID: "x", NoCheckout: true})
		if err != nil {
			t.Fatal(err)
		}
		if withWork {
			writeFile(t, filepath.Join(lane.Worktree, "work.txt"), "mine\n")
		}
		res, err := m.Close(t.Context(), "x")
		if err != nil {
			t.Fatal(err)
		}
		if withWork {
			if res.Status != StatusRetainedDirty {
				t.Fatalf("a lane holding work was %s", res.Status)
			}
			assertRetained(t, m, lane)
			continue
		}
		if res.Status != StatusRemoved || len(res.Changed) != 0 {
			t.Fatalf("empty lane: %+v", res)
		}
		assertRemoved(t, m, lane)
	}
}
