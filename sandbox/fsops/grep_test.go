package fsops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// buildTree writes files (slash-separated path → content) under dir.
func buildTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// openTree opens dir as an FS known by its own path.
func openTree(t *testing.T, dir string) *FS {
	t.Helper()
	root, err := os.OpenRoot(dir)
	must(t, err)
	t.Cleanup(func() { _ = root.Close() })
	return New(root, dir)
}

// newGrepTree makes a tree with every kind of entry grep must skip or
// search, and links that lead outside it to files that match too.
func newGrepTree(t *testing.T) (*FS, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "wt")
	buildTree(t, base, map[string]string{"secret.txt": "needle outside\n"})
	buildTree(t, dir, map[string]string{
		".gitignore":        "*.log\n!keep.log\nignored/\n",
		".git/info/exclude": "excluded.txt\n",
		".git/config":       "needle in .git\n",
		".hidden/h.txt":     "needle hidden\n",
		".dotfile":          "needle dot\n",
		"a.txt":             "needle one\nno\nNeedle two\nneedle three\r\n",
		"b.log":             "needle\n",
		"keep.log":          "needle\n",
		"ignored/x.txt":     "needle\n",
		"excluded.txt":      "needle\n",
		"bin.dat":           "needle\x00\n",
		"long.txt": strings.Repeat("needle ", 60) + "\n" +
			"needle" + strings.Repeat("x", 294) + "\n" +
			"needle" + strings.Repeat("é", 294) + "\n" +
			"needle" + strings.Repeat("é", 295) + "\n",
		"sub/.gitignore":  "*.md\n!readme.md\n",
		"sub/c.go":        "package c // needle\n",
		"sub/notes.md":    "needle\n",
		"sub/readme.md":   "needle\n",
		"sub/skip.log":    "needle\n",
		"sub/deeper/d.go": "needle\n",
		"z/bad.txt":       "needle \xff\n",
		"z/ü.txt":         "ünïcode needle\n",
	})
	must(t, os.Symlink("/etc", filepath.Join(dir, "etc")))
	must(t, os.Symlink("../secret.txt", filepath.Join(dir, "outfile")))
	must(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "absfile")))
	must(t, os.Symlink("..", filepath.Join(dir, "up")))
	must(t, os.Symlink("a.txt", filepath.Join(dir, "inlink")))
	must(t, os.Symlink("sub", filepath.Join(dir, "sublink")))
	return openTree(t, dir), dir
}

func TestGrep(t *testing.T) {
	f, dir := newGrepTree(t)
	wantAll := strings.Join([]string{
		"a.txt:1:needle one",
		"a.txt:4:needle three",
		"keep.log:1:needle",
		"long.txt:1:[Omitted long line with 60 matches]",
		"long.txt:2:needle" + strings.Repeat("x", 294),
		"long.txt:3:needle" + strings.Repeat("é", 294),
		"long.txt:4:[Omitted long line with 1 matches]",
		"sub/c.go:1:package c // needle",
		"sub/deeper/d.go:1:needle",
		"sub/readme.md:1:needle",
		"z/bad.txt:1:needle \uFFFD",
		"z/ü.txt:1:ünïcode needle",
	}, "\n")
	tests := []struct {
		name, pattern, path, glob, want string
	}{
		{"whole tree skips hidden, ignored, binary and links", "needle", ".", "", wantAll},
		{"blank path is the root", "needle", "", "", wantAll},
		{"absolute path inside", "needle", dir, "", wantAll},
		{"no matches", "haystack", ".", "", "No matches found."},
		{"anchors apply per line, CR not part of it", "three$", ".", "", "a.txt:4:needle three"},
		{"case-sensitive RE2", "^Ne+dle", ".", "", "a.txt:3:Needle two"},
		{"glob on base names", "needle", ".", "*.go", "sub/c.go:1:package c // needle\nsub/deeper/d.go:1:needle"},
		{"glob with a path", "needle", ".", "sub/*.go", "sub/c.go:1:package c // needle"},
		{"glob alternatives", "needle", ".", "*.{go,md}", "sub/c.go:1:package c // needle\nsub/deeper/d.go:1:needle\nsub/readme.md:1:needle"},
		{"negated glob prunes a directory", "needle", ".", "!sub", strings.Join([]string{
			"a.txt:1:needle one", "a.txt:4:needle three", "keep.log:1:needle",
			"long.txt:1:[Omitted long line with 60 matches]",
			"long.txt:2:needle" + strings.Repeat("x", 294),
			"long.txt:3:needle" + strings.Repeat("é", 294),
			"long.txt:4:[Omitted long line with 1 matches]",
			"z/bad.txt:1:needle \uFFFD", "z/ü.txt:1:ünïcode needle",
		}, "\n")},
		{"subdirectory keeps the root's rules", "needle", "sub", "", "sub/c.go:1:package c // needle\nsub/deeper/d.go:1:needle\nsub/readme.md:1:needle"},
		{"a link to a directory is resolved first", "needle", "sublink", "*.go", "sub/c.go:1:package c // needle\nsub/deeper/d.go:1:needle"},
		{"explicit file in an ignored directory", "needle", "ignored/x.txt", "", "ignored/x.txt:1:needle"},
		{"explicit hidden file", "needle", ".hidden/h.txt", "", ".hidden/h.txt:1:needle hidden"},
		{"explicit file ignores the glob", "needle", "a.txt", "*.go", "a.txt:1:needle one\na.txt:4:needle three"},
		{"explicit link to a file inside", "two", "inlink", "", "a.txt:3:Needle two"},
		{"explicit binary file", "needle", "bin.dat", "", "ERROR: grep failed: 'bin.dat': binary file (NUL byte); not searched"},
		{"missing path", "needle", "nope", "", "ERROR: grep failed: 'nope': no such file or directory"},
		{"invalid pattern", "(", ".", "", "ERROR: grep failed: error parsing regexp: missing closing ): `(`"},
		{"dotdot out", "needle", "../", "", "ERROR: Path '../' resolves outside the worktree (" + filepath.Dir(dir) + "). Use paths relative to the worktree root."},
		{"absolute outside", "needle", "/etc", "", "ERROR: Path '/etc' resolves outside the worktree (/etc). Use paths relative to the worktree root."},
		{"link to /etc", "root", "etc", "", "ERROR: Path 'etc' resolves outside the worktree (/etc). Use paths relative to the worktree root."},
		{"link out of the tree", "needle", "outfile", "", "ERROR: Path 'outfile' resolves outside the worktree (" + filepath.Join(filepath.Dir(dir), "secret.txt") + "). Use paths relative to the worktree root."},
		{"through a link up", "needle", "up/secret.txt", "", "ERROR: Path 'up/secret.txt' resolves outside the worktree (" + filepath.Join(filepath.Dir(dir), "secret.txt") + "). Use paths relative to the worktree root."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Grep(t.Context(), tt.pattern, tt.path, tt.glob, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Grep(%q, %q, %q) =\n%s\nwant\n%s", tt.pattern, tt.path, tt.glob, got, tt.want)
			}
		})
	}
}

func TestGrepFailureReasonIsCapped(t *testing.T) {
	f, _ := newGrepTree(t)
	got, err := f.Grep(t.Context(), "("+strings.Repeat("a", 1000), ".", "", time.Minute)
	must(t, err)
	reason, ok := strings.CutPrefix(got, "ERROR: grep failed: ")
	if !ok || utf8.RuneCountInString(reason) != grepMaxReason {
		t.Fatalf("result %.80q… has a %d-character reason, want %d", got, utf8.RuneCountInString(reason), grepMaxReason)
	}
}

func TestGrepCapsInCharacters(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for range 3000 {
		b.WriteString("ééé needle\n")
	}
	buildTree(t, dir, map[string]string{"many.txt": b.String(), "zzz.txt": "needle\n"})
	got, err := openTree(t, dir).Grep(t.Context(), "needle", ".", "", time.Minute)
	must(t, err)
	note := "\n[output truncated at 8000 chars — narrow the pattern or path for full results]"
	head, ok := strings.CutSuffix(got, note)
	if !ok {
		t.Fatalf("no truncation note at the end of %.100q…", got[len(got)-100:])
	}
	if n := utf8.RuneCountInString(head); n != grepMaxChars {
		t.Fatalf("kept %d characters, want %d", n, grepMaxChars)
	}
	if !strings.HasPrefix(head, "many.txt:1:ééé needle\nmany.txt:2:ééé needle\n") {
		t.Fatalf("output starts %.60q", head)
	}
	if strings.Contains(head, "zzz.txt") {
		t.Fatal("collection went on past the cap")
	}
}

func TestGrepTimeout(t *testing.T) {
	f, _ := newGrepTree(t)
	got, err := f.Grep(t.Context(), "needle", ".", "", time.Nanosecond)
	must(t, err)
	if got != "ERROR: grep timed out after 0.000000001s — narrow the pattern or path." {
		t.Fatalf("1ns timeout: %q", got)
	}
	if got := grepTimedOut(30 * time.Second); got != "ERROR: grep timed out after 30s — narrow the pattern or path." {
		t.Fatalf("30 s timeout text: %q", got)
	}
}

// TestGrepTimeoutInsideAFile shows a long file does not hold the search
// past its deadline: the scan checks it every grepCheckEvery lines.
func TestGrepTimeoutInsideAFile(t *testing.T) {
	s := &grepSearch{re: regexp.MustCompile("y"), deadline: time.Now().Add(-time.Second)}
	_, err := s.matches(t.Context(), "f", []byte(strings.Repeat("x\n", 5*grepCheckEvery)))
	if !errors.Is(err, errGrepTimeout) {
		t.Fatalf("scan of %d lines past the deadline: %v", 5*grepCheckEvery, err)
	}
	if _, err := s.matches(t.Context(), "f", []byte(strings.Repeat("x\n", grepCheckEvery-1))); err != nil {
		t.Fatalf("scan of fewer lines than a check interval: %v", err)
	}
}

func TestGrepCancelled(t *testing.T) {
	f, _ := newGrepTree(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got, err := f.Grep(ctx, "needle", ".", "", time.Minute)
	if !errors.Is(err, context.Canceled) || got != "" {
		t.Fatalf("Grep on a cancelled context = %q, %v; want \"\", context.Canceled", got, err)
	}
}

func TestGrepSkipsLargeFiles(t *testing.T) {
	dir := t.TempDir()
	big := "needle\n" + strings.Repeat("x", grepMaxFileBytes)
	buildTree(t, dir, map[string]string{"big.txt": big, "small.txt": "needle\n"})
	f := openTree(t, dir)
	got, err := f.Grep(t.Context(), "needle", ".", "", time.Minute)
	must(t, err)
	if got != "small.txt:1:needle" {
		t.Fatalf("walk: %q", got)
	}
	got, err = f.Grep(t.Context(), "needle", "big.txt", "", time.Minute)
	must(t, err)
	want := fmt.Sprintf("ERROR: grep failed: 'big.txt': over the %d-byte grep limit; not searched", grepMaxFileBytes)
	if got != want {
		t.Fatalf("explicit: %q", got)
	}
}

// BenchmarkGrep20k searches the reference scenario's 20,000-file tree for
// a line-anchored pattern that ten files match.
func BenchmarkGrep20k(b *testing.B) {
	dir := grepFixture20k(b)
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	f := New(root, dir)
	for b.Loop() {
		out, err := f.Grep(b.Context(), "^id = 1[0-9]$", "src", "", 30*time.Second)
		if err != nil || strings.Count(out, "\n") != 9 {
			b.Fatalf("%q %v", out, err)
		}
	}
}

// BenchmarkReadFloor20k is grep's floor on BenchmarkGrep20k's tree: only
// the system calls every search must make (list each directory, open,
// stat, read and close each file), with as many goroutines as grep uses
// and no matching at all. Grep cannot take less than this on the machine.
func BenchmarkReadFloor20k(b *testing.B) {
	dir := grepFixture20k(b)
	buf := make([][]byte, runtime.GOMAXPROCS(0))
	for i := range buf {
		buf[i] = make([]byte, 64<<10)
	}
	for b.Loop() {
		src, err := os.ReadDir(filepath.Join(dir, "src"))
		if err != nil {
			b.Fatal(err)
		}
		read := 0
		for _, d := range src {
			path := filepath.Join(dir, "src", d.Name())
			entries, err := os.ReadDir(path)
			if err != nil {
				b.Fatal(err)
			}
			dfd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			var next, done atomic.Int64
			var wg sync.WaitGroup
			for w := range len(buf) {
				wg.Go(func() {
					for {
						i := int(next.Add(1)) - 1
						if i >= len(entries) {
							return
						}
						fd, err := unix.Openat(dfd, entries[i].Name(), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
						if err != nil {
							continue
						}
						var st unix.Stat_t
						_ = unix.Fstat(fd, &st)
						if n, _ := unix.Read(fd, buf[w]); n > 0 {
							done.Add(1)
						}
						_ = unix.Close(fd)
					}
				})
			}
			wg.Wait()
			_ = unix.Close(dfd)
			read += int(done.Load())
		}
		if read != 20000 {
			b.Fatalf("read %d files, want 20000", read)
		}
	}
}

// grepFixture20k is the perf scenario's tree of 20,000 small files, 50
// to a directory.
func grepFixture20k(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	for i := range 20000 {
		d := filepath.Join(dir, "src", fmt.Sprintf("d%03d", i/50))
		if i%50 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body := fmt.Sprintf("# fixture file %05d\nid = %d\nname = \"item-%d\"\nTODO: refine item %d\n"+
			"lorem ipsum dolor sit amet, consectetur adipiscing elit\nstatus = \"open\"\n", i, i, i, i)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}
