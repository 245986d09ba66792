package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentLaneCycles runs four managers (each with its own lock
// descriptor, as separate processes would have) opening and closing lanes
// in one repository at once; every third lane is left dirty.
func TestConcurrentLaneCycles(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	const workers, cycles = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*cycles)
	for w := range workers {
		m := newManager(t, dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range cycles {
				id := fmt.Sprintf("w%d/c%d", w, c)
				lane, err := m.Open(t.Context(), OpenOptions{ID: id})
				if err != nil {
					errs <- fmt.Errorf("open %s: %w", id, err)
					return
				}
				dirty := (w*cycles+c)%3 == 0
				if dirty {
					if err := os.WriteFile(filepath.Join(lane.Worktree, "work.txt"), []byte(id), 0o644); err != nil {
						errs <- err
						return
					}
				}
				res, err := m.Close(t.Context(), id)
				if err != nil {
					errs <- fmt.Errorf("close %s: %w", id, err)
					return
				}
				if want := map[bool]LaneStatus{true: StatusRetainedDirty, false: StatusRemoved}[dirty]; res.Status != want {
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
	m := newManager(t, dir)
	lanes := manifestLanes(t, m)
	wantDirty := 0
	for i := range workers * cycles {
		if i%3 == 0 {
			wantDirty++
		}
	}
	if len(lanes) != wantDirty {
		t.Errorf("manifest has %d lanes, want the %d dirty ones", len(lanes), wantDirty)
	}
	for _, l := range lanes {
		if l.Status != StatusRetainedDirty {
			t.Errorf("lane %s is %s", l.ID, l.Status)
		}
	}
	if n := worktreeCount(t, dir); n != 1+wantDirty {
		t.Errorf("git lists %d worktrees, want %d", n, 1+wantDirty)
	}
	branches := gitT(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/dirtywork/")
	if n := len(strings.Fields(branches)); n != wantDirty {
		t.Errorf("%d lane branches left, want %d:\n%s", n, wantDirty, branches)
	}
}
