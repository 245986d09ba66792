package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A build's hash is remembered by what stat says of its file, and never
// taken for the file once it was replaced (as a build replaces it), even
// by one of the same length and modification time.
func TestToolboxHashIsRememberedUntilTheFileChanges(t *testing.T) {
	home := t.TempDir()
	t.Setenv("DIRTYWORK_HOME", home)
	path := filepath.Join(t.TempDir(), "dirtywork")
	if err := os.WriteFile(path, []byte("\x7fELF build one"), 0o755); err != nil {
		t.Fatal(err)
	}
	first, err := toolboxVolumeOf(Toolbox{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, toolboxSumName)); err != nil {
		t.Fatalf("no sum file: %v", err)
	}
	if key, size, ok := rememberedKey(path); !ok || key != first.key || size != first.size {
		t.Fatalf("remembered %q %d %v, want %q %d", key, size, ok, first.key, first.size)
	}
	again, _ := toolboxVolumeOf(Toolbox{Path: path})
	if again != first {
		t.Errorf("second look %+v, first %+v", again, first)
	}
	fi, _ := os.Stat(path)
	next := path + ".new"
	if err := os.WriteFile(next, []byte("\x7fELF build two"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(next, time.Time{}, fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	changed, _ := toolboxVolumeOf(Toolbox{Path: path})
	want, _ := toolboxVolumeOf(Toolbox{Data: []byte("\x7fELF build two")})
	if changed != want {
		t.Errorf("after the change %+v, want %+v", changed, want)
	}
}
