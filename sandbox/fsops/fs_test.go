package fsops

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// newTestFS makes a tree with a file, a directory, and links inside and
// out, and returns it with the path it is known by.
func newTestFS(t *testing.T) (*FS, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "wt")
	must(t, os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "f.txt"), []byte("x\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	must(t, os.Symlink("sub", filepath.Join(dir, "in")))
	must(t, os.Symlink("../..", filepath.Join(dir, "sub", "up")))
	must(t, os.Symlink("/etc", filepath.Join(dir, "etc")))
	must(t, os.Symlink(filepath.Join(dir, "sub", "f.txt"), filepath.Join(dir, "absin")))
	must(t, os.Symlink("loop2", filepath.Join(dir, "loop1")))
	must(t, os.Symlink("loop1", filepath.Join(dir, "loop2")))
	root, err := os.OpenRoot(dir)
	must(t, err)
	t.Cleanup(func() { _ = root.Close() })
	return New(root, dir), dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	f, dir := newTestFS(t)
	tests := []struct {
		name, given string
		writing     bool
		want        string // "" when refused
		outside     bool
		inGit       bool
	}{
		{"plain", "sub/f.txt", false, "sub/f.txt", false, false},
		{"dot slash and trailing slash", "./sub/", false, "sub", false, false},
		{"blank is root", "", false, ".", false, false},
		{"absolute inside", dir + "/sub/f.txt", false, "sub/f.txt", false, false},
		{"absolute outside", "/etc/passwd", false, "", true, false},
		{"dotdot out", "../x", false, "", true, false},
		{"dotdot back in", "sub/../sub/f.txt", false, "sub/f.txt", false, false},
		{"link inside", "in/f.txt", false, "sub/f.txt", false, false},
		{"absolute link inside", "absin", false, "sub/f.txt", false, false},
		{"link out relative", "sub/up/x", false, "", true, false},
		{"link out absolute", "etc/passwd", false, "", true, false},
		{"missing tail kept", "sub/new/dir/f", false, "sub/new/dir/f", false, false},
		{"through a file", "sub/f.txt/x", false, "sub/f.txt/x", false, false},
		{"write keeps final link", "in", true, "in", false, false},
		{"write resolves parent link", "in/g.txt", true, "sub/g.txt", false, false},
		{"write into .git", ".git/config", true, "", false, true},
		{"write .git itself", ".git", true, "", false, true},
		{"read .git allowed", ".git", false, ".git", false, false},
		{"write via link to outside", "etc/x", true, "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Resolve(tt.given, tt.writing)
			var out *errOutside
			var git *errInGit
			switch {
			case tt.outside:
				if !errors.As(err, &out) {
					t.Fatalf("Resolve(%q) = %q, %v; want outside", tt.given, got, err)
				}
			case tt.inGit:
				if !errors.As(err, &git) {
					t.Fatalf("Resolve(%q) = %q, %v; want .git refusal", tt.given, got, err)
				}
			case err != nil || got != tt.want:
				t.Fatalf("Resolve(%q) = %q, %v; want %q", tt.given, got, err, tt.want)
			}
		})
	}
	if _, err := f.Resolve("loop1", false); err == nil {
		t.Fatal("symlink loop resolved")
	}
	_, err := f.Resolve("../x", false)
	want := "Path '../x' resolves outside the worktree (" + filepath.Dir(dir) + "/x). Use paths relative to the worktree root."
	if err == nil || err.Error() != want {
		t.Fatalf("message = %v\nwant %s", err, want)
	}
}
