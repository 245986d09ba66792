package runs

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestReconcileRemovesTemporaryDirsOfKilledRuns: what runs killed before
// their cleanup left in the temporary directory (a host worker repository,
// a docker base pack), their owner lock free, goes with reconcile; one a
// live run holds stays, and a dry run removes nothing. Not parallel: it
// sets TMPDIR for the process.
func TestReconcileRemovesTemporaryDirsOfKilledRuns(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	e := newEnv(t)
	mk := func(name string) string {
		t.Helper()
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".owner"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	worker := mk("dirtywork-worker-killed")
	pack := mk("dirtywork-pack-killed")
	live := mk("dirtywork-pack-live")
	f, err := os.Open(filepath.Join(live, ".owner"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	if _, err := e.store.Reconcile(t.Context(), ReconcileOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{worker, pack, live} {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("a dry run removed %s: %v", dir, err)
		}
	}
	rep, err := e.store.Reconcile(t.Context(), ReconcileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{worker, pack} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", dir, err)
		}
		if !slices.Contains(rep.Removed, dir) {
			t.Errorf("the report does not name %s as removed: %v", dir, rep.Removed)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live run's pack was removed: %v", err)
	}
}
