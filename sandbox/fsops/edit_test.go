package fsops

import (
	"path/filepath"
	"strings"
	"testing"
)

// toolCall is one in-place tool call on a path.
type toolCall struct {
	tool string
	call func(f *FS, path string) (string, error)
}

// inPlaceTools calls each in-place tool with arguments that would apply to
// a file holding "a\n".
var inPlaceTools = []toolCall{
	{"edit_file", func(f *FS, p string) (string, error) { return f.EditFile(p, "a", "b") }},
	{"insert_before", func(f *FS, p string) (string, error) { return f.InsertText(p, "a", "b", false) }},
	{"insert_after", func(f *FS, p string) (string, error) { return f.InsertText(p, "a", "b", true) }},
	{"apply_edits", func(f *FS, p string) (string, error) { return f.ApplyEdits(p, []Edit{{Old: "a", New: "b"}}) }},
}

func TestEditFile(t *testing.T) {
	tests := []struct {
		name, before, old, new string
		want, after            string // after "" means unchanged
	}{
		{
			"replaces the one occurrence", "one\ntwo\nthree\n", "two", "CHANGED",
			"Edited f.py: +1 -1 (removed 1 non-blank line)\n--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n one\n-two\n+CHANGED\n three", "one\nCHANGED\nthree\n",
		},
		{
			"0 times", "one\ntwo\n", "four", "x",
			"ERROR: old_string occurs 0 times in f.py; it must occur exactly once. Include more surrounding context to make it unique.", "",
		},
		{
			"2 times", "x = 1\nx = 1\n", "x = 1", "x = 2",
			"ERROR: old_string occurs 2 times in f.py; it must occur exactly once. Include more surrounding context to make it unique.", "",
		},
		{
			"occurrences do not overlap", "aaa\n", "aa", "b",
			"Edited f.py: +1 -1 (removed 1 non-blank line)\n--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-aaa\n+ba", "ba\n",
		},
		{
			"empty old_string in a file counts every position", "ab\n", "", "x",
			"ERROR: old_string occurs 4 times in f.py; it must occur exactly once. Include more surrounding context to make it unique.", "",
		},
		{
			"empty old_string in an empty file sets it", "", "", "hello\n",
			"Edited f.py: +1 -0\n--- a/f.py\n+++ b/f.py\n@@ -0,0 +1 @@\n+hello", "hello\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTestFS(t)
			putFile(t, dir, "f.py", tt.before)
			got, err := f.EditFile("f.py", tt.old, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("EditFile =\n%q\nwant\n%q", got, tt.want)
			}
			want := tt.after
			if want == "" {
				want = tt.before
			}
			if on := fileText(t, filepath.Join(dir, "f.py")); on != want {
				t.Fatalf("file holds %q, want %q", on, want)
			}
		})
	}
}

func TestInPlaceToolRefusals(t *testing.T) {
	f, dir := newTestFS(t)
	base := filepath.Dir(dir)
	putFile(t, dir, "bin.dat", "a\n\xff\n")
	putFile(t, dir, "big.txt", "a\n"+strings.Repeat("x", maxFileBytes))
	putFile(t, dir, ".git/HEAD", "a\n")
	putFile(t, base, "x", "a\n")
	makeFIFO(t, dir, "pipe")
	outside := func(given, resolved string) string {
		return "ERROR: Path '" + given + "' resolves outside the worktree (" + resolved + "). Use paths relative to the worktree root."
	}
	tests := []struct {
		name, path string
		want       func(tool string) string
	}{
		{"not utf-8", "bin.dat", func(tool string) string {
			return "ERROR: bin.dat is not valid UTF-8 text; " + tool + " only works on text files"
		}},
		{"final symlink", "absin", func(string) string {
			return "ERROR: 'absin' is a symlink; writing through a symlink is not allowed even when its target is inside the worktree"
		}},
		{"fifo", "pipe", func(string) string {
			return "ERROR: cannot read 'pipe': '" + dir + "/pipe' is not a regular file (refusing FIFO/device/socket)"
		}},
		{"over the read limit", "big.txt", func(string) string {
			return "ERROR: cannot read 'big.txt': '" + dir + "/big.txt' is 5242882 bytes, over the 5242880-byte read limit; use grep to search it instead of reading it whole"
		}},
		{"missing", "nope.txt", func(string) string { return "ERROR: cannot read 'nope.txt': no such file or directory" }},
		{"inside .git", ".git/HEAD", func(string) string { return "ERROR: Writing inside .git/ is not allowed (got '.git/HEAD')." }},
		{"dotdot escape", "../x", func(string) string { return outside("../x", base+"/x") }},
		{"link to ..", "sub/up/x", func(string) string { return outside("sub/up/x", base+"/x") }},
		{"link to /etc", "etc/hostname", func(string) string { return outside("etc/hostname", "/etc/hostname") }},
	}
	snapshot := map[string]string{}
	for _, p := range []string{"bin.dat", "big.txt", ".git/HEAD", "sub/f.txt", "../x"} {
		snapshot[p] = fileText(t, filepath.Join(dir, p))
	}
	for _, tt := range tests {
		for _, tc := range inPlaceTools {
			t.Run(tt.name+"/"+tc.tool, func(t *testing.T) {
				got, err := within(t, func() (string, error) { return tc.call(f, tt.path) })
				if err != nil {
					t.Fatal(err)
				}
				if want := tt.want(tc.tool); got != want {
					t.Fatalf("%s(%q) =\n%s\nwant\n%s", tc.tool, tt.path, got, want)
				}
			})
		}
	}
	for p, was := range snapshot {
		if now := fileText(t, filepath.Join(dir, p)); now != was {
			t.Errorf("%s changed after refused calls", p)
		}
	}
}

func TestInPlaceResultOverTheLimit(t *testing.T) {
	before := strings.Repeat("x", maxFileBytes-20) + "\nanchor\n" // 5242868 bytes
	grow := strings.Repeat("y", 30)
	for _, tc := range []toolCall{
		{"edit_file", func(f *FS, p string) (string, error) { return f.EditFile(p, "anchor", "anchor"+grow) }},
		{"insert_after", func(f *FS, p string) (string, error) { return f.InsertText(p, "anchor", grow[:29], true) }},
		{"apply_edits", func(f *FS, p string) (string, error) {
			return f.ApplyEdits(p, []Edit{{Old: "anchor", New: "anchor" + grow}})
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			f, dir := newTestFS(t)
			putFile(t, dir, "f.txt", before)
			got, err := tc.call(f, "f.txt")
			if err != nil {
				t.Fatal(err)
			}
			if want := "ERROR: result is 5242898 bytes, over the 5242880-byte write limit; nothing was written"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			if fileText(t, filepath.Join(dir, "f.txt")) != before {
				t.Fatal("the file changed")
			}
		})
	}
}

func TestInsertLines(t *testing.T) {
	tests := []struct {
		name, text, anchor, insert string
		after                      bool
		want                       string
	}{
		{"before a middle line", "a\nb\nc\n", "b", "X", false, "a\nX\nb\nc\n"},
		{"after a middle line", "a\nb\nc\n", "b", "X", true, "a\nb\nX\nc\n"},
		{"before the first line", "a\nb\n", "a", "X", false, "X\na\nb\n"},
		{"anchor mid-line, before", "one two\nthree\n", "two", "X", false, "X\none two\nthree\n"},
		{"anchor mid-line, after", "one two\nthree\n", "two", "X", true, "one two\nX\nthree\n"},
		{"after a last line without newline", "a\nb", "b", "X", true, "a\nb\nX\n"},
		{"before a last line without newline", "a\nb", "b", "X", false, "a\nX\nb"},
		{"text keeps its own newline", "a\nb\n", "a", "X\n", true, "a\nX\nb\n"},
		{"several lines of text", "a\nb\n", "a", "X\nY", true, "a\nX\nY\nb\n"},
		{"anchor over two lines, before", "a\nb\nc\n", "a\nb", "X", false, "X\na\nb\nc\n"},
		{"anchor over two lines, after", "a\nb\nc\n", "a\nb", "X", true, "a\nb\nX\nc\n"},
		{"anchor ending in its newline, after", "a\nb\nc\n", "b\n", "X", true, "a\nb\nX\nc\n"},
		{"anchor starting with a newline, before", "a\nb\nc\n", "\nb", "X", false, "X\na\nb\nc\n"},
		{"empty file, empty anchor, before", "", "", "X", false, "X\n"},
		{"empty file, empty anchor, after", "", "", "X", true, "X\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := insertLines(tt.text, tt.anchor, tt.insert, tt.after); got != tt.want {
				t.Fatalf("insertLines(%q, %q, %q, %v) = %q, want %q", tt.text, tt.anchor, tt.insert, tt.after, got, tt.want)
			}
		})
	}
}

func TestInsertText(t *testing.T) {
	tests := []struct {
		name, file, before, anchor string
		after                      bool
		want, result               string // result "" means unchanged
	}{
		{
			"after", "f.txt", "a\nb\nc\n", "b", true,
			"Inserted into f.txt: +1 -0\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n a\n b\n+X\n c", "a\nb\nX\nc\n",
		},
		{
			"before", "f.txt", "a\nb\nc\n", "b", false,
			"Inserted into f.txt: +1 -0\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,4 @@\n a\n+X\n b\n c", "a\nX\nb\nc\n",
		},
		{
			"after a last line without newline", "f.txt", "a\nb", "b", true,
			"Inserted into f.txt: +2 -1 (removed 1 non-blank line)\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+X", "a\nb\nX\n",
		},
		{
			"anchor twice", "dup.txt", "x\nx\n", "x", true,
			"ERROR: anchor occurs 2 times in dup.txt; it must occur exactly once. Include more surrounding context to make it unique.", "",
		},
		{
			"anchor missing", "dup.txt", "x\nx\n", "y", false,
			"ERROR: anchor occurs 0 times in dup.txt; it must occur exactly once. Include more surrounding context to make it unique.", "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTestFS(t)
			putFile(t, dir, tt.file, tt.before)
			got, err := f.InsertText(tt.file, tt.anchor, "X", tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("InsertText =\n%q\nwant\n%q", got, tt.want)
			}
			want := tt.result
			if want == "" {
				want = tt.before
			}
			if on := fileText(t, filepath.Join(dir, tt.file)); on != want {
				t.Fatalf("file holds %q, want %q", on, want)
			}
		})
	}
}

func TestApplyEdits(t *testing.T) {
	const before = "a\nb\nc\n"
	tests := []struct {
		name   string
		edits  []Edit
		want   string
		result string // "" means unchanged
	}{
		{
			"each edit sees the ones before",
			[]Edit{{"a", "A1"}, {"A1", "A2"}, {"c", "C"}},
			"Applied 3 edits to f.txt: +2 -2 (removed 2 non-blank lines)\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-a\n+A2\n b\n-c\n+C", "A2\nb\nC\n",
		},
		{
			"singular verb",
			[]Edit{{"b\n", ""}},
			"Applied 1 edit to f.txt: +0 -1 (removed 1 non-blank line)\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,2 @@\n a\n-b\n c", "a\nc\n",
		},
		{
			"empty old",
			[]Edit{{"a", "x"}, {"", "y"}, {"c", "z"}},
			"ERROR: edit 2 of 3: old text is empty; no edits applied", "",
		},
		{
			"first edit finds nothing",
			[]Edit{{"q", "x"}, {"a", "y"}},
			"ERROR: edit 1 of 2: old text occurs 0 times in f.txt; it must occur exactly once; no edits applied", "",
		},
		{
			"a later edit finds nothing after the earlier ones",
			[]Edit{{"a", "z"}, {"a", "y"}},
			"ERROR: edit 2 of 2: old text occurs 0 times in f.txt; it must occur exactly once (after edits 1..1 are applied); no edits applied", "",
		},
		{
			"third edit names edits 1..2",
			[]Edit{{"a", "x"}, {"b", "y"}, {"a", "w"}},
			"ERROR: edit 3 of 3: old text occurs 0 times in f.txt; it must occur exactly once (after edits 1..2 are applied); no edits applied", "",
		},
		{
			"an earlier edit makes a later one ambiguous",
			[]Edit{{"a", "b"}, {"b", "c"}},
			"ERROR: edit 2 of 2: old text occurs 2 times in f.txt; it must occur exactly once. Include more surrounding context to make it unique; no edits applied", "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, dir := newTestFS(t)
			putFile(t, dir, "f.txt", before)
			got, err := f.ApplyEdits("f.txt", tt.edits)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("ApplyEdits =\n%q\nwant\n%q", got, tt.want)
			}
			want := tt.result
			if want == "" {
				want = before
			}
			if on := fileText(t, filepath.Join(dir, "f.txt")); on != want {
				t.Fatalf("file holds %q, want %q", on, want)
			}
		})
	}
}
