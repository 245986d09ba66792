package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestListEmpty(t *testing.T) {
	t.Parallel()
	m := newManager(t, newRepo(t))
	got, err := m.List(t.Context())
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("List = %#v, %v; want an empty non-nil slice", got, err)
	}
}

func TestListReportsEachLane(t *testing.T) {
	t.Parallel()
	m := newManager(t, newRepo(t))
	lanes := map[string]Lane{}
	for _, id := range []string{"clean", "dirty", "gone", "committed"} {
		l, err := m.Open(t.Context(), OpenOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		lanes[id] = l
	}
	writeFile(t, filepath.Join(lanes["dirty"].Worktree, "agent-work.txt"), "w\n")
	writeFile(t, filepath.Join(lanes["dirty"].Worktree, "README.md"), "changed\n")
	commitFile(t, lanes["committed"].Worktree, "c.txt", "c\n")
	if err := os.RemoveAll(lanes["gone"].Worktree); err != nil {
		t.Fatal(err)
	}

	infos, err := m.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]LaneInfo{
		"clean":     {State: StateClean, Changed: []string{}, WorktreeExists: true, KnownToGit: true},
		"dirty":     {State: StateDirty, Changed: []string{" M README.md", "?? agent-work.txt"}, WorktreeExists: true, KnownToGit: true},
		"gone":      {State: StateClean, Changed: []string{}, WorktreeExists: false, KnownToGit: true},
		"committed": {State: StateDirty, Changed: []string{}, CommitsAhead: 1, WorktreeExists: true, KnownToGit: true},
	}
	if len(infos) != len(want) {
		t.Fatalf("%d lanes listed, want %d", len(infos), len(want))
	}
	for i, info := range infos {
		if i > 0 && infos[i-1].ID >= info.ID {
			t.Errorf("not sorted by id: %q before %q", infos[i-1].ID, info.ID)
		}
		w := want[info.ID]
		if info.Lane != lanes[info.ID] || info.State != w.State || !slices.Equal(info.Changed, w.Changed) ||
			info.CommitsAhead != w.CommitsAhead || info.WorktreeExists != w.WorktreeExists || info.KnownToGit != w.KnownToGit || info.Error != "" {
			t.Errorf("%s: got %+v\nwant %+v", info.ID, info, w)
		}
	}
}

func TestListDoesNotTakeTheLock(t *testing.T) {
	t.Parallel()
	m := newManager(t, newRepo(t))
	if _, err := m.Open(t.Context(), OpenOptions{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	lock, err := LockRepo(t.Context(), m.repo)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Unlock() }()
	if infos, err := m.List(t.Context()); err != nil || len(infos) != 1 {
		t.Fatalf("List while locked = %+v, %v", infos, err)
	}
}
