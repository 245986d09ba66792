package transcript

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The reserve is real space (blocks, not a hole), and Release gives it
// back once; a nil reserve (none could be taken) releases nothing.
func TestReserveSpaceHoldsRealBlocksUntilReleased(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := ReserveSpace(dir)
	if r == nil {
		t.Fatal("no reserve on an empty file system")
	}
	fi, err := os.Lstat(filepath.Join(dir, ReserveName))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Size() != reserveBytes || st.Blocks*512 < reserveBytes || fi.Mode().Perm() != 0o600 {
		t.Errorf("reserve: %d bytes, %d blocks, mode %v; want %d bytes of real blocks, 0600", fi.Size(), st.Blocks, fi.Mode(), reserveBytes)
	}
	r.Release()
	if _, err := os.Lstat(filepath.Join(dir, ReserveName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Release: %v", err)
	}
	r.Release()
	var none *Reserve
	none.Release()
	// A name already taken (a link planted there) is never written through.
	other := t.TempDir()
	target := filepath.Join(other, "target")
	if err := os.Symlink(target, filepath.Join(other, ReserveName)); err != nil {
		t.Fatal(err)
	}
	if ReserveSpace(other) != nil {
		t.Error("a reserve was taken over a link")
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was written: %v", err)
	}
}
