package fsops

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// putFile writes content to rel under dir, creating its parents.
func putFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), 0o644))
}

// fileText is the content of the file at p.
func fileText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

// makeFIFO makes a named pipe at rel under dir.
func makeFIFO(t *testing.T, dir, rel string) {
	t.Helper()
	must(t, syscall.Mkfifo(filepath.Join(dir, rel), 0o644))
}

// within runs call and fails the test unless it returns within 5 s, so a
// tool that blocks on a FIFO fails instead of hanging the suite.
func within(t *testing.T, call func() (string, error)) (string, error) {
	t.Helper()
	type outcome struct {
		s   string
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s, err := call()
		done <- outcome{s, err}
	}()
	select {
	case o := <-done:
		return o.s, o.err
	case <-time.After(5 * time.Second):
		t.Fatal("the tool call did not return within 5 s")
		return "", nil
	}
}

// numbered renders lines first..last of "l<i>" lines as read_file does.
func numbered(first, last int) string {
	var rows []string
	for i := first; i <= last; i++ {
		rows = append(rows, fmt.Sprintf("%6d\tl%d", i, i))
	}
	return strings.Join(rows, "\n")
}

// lLines is n lines "l1\n" … "l<n>\n".
func lLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "l%d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	f, dir := newTestFS(t)
	putFile(t, dir, "main.py", "def main():\n    pass\n")
	putFile(t, dir, "ten.txt", lLines(10))
	putFile(t, dir, "450.txt", lLines(450))
	putFile(t, dir, "empty.txt", "")
	putFile(t, dir, "breaks.txt", "a\rb\vc\u2028d\r\ne")
	putFile(t, dir, "bad.txt", "ok\xff\n\xe2\x82x\n")
	putFile(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
	tests := []struct {
		name          string
		path          string
		offset, limit int
		want          string
	}{
		{"numbered from one", "main.py", 0, 400, "     1\tdef main():\n     2\t    pass"},
		{"window with note", "ten.txt", 2, 3, numbered(3, 5) + "\n[showing lines 3-5 of 10; re-run with offset=5 for more]"},
		{"last window has no note", "ten.txt", 8, 5, numbered(9, 10)},
		{"window ending at the last line", "ten.txt", 7, 3, numbered(8, 10)},
		{"offset past the end", "ten.txt", 50, 5, ""},
		{"negative offset reads from the start", "ten.txt", -3, 2, numbered(1, 2) + "\n[showing lines 1-2 of 10; re-run with offset=2 for more]"},
		{"zero limit is the default 400", "450.txt", 0, 0, numbered(1, 400) + "\n[showing lines 1-400 of 450; re-run with offset=400 for more]"},
		{"negative limit is the default 400", "450.txt", 10, -1, numbered(11, 410) + "\n[showing lines 11-410 of 450; re-run with offset=410 for more]"},
		{"huge limit does not overflow", "ten.txt", 1, math.MaxInt, numbered(2, 10)},
		{"empty file", "empty.txt", 0, 400, ""},
		{"python line breaks", "breaks.txt", 0, 400, "     1\ta\n     2\tb\n     3\tc\n     4\td\n     5\te"},
		{"invalid utf-8 replaced", "bad.txt", 0, 400, "     1\tok\uFFFD\n     2\t\uFFFDx"},
		{"through an in-tree link", "in/f.txt", 0, 400, "     1\tx"},
		{"through an absolute in-tree link", "absin", 0, 400, "     1\tx"},
		{"absolute path inside", dir + "/ten.txt", 9, 1, "    10\tl10"},
		{"reading .git is allowed", ".git/HEAD", 0, 400, "     1\tref: refs/heads/main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.ReadFile(tt.path, tt.offset, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ReadFile(%q, %d, %d) =\n%q\nwant\n%q", tt.path, tt.offset, tt.limit, got, tt.want)
			}
		})
	}
}

func TestReadFileRefusals(t *testing.T) {
	f, dir := newTestFS(t)
	base := filepath.Dir(dir)
	makeFIFO(t, dir, "pipe")
	putFile(t, dir, "big.txt", strings.Repeat("x", maxFileBytes+1))
	outside := func(given, resolved string) string {
		return "ERROR: Path '" + given + "' resolves outside the worktree (" + resolved + "). Use paths relative to the worktree root."
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing", "nope.txt", "ERROR: cannot read 'nope.txt': no such file or directory"},
		{"dotdot escape", "../x", outside("../x", base+"/x")},
		{"absolute outside", "/etc/passwd", outside("/etc/passwd", "/etc/passwd")},
		{"link to /etc", "etc/passwd", outside("etc/passwd", "/etc/passwd")},
		{"link to ..", "sub/up/x", outside("sub/up/x", base+"/x")},
		{"directory", "sub", "ERROR: cannot read 'sub': '" + dir + "/sub' is a directory; use list_dir to see what it holds"},
		{"the root", "", "ERROR: cannot read '': '" + dir + "' is a directory; use list_dir to see what it holds"},
		{"a NUL", "a\x00b", "ERROR: the path 'a\\0b' contains a NUL byte (shown as \\0); no file name can hold one"},
		{"fifo", "pipe", "ERROR: cannot read 'pipe': '" + dir + "/pipe' is not a regular file (refusing FIFO/device/socket)"},
		{"over 5 MiB", "big.txt", "ERROR: cannot read 'big.txt': '" + dir + "/big.txt' is 5242881 bytes, over the 5242880-byte read limit; use grep to search it instead of reading it whole"},
		{"symlink loop", "loop1", "ERROR: cannot resolve 'loop1': too many levels of symbolic links"},
		{"through a file", "sub/f.txt/x", "ERROR: cannot read 'sub/f.txt/x': not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := within(t, func() (string, error) { return f.ReadFile(tt.path, 0, 400) })
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ReadFile(%q) =\n%s\nwant\n%s", tt.path, got, tt.want)
			}
		})
	}
}

func TestReadFileAtTheSizeLimit(t *testing.T) {
	f, dir := newTestFS(t)
	putFile(t, dir, "max.txt", strings.Repeat("x", maxFileBytes))
	got, err := f.ReadFile("max.txt", 0, 400)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "     1\txxx") {
		t.Fatalf("a file of exactly 5242880 bytes was refused: %.100s", got)
	}
}

func TestReadFileCapsAt8000Chars(t *testing.T) {
	const note = "\n[output truncated at 8000 chars — re-run with offset/limit to see more]"
	tests := []struct {
		name, content string
		limit         int
	}{
		{"one long line", strings.Repeat("x", 50000), 400},
		{"multibyte characters are counted, not bytes", strings.Repeat("é", 50000), 400},
		{"many lines under a huge limit", lLines(100000), math.MaxInt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTestFS(t)
			putFile(t, dir, "long.txt", tt.content)
			got, err := f.ReadFile("long.txt", 0, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			body, ok := strings.CutSuffix(got, note)
			if !ok {
				t.Fatalf("no truncation note: ...%q", got[max(0, len(got)-120):])
			}
			if n := utf8.RuneCountInString(body); n != 8000 || !utf8.ValidString(body) {
				t.Fatalf("kept %d characters (valid %v), want 8000", n, utf8.ValidString(body))
			}
			if !strings.HasPrefix(body, "     1\t") {
				t.Fatalf("body starts %q", body[:20])
			}
		})
	}
}

func TestDecodeLossy(t *testing.T) {
	// Expected values are Python's bytes.decode("utf-8", "replace").
	tests := []struct{ in, want string }{
		{"a\xffb", "a\uFFFDb"},
		{"\xe2\x82x", "\uFFFDx"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"\xc0\xaf", "\uFFFD\uFFFD"},
		{"\xf0\x9f\x98", "\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xe0\x80\xaf", "\uFFFD\uFFFD\uFFFD"},
		{"\xf0\x9f\x98\x80\x80", "\U0001F600\uFFFD"},
		{"kept \uFFFD as is", "kept \uFFFD as is"},
	}
	for _, tt := range tests {
		if got := decodeLossy([]byte(tt.in)); got != tt.want {
			t.Errorf("decodeLossy(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestClosedRootEndsTheRun(t *testing.T) {
	f, dir := newTestFS(t)
	putFile(t, dir, "a.txt", "a\n")
	must(t, f.Root().Close())
	calls := map[string]func() (string, error){
		"read_file":    func() (string, error) { return f.ReadFile("a.txt", 0, 400) },
		"write_file":   func() (string, error) { return f.WriteFile("a.txt", "b\n") },
		"edit_file":    func() (string, error) { return f.EditFile("a.txt", "a", "b") },
		"insert_after": func() (string, error) { return f.InsertText("a.txt", "a", "b", true) },
		"apply_edits":  func() (string, error) { return f.ApplyEdits("a.txt", []Edit{{Old: "a", New: "b"}}) },
	}
	for name, call := range calls {
		got, err := call()
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s on a closed root = %q, %v; want an error wrapping os.ErrClosed", name, got, err)
		}
	}
	if got := fileText(t, filepath.Join(dir, "a.txt")); got != "a\n" {
		t.Fatalf("file changed to %q", got)
	}
}

// TestRacesAreWorded: an EINVAL or os.Root's race errors, what a path
// changed meanwhile surfaces as, reach the model as a sentence.
func TestRacesAreWorded(t *testing.T) {
	for _, err := range []error{
		&os.PathError{Op: "readlinkat", Path: "x", Err: syscall.EINVAL},
		errors.New("statat race"),
	} {
		got := osFailure("read", "x", err).Error()
		if strings.Contains(got, "invalid argument") || strings.Contains(got, "statat") || !strings.Contains(got, "changed while") {
			t.Errorf("%v is worded %q", err, got)
		}
	}
}
