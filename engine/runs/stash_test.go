package runs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// stashLane makes a worktree-like directory holding .git and the named files.
func stashLane(t *testing.T, names ...string) string {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "dw-run")
	if err := os.MkdirAll(filepath.Join(wt, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range append(names, ".git", "sub/nested") {
		if err := os.WriteFile(filepath.Join(wt, n), []byte(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return wt
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestStashSetsAsideAllButGitAndRestores(t *testing.T) {
	t.Parallel()
	wt := stashLane(t, "a.txt", "b.txt")
	st, err := SetAside(wt, "new-run")
	if err != nil {
		t.Fatal(err)
	}
	if st.Path != wt+PreResumeMarker+"new-run" {
		t.Fatalf("stash at %s", st.Path)
	}
	if got := dirNames(t, wt); !slices.Equal(got, []string{".git"}) {
		t.Fatalf("lane holds %v after SetAside", got)
	}
	if got := dirNames(t, st.Path); !slices.Equal(got, []string{"a.txt", "b.txt", "sub"}) {
		t.Fatalf("stash holds %v", got)
	}
	if found, _ := PreResumeStashes(wt); !slices.Equal(found, []string{st.Path}) {
		t.Fatalf("PreResumeStashes = %v", found)
	}
	if err := st.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, wt); !slices.Equal(got, []string{".git", "a.txt", "b.txt", "sub"}) {
		t.Fatalf("lane holds %v after Restore", got)
	}
	if data, err := os.ReadFile(filepath.Join(wt, "sub", "nested")); err != nil || string(data) != "sub/nested" {
		t.Fatalf("nested file after Restore: %q %v", data, err)
	}
	if _, err := os.Lstat(st.Path); !os.IsNotExist(err) {
		t.Fatalf("the emptied stash is still there: %v", err)
	}
}

func TestStashDiscardRemovesIt(t *testing.T) {
	t.Parallel()
	wt := stashLane(t, "a.txt")
	st, err := SetAside(wt, "new-run")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(st.Path); !os.IsNotExist(err) {
		t.Fatalf("stash still there after Discard: %v", err)
	}
}

// A stash name already taken is someone else's: SetAside leaves it and
// the lane as they were.
func TestStashLeavesAForeignNameAlone(t *testing.T) {
	t.Parallel()
	wt := stashLane(t, "a.txt")
	foreign := wt + PreResumeMarker + "new-run"
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "theirs"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := SetAside(wt, "new-run"); err == nil {
		t.Fatal("SetAside took a name in use")
	}
	if got := dirNames(t, wt); !slices.Equal(got, []string{".git", "a.txt", "sub"}) {
		t.Fatalf("lane holds %v", got)
	}
	if got := dirNames(t, foreign); !slices.Equal(got, []string{"theirs"}) {
		t.Fatalf("foreign stash holds %v", got)
	}
}

// Restore keeps in the stash what it cannot move back, and the stash with
// it: the work is never lost.
func TestStashRestoreKeepsWhatCannotMove(t *testing.T) {
	t.Parallel()
	wt := stashLane(t, "a.txt", "b.txt")
	st, err := SetAside(wt, "new-run")
	if err != nil {
		t.Fatal(err)
	}
	// Something now occupies a.txt's place as a non-empty directory: the
	// rename back fails for it.
	if err := os.MkdirAll(filepath.Join(wt, "a.txt", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := st.Restore(); err == nil {
		t.Fatal("Restore reported success")
	}
	if got := dirNames(t, st.Path); !slices.Equal(got, []string{"a.txt"}) {
		t.Fatalf("stash holds %v, want the file that could not move", got)
	}
	if _, err := os.Stat(filepath.Join(wt, "b.txt")); err != nil {
		t.Fatalf("b.txt not restored: %v", err)
	}
}
