package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRecover(t *testing.T) {
	t.Parallel()
	m := newManager(t, newRepo(t))
	lanes := map[string]Lane{}
	for _, id := range []string{"live-dirty", "vanished", "vanished-committed", "orphan"} {
		l, err := m.Open(t.Context(), OpenOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		lanes[id] = l
	}
	writeFile(t, filepath.Join(lanes["live-dirty"].Worktree, "agent-work.txt"), "w\n")
	commitFile(t, lanes["vanished-committed"].Worktree, "c.txt", "c\n")
	for _, id := range []string{"vanished", "vanished-committed"} {
		if err := os.RemoveAll(lanes[id].Worktree); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(lanes["orphan"].GitDir); err != nil { // git forgets it; the directory stays
		t.Fatal(err)
	}

	rep, err := m.Recover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ids := func(rs []RecoveredLane) []string {
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	check := func(name string, got []RecoveredLane, want ...string) {
		t.Helper()
		if g := ids(got); !slices.Equal(g, want) {
			t.Errorf("%s = %q, want %q", name, g, want)
		}
	}
	check("pruned", rep.Pruned, "vanished")
	check("kept_branches", rep.KeptBranches, "vanished-committed")
	check("live", rep.Live, "live-dirty")
	check("orphaned", rep.Orphaned, "orphan")
	if len(rep.KeptBranches) == 1 && rep.KeptBranches[0].CommitsAhead != 1 {
		t.Errorf("kept branch commits ahead = %d, want 1", rep.KeptBranches[0].CommitsAhead)
	}

	if branchExists(t, m.repo.Root, lanes["vanished"].Branch) {
		t.Error("the vanished lane's branch survived")
	}
	if !branchExists(t, m.repo.Root, lanes["vanished-committed"].Branch) {
		t.Error("a branch with commits beyond its base was deleted")
	}
	if _, err := os.Stat(filepath.Join(lanes["live-dirty"].Worktree, "agent-work.txt")); err != nil {
		t.Errorf("live lane touched: %v", err)
	}
	got := map[string]bool{}
	for _, l := range manifestLanes(t, m) {
		got[l.ID] = true
	}
	if len(got) != 2 || !got["live-dirty"] || !got["orphan"] {
		t.Errorf("manifest keeps %v, want live-dirty and orphan", got)
	}
	// Nothing left to do the second time.
	rep, err = m.Recover(t.Context())
	if err != nil || len(rep.Pruned)+len(rep.KeptBranches) != 0 || len(rep.Live) != 1 || len(rep.Orphaned) != 1 {
		t.Errorf("second recover = %+v, %v", rep, err)
	}
}
