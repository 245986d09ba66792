package volstore

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The file system is sized so that what it holds for the worker is the
// byte cap and a little more (Slack, and what rounding to groups
// adds), its inodes the entry cap and one more besides the tree's own
// directory, and the image costs the host next to nothing until it is
// written.
func TestFileSystemIsSizedToTheCaps(t *testing.T) {
	if _, err := findTool("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 is not installed")
	}
	dir := t.TempDir()
	for _, tc := range []struct{ bytes, entries int64 }{
		{1 << 20, 100}, {50 << 20, 300}, {64 << 20, 5000}, {300 << 20, 0}, {50 << 20, 200000}, {2048 << 20, 200000}, {10 << 30, 200000},
	} {
		image := filepath.Join(dir, "v.ext4")
		start := time.Now()
		sb, err := makeFS(t.Context(), image, tc.bytes, tc.entries)
		if err != nil {
			t.Fatalf("%d bytes, %d entries: %v", tc.bytes, tc.entries, err)
		}
		took := time.Since(start)
		want := uint64((tc.bytes + Slack) / fsBlock)
		avail := sb.available()
		if avail < want || avail > want+want/100+512 {
			t.Errorf("%d MB: %d blocks free to the worker, want %d to %d", tc.bytes>>20, avail, want, want+want/100+512)
		}
		if tc.entries > 0 {
			groups := (sb.blocks + 32767) / 32768
			if free := int64(sb.freeInodes); free < tc.entries+2 || free > tc.entries+2+int64(16*groups)+16 {
				t.Errorf("%d entries: %d inodes free", tc.entries, free)
			}
		}
		var st syscall.Stat_t
		if err := syscall.Stat(image, &st); err != nil {
			t.Fatal(err)
		}
		t.Logf("%5d MB, %6d entries: image %d MB, %d KB of it on disk, %d blocks and %d inodes free, made in %v",
			tc.bytes>>20, tc.entries, st.Size>>20, st.Blocks/2, avail, sb.freeInodes, took.Round(time.Millisecond))
		if st.Blocks*512 > 8<<20 {
			t.Errorf("the image takes %d bytes of the host's disk", st.Blocks*512)
		}
		if err := os.Remove(image); err != nil {
			t.Fatal(err)
		}
	}
}
