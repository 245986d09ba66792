package fsops

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteFile(t *testing.T) {
	f, dir := newTestFS(t)
	putFile(t, dir, "f.py", "one\ntwo\nthree\n")
	putFile(t, dir, "same.txt", "same\n")
	putFile(t, dir, "bin.dat", "\xff\xfe\n")
	putFile(t, dir, "huge.txt", strings.Repeat("x", maxFileBytes+1))
	tests := []struct {
		name, path, content string
		want                string
		file                string // where the content must land, relative to dir
	}{
		{"creates parents", "sub/new/deep/f.txt", "hello", "Wrote 5 bytes to sub/new/deep/f.txt (new file, 1 line)", "sub/new/deep/f.txt"},
		{"plural lines", "two.txt", "a\nb\n", "Wrote 4 bytes to two.txt (new file, 2 lines)", "two.txt"},
		{"empty content", "e.txt", "", "Wrote 0 bytes to e.txt (new file, 0 lines)", "e.txt"},
		{"lines counted like splitlines", "cr.txt", "a\rb", "Wrote 3 bytes to cr.txt (new file, 2 lines)", "cr.txt"},
		{"bytes, not characters", "u.txt", "é", "Wrote 2 bytes to u.txt (new file, 1 line)", "u.txt"},
		{
			"overwrite describes the change", "f.py", "one\nCHANGED\nthree\n",
			"Wrote f.py: +1 -1 (removed 1 non-blank line)\n--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n one\n-two\n+CHANGED\n three", "f.py",
		},
		{"unchanged content", "same.txt", "same\n", "Wrote same.txt: +0 -0", "same.txt"},
		{"previous text not utf-8 reads as new", "bin.dat", "ok\n", "Wrote 3 bytes to bin.dat (new file, 1 line)", "bin.dat"},
		{"previous text over the limit reads as new", "huge.txt", "small\n", "Wrote 6 bytes to huge.txt (new file, 1 line)", "huge.txt"},
		{"through a parent link", "in/g.txt", "g\n", "Wrote 2 bytes to in/g.txt (new file, 1 line)", "sub/g.txt"},
		{"absolute path inside", dir + "/abs.txt", "a\n", "Wrote 2 bytes to " + dir + "/abs.txt (new file, 1 line)", "abs.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.WriteFile(tt.path, tt.content)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("WriteFile(%q) =\n%s\nwant\n%s", tt.path, got, tt.want)
			}
			if on := fileText(t, filepath.Join(dir, tt.file)); on != tt.content {
				t.Fatalf("%s holds %q, want %q", tt.file, on, tt.content)
			}
		})
	}
	fi, err := os.Stat(filepath.Join(dir, "two.txt"))
	must(t, err)
	if perm := fi.Mode().Perm(); perm&0o600 != 0o600 || perm&0o111 != 0 {
		t.Fatalf("new file mode %v, want 0644 less the umask", perm)
	}
}

func TestWriteFileRefusals(t *testing.T) {
	f, dir := newTestFS(t)
	base := filepath.Dir(dir)
	makeFIFO(t, dir, "pipe")
	makeFIFO(t, dir, "readpipe")
	// A reader on readpipe lets a write open succeed; the regular-file
	// check must still refuse it.
	reader, err := os.OpenFile(filepath.Join(dir, "readpipe"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	must(t, err)
	t.Cleanup(func() { _ = reader.Close() })
	must(t, os.Symlink("nowhere.txt", filepath.Join(dir, "dangle")))
	outside := func(given, resolved string) string {
		return "ERROR: Path '" + given + "' resolves outside the worktree (" + resolved + "). Use paths relative to the worktree root."
	}
	symlink := func(given string) string {
		return "ERROR: '" + given + "' is a symlink; writing through a symlink is not allowed even when its target is inside the worktree"
	}
	tests := []struct {
		name, path, content, want string
		mustNotExist              string // a path that must still be missing
	}{
		{"into .git", ".git/config", "x", "ERROR: Writing inside .git/ is not allowed (got '.git/config').", filepath.Join(dir, ".git/config")},
		{"fifo without a reader", "pipe", "x", "ERROR: 'pipe' is not a regular file (refusing FIFO/device/socket)", ""},
		{"fifo with a reader", "readpipe", "x", "ERROR: cannot write 'readpipe': '" + dir + "/readpipe' is not a regular file (refusing FIFO/device/socket)", ""},
		{"final symlink to an inside file", "absin", "x", symlink("absin"), ""},
		{"final symlink to an inside dir", "in", "x", symlink("in"), ""},
		{"dangling final symlink", "dangle", "x", symlink("dangle"), filepath.Join(dir, "nowhere.txt")},
		{
			"over 5 MiB", "big.txt", strings.Repeat("x", maxFileBytes+1),
			"ERROR: content is 5242881 bytes, over the 5242880-byte write limit; write the file in smaller pieces", filepath.Join(dir, "big.txt"),
		},
		{"dotdot escape", "../x", "x", outside("../x", base+"/x"), filepath.Join(base, "x")},
		{"absolute outside", base + "/abs.txt", "x", outside(base+"/abs.txt", base+"/abs.txt"), filepath.Join(base, "abs.txt")},
		{"link to /etc", "etc/dirtywork-test", "x", outside("etc/dirtywork-test", "/etc/dirtywork-test"), "/etc/dirtywork-test"},
		{"link to ..", "sub/up/x", "x", outside("sub/up/x", base+"/x"), filepath.Join(base, "x")},
		{"directory", "sub", "x", "ERROR: cannot write 'sub': is a directory", ""},
		{"parent is a file", "sub/f.txt/x", "x", "ERROR: cannot write 'sub/f.txt/x': file exists", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := within(t, func() (string, error) { return f.WriteFile(tt.path, tt.content) })
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("WriteFile(%q) =\n%s\nwant\n%s", tt.path, got, tt.want)
			}
			if tt.mustNotExist != "" {
				if _, err := os.Lstat(tt.mustNotExist); !os.IsNotExist(err) {
					t.Fatalf("%s exists after a refused write (%v)", tt.mustNotExist, err)
				}
			}
		})
	}
	if got := fileText(t, filepath.Join(dir, "sub/f.txt")); got != "x\n" {
		t.Fatalf("a symlink's target was written through: %q", got)
	}
}
