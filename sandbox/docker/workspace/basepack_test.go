package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestSweepStalePacks: a pack directory whose run is gone (its owner lock
// free, or never taken and old) is removed; one a live run holds, one
// being made right now and anything not a pack stay.
func TestSweepStalePacks(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	mk := func(name string) string {
		t.Helper()
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pack-x.pack"), []byte("pack"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// A run killed with its pack: the owner file is there, nobody locks it.
	dead := mk(packDirPrefix + "dead")
	if err := os.WriteFile(filepath.Join(dead, packOwnerName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A live run's pack: its lock is held.
	live := mk(packDirPrefix + "live")
	owner, err := lockOwner(live)
	if err != nil {
		t.Fatal(err)
	}
	livePack := &basePack{Dir: live, owner: owner}
	// A pack being made: no owner file yet, and young.
	young := mk(packDirPrefix + "young")
	// One that never got its owner file, long ago.
	old := mk(packDirPrefix + "old")
	long := time.Now().Add(-2 * stalePackAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	other := mk("dirtywork-worker-other")
	if err := os.WriteFile(filepath.Join(other, packOwnerName), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	removed := SweepStalePacks(tmp)
	slices.Sort(removed)
	if want := []string{dead, old}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for _, dir := range []string{dead, old} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", dir, err)
		}
	}
	for _, dir := range []string{live, young, other} {
		if _, err := os.Stat(filepath.Join(dir, "pack-x.pack")); err != nil {
			t.Errorf("%s was touched: %v", dir, err)
		}
	}

	// Its run done, the live pack goes with its lock.
	livePack.Close()
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", live, err)
	}
	if removed := SweepStalePacks(tmp); len(removed) != 0 {
		t.Errorf("a second sweep removed %v", removed)
	}
}
