package fsops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// newListTree makes a directory with files, a subdirectory and links of
// every kind.
func newListTree(t *testing.T) (*FS, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "wt")
	buildTree(t, dir, map[string]string{"B.txt": "abc", "a.txt": "hello", "é.txt": ""})
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	for link, target := range map[string]string{
		"z-link-dir": "sub",
		"link-file":  "a.txt",
		"dangling":   "nope",
		"etc":        "/etc",
		"abs":        filepath.Join(dir, "a.txt"),
		"loop1":      "loop1",
	} {
		must(t, os.Symlink(target, filepath.Join(dir, link)))
	}
	return openTree(t, dir), dir
}

func TestListDir(t *testing.T) {
	f, dir := newListTree(t)
	all := strings.Join([]string{
		"B.txt  (3 bytes)",
		"a.txt  (5 bytes)",
		"abs  (5 bytes)",
		"dangling  (broken symlink)",
		"etc  (symlink to outside the worktree)",
		"link-file  (5 bytes)",
		"loop1  (broken symlink)",
		"sub/",
		"z-link-dir/",
		"é.txt  (0 bytes)",
	}, "\n")
	tests := []struct{ name, path, want string }{
		{"root sorted by code point", ".", all},
		{"blank path", "", all},
		{"absolute path inside", dir, all},
		{"empty directory", "sub", "(empty directory)"},
		{"link to a directory", "z-link-dir", "(empty directory)"},
		{"missing", "nope", "ERROR: cannot list 'nope': no such file or directory"},
		{"a file", "a.txt", "ERROR: cannot list 'a.txt': not a directory"},
		{"dotdot out", "../", "ERROR: Path '../' resolves outside the worktree (" + filepath.Dir(dir) + "). Use paths relative to the worktree root."},
		{"absolute outside", "/etc", "ERROR: Path '/etc' resolves outside the worktree (/etc). Use paths relative to the worktree root."},
		{"link to /etc", "etc", "ERROR: Path 'etc' resolves outside the worktree (/etc). Use paths relative to the worktree root."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.ListDir(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ListDir(%q) =\n%s\nwant\n%s", tt.path, got, tt.want)
			}
		})
	}
}

func TestListDirEntryLimit(t *testing.T) {
	f, _ := newListTree(t)
	want := "B.txt  (3 bytes)\na.txt  (5 bytes)\nabs  (5 bytes)\n[listing truncated at 3 entries]"
	if got, err := f.listDir(".", 3); err != nil || got != want {
		t.Fatalf("listDir(limit 3) =\n%s\nwant\n%s", got, want)
	}
	if got, _ := f.listDir(".", 10); strings.Contains(got, "truncated") {
		t.Fatalf("exactly the limit was marked truncated:\n%s", got)
	}
}

func TestListDirCapsInCharacters(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 600 {
		files[fmt.Sprintf("ééééééééé-%03d", i)] = ""
	}
	buildTree(t, dir, files)
	got, err := openTree(t, dir).ListDir(".")
	must(t, err)
	head, ok := strings.CutSuffix(got, "\n[output truncated at 8000 chars]")
	if !ok {
		t.Fatalf("no truncation note: %.80q…", got[len(got)-80:])
	}
	if n := utf8.RuneCountInString(head); n != listDirMaxChars {
		t.Fatalf("kept %d characters, want %d", n, listDirMaxChars)
	}
	if !strings.HasPrefix(head, "ééééééééé-000  (0 bytes)\nééééééééé-001  (0 bytes)\n") {
		t.Fatalf("listing starts %.60q", head)
	}
}

func TestListDirDefaultLimit(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range listDirMaxEntries + 1 {
		files[fmt.Sprintf("%04d", i)] = ""
	}
	buildTree(t, dir, files)
	f := openTree(t, dir)
	// 2000 rows alone pass the character cap, so the entry marker is cut
	// off with them: what shows is the first rows, in order.
	got, err := f.ListDir(".")
	must(t, err)
	if !strings.HasPrefix(got, "0000  (0 bytes)\n0001  (0 bytes)\n") || !strings.HasSuffix(got, "\n[output truncated at 8000 chars]") {
		t.Fatalf("ListDir of %d entries: %.40q … %.40q", listDirMaxEntries+1, got, got[len(got)-40:])
	}
}

// TestToolsOnAClosedRoot shows a tree gone from under the run is an
// error, not a result the model would be asked to act on.
func TestToolsOnAClosedRoot(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"a.txt": "needle\n"})
	root, err := os.OpenRoot(dir)
	must(t, err)
	must(t, root.Close())
	f := New(root, dir)
	if got, err := f.ListDir("."); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ListDir = %q, %v; want os.ErrClosed", got, err)
	}
	if got, err := f.Grep(t.Context(), "needle", ".", "", time.Minute); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Grep = %q, %v; want os.ErrClosed", got, err)
	}
}
