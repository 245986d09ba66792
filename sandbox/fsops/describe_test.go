package fsops

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// lines is n lines made by format from the numbers 1..n.
func lines(n int, format string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format, i)
	}
	return b.String()
}

func TestDescribeChange(t *testing.T) {
	// The expected texts are what the original's describe_change (Python
	// difflib) gives for the same arguments.
	tests := []struct {
		name, verb, path, before, after string
		want                            string
	}{
		{
			"pinned", "Edited", "f.py", "one\ntwo\nthree\n", "one\nCHANGED\nthree\n",
			"Edited f.py: +1 -1 (removed 1 non-blank line)\n--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n one\n-two\n+CHANGED\n three",
		},
		{
			"pure insert", "Inserted into", "f.txt", "a\nb\n", "a\nNEW\nb\n",
			"Inserted into f.txt: +1 -0\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,3 @@\n a\n+NEW\n b",
		},
		{
			"plural note", "Edited", "f.txt", "a\nb\nc\n", "a\n",
			"Edited f.txt: +0 -2 (removed 2 non-blank lines)\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1 @@\n a\n-b\n-c",
		},
		{
			"blank lines removed, no note", "Edited", "f.txt", "a\n\n  \t\nb\n", "a\nb\n",
			"Edited f.txt: +0 -2\n--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,2 @@\n a\n-\n-  \t\n b",
		},
		{
			"python whitespace is blank", "Edited", "f.txt", "a\n\u3000\n\u001c\u001f\nb\n", "a\nb\n",
			"Edited f.txt: +0 -2\n--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,2 @@\n a\n-\u3000\n-\u001c\u001f\n b",
		},
		{
			"newline added at the end", "Edited", "f", "x", "x\n",
			"Edited f: +1 -1 (removed 1 non-blank line)\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x",
		},
		{
			"newline removed at the end", "Edited", "f", "x\n", "x",
			"Edited f: +1 -1 (removed 1 non-blank line)\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file",
		},
		{
			"both sides lack the newline", "Edited", "f", "a\nb", "a\nc",
			"Edited f: +1 -1 (removed 1 non-blank line)\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file",
		},
		{
			"form feed is no line break", "Edited", "f", "a\fb\nc\n", "a\fb\nd\n",
			"Edited f: +1 -1 (removed 1 non-blank line)\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\fb\n-c\n+d",
		},
		{
			"from empty", "Wrote", "f", "", "a\n",
			"Wrote f: +1 -0\n--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+a",
		},
		{
			"to empty", "Wrote", "f", "a\n", "",
			"Wrote f: +0 -1 (removed 1 non-blank line)\n--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a",
		},
		{"identical", "Wrote", "f", "same\n", "same\n", "Wrote f: +0 -0"},
		{"both empty", "Wrote", "f", "", "", "Wrote f: +0 -0"},
		{
			"crlf keeps the carriage return", "Edited", "w.txt", "a\r\nb\r\n", "a\r\nc\r\n",
			"Edited w.txt: +1 -1 (removed 1 non-blank line)\n--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r",
		},
		{
			"four equal lines join two hunks", "Edited", "f", lines(10, "l%d\n"), "l1\nl2\nX\nl4\nl5\nl6\nl7\nY\nl9\nl10\n",
			"Edited f: +2 -2 (removed 2 non-blank lines)\n--- a/f\n+++ b/f\n@@ -1,10 +1,10 @@\n l1\n l2\n-l3\n+X\n l4\n l5\n l6\n l7\n-l8\n+Y\n l9\n l10",
		},
		{
			"five equal lines split two hunks", "Edited", "f", lines(12, "l%d\n"), "l1\nl2\nX\nl4\nl5\nl6\nl7\nl8\nY\nl10\nl11\nl12\n",
			"Edited f: +2 -2 (removed 2 non-blank lines)\n--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n l1\n l2\n-l3\n+X\n l4\n l5\n@@ -7,5 +7,5 @@\n l7\n l8\n-l9\n+Y\n l10\n l11",
		},
		{
			"insert at the start", "Edited", "f", "a\nb\nc\nd\n", "x\na\nb\nc\nd\n",
			"Edited f: +1 -0\n--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n+x\n a\n b",
		},
		{
			"delete at the end", "Edited", "f", lines(6, "l%d\n"), lines(5, "l%d\n"),
			"Edited f: +0 -1 (removed 1 non-blank line)\n--- a/f\n+++ b/f\n@@ -4,3 +4,2 @@\n l4\n l5\n-l6",
		},
		{
			"plural verb", "Applied 2 edits to", "f", "a\nb\nc\n", "A\nb\nC\n",
			"Applied 2 edits to f: +2 -2 (removed 2 non-blank lines)\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n-c\n+C",
		},
		{
			"replace is all deletions then all insertions", "Wrote", "f", "a\na\na\na\na\nx", "b\nb\nb\nb\nb\ny",
			"Wrote f: +6 -6 (removed 6 non-blank lines)\n--- a/f\n+++ b/f\n@@ -1,6 +1,6 @@\n-a\n-a\n-a\n-a\n-a\n-x\n\\ No newline at end of file\n+b\n+b\n+b\n+b\n+b\n+y\n\\ No newline at end of file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DescribeChange(tt.verb, tt.path, tt.before, tt.after); got != tt.want {
				t.Fatalf("DescribeChange =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestDescribeChangeTruncates(t *testing.T) {
	tests := []struct {
		name, before, after string
		head                string
		bodyLines           int // kept lines, the note excluded
		note                string
	}{
		{
			"at 40 lines", lines(60, "l%d\n"), lines(60, "n%d\n"),
			"Wrote f: +60 -60 (removed 60 non-blank lines)", 40, "[diff truncated: 83 more lines]",
		},
		{
			"at 3000 characters", lines(20, "%03d"+strings.Repeat("a", 197)+"\n"), lines(20, "%03d"+strings.Repeat("b", 197)+"\n"),
			"Wrote f: +20 -20 (removed 20 non-blank lines)", 17, "[diff truncated: 26 more lines]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Split(DescribeChange("Wrote", "f", tt.before, tt.after), "\n")
			if got[0] != tt.head {
				t.Fatalf("head %q, want %q", got[0], tt.head)
			}
			body := got[1:]
			if len(body) != tt.bodyLines+1 || len(body) > 41 {
				t.Fatalf("%d body lines, want %d kept and the note", len(body), tt.bodyLines)
			}
			if last := body[len(body)-1]; last != tt.note {
				t.Fatalf("last line %q, want %q", last, tt.note)
			}
			chars := 0
			for _, l := range body[:len(body)-1] {
				chars += len([]rune(l)) + 1
			}
			if chars > 3000 {
				t.Fatalf("kept %d characters, over 3000", chars)
			}
			if body[0] != "--- a/f" || body[1] != "+++ b/f" || !strings.HasPrefix(body[2], "@@ -1,") {
				t.Fatalf("diff starts %q", body[:3])
			}
		})
	}
}

func TestDescribeChangeTooLarge(t *testing.T) {
	big := lines(20001, "line %d\n")
	tests := []struct {
		name, before, after, want string
	}{
		{"new side too large", "", big, "Wrote big.txt: 20001 lines (diff omitted: file too large)"},
		{"old side too large", big, "a\n", "Wrote big.txt: 1 lines (diff omitted: file too large)"},
		{"a last line without newline counts", "", big + "tail", "Wrote big.txt: 20002 lines (diff omitted: file too large)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got := DescribeChange("Wrote", "big.txt", tt.before, tt.after)
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
	// 20000 lines is not too large: the diff is shown.
	limit := lines(20000, "line %d\n")
	got := DescribeChange("Edited", "f", limit, strings.Replace(limit, "line 7\n", "seven\n", 1))
	if !strings.HasPrefix(got, "Edited f: +1 -1 (removed 1 non-blank line)\n--- a/f\n+++ b/f\n@@ -5,5 +5,5 @@\n") {
		t.Fatalf("20000 lines: %.200q", got)
	}
}

// TestDescribeChangeBigRewrites bounds the diff's work on the changes a
// shortest-edit search is slowest on: no common line at all, and many
// repeated lines in a different order.
func TestDescribeChangeBigRewrites(t *testing.T) {
	repeated := func(n, mod int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "r%d\n", (i*7)%mod)
		}
		return b.String()
	}
	tests := []struct {
		name, before, after string
	}{
		{"nothing in common", lines(20000, "old %d\n"), lines(20000, "new %d\n")},
		{"repeated lines reordered", repeated(20000, 50), repeated(20000, 61)},
		{"every other line changed", lines(20000, "l%d\n"), strings.ReplaceAll(lines(20000, "l%d\n"), "0\n", "0 changed\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got := DescribeChange("Wrote", "f", tt.before, tt.after)
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
			var added, deleted int
			if _, err := fmt.Sscanf(got, "Wrote f: +%d -%d", &added, &deleted); err != nil {
				t.Fatalf("head %.80q: %v", got, err)
			}
			a, b := splitKeepNewlines(tt.before), splitKeepNewlines(tt.after)
			checkEditScript(t, a, b, diffLines(a, b))
			if added > len(b) || deleted > len(a) {
				t.Fatalf("+%d -%d for %d → %d lines", added, deleted, len(a), len(b))
			}
		})
	}
}

// checkEditScript fails unless ops walk both lists from start to end in
// order, with equal stretches holding equal lines.
func checkEditScript(t *testing.T, a, b []string, ops []diffOp) {
	t.Helper()
	i, j := 0, 0
	for _, op := range ops {
		if op.i1 != i || op.j1 != j || op.i2 < op.i1 || op.j2 < op.j1 {
			t.Fatalf("op %+v does not continue at (%d, %d)", op, i, j)
		}
		if op.equal && (op.i2-op.i1 != op.j2-op.j1 || !slices.Equal(a[op.i1:op.i2], b[op.j1:op.j2])) {
			t.Fatalf("equal op %+v holds different lines", op)
		}
		i, j = op.i2, op.j2
	}
	if i != len(a) || j != len(b) {
		t.Fatalf("ops end at (%d, %d), want (%d, %d)", i, j, len(a), len(b))
	}
}

// lcsLength is the length of a longest common subsequence, by dynamic
// programming: the reference a shortest edit is checked against.
func lcsLength(a, b []string) int {
	row := make([]int, len(b)+1)
	for i := range a {
		prev := 0
		for j := range b {
			cur := row[j+1]
			if a[i] == b[j] {
				row[j+1] = prev + 1
			} else {
				row[j+1] = max(row[j+1], row[j])
			}
			prev = cur
		}
	}
	return row[len(b)]
}

func TestDiffLinesIsAShortestEdit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a\n", "b\n", "c\n", "\n", "d", "x\fy\n"}
	random := func() []string {
		out := make([]string, rng.IntN(15))
		for i := range out {
			out[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return out
	}
	for range 2000 {
		a, b := random(), random()
		ops := diffLines(a, b)
		checkEditScript(t, a, b, ops)
		kept := 0
		for _, op := range ops {
			if op.equal {
				kept += op.i2 - op.i1
			}
		}
		if want := lcsLength(a, b); kept != want {
			t.Fatalf("diff of %q → %q keeps %d lines, a shortest edit keeps %d", a, b, kept, want)
		}
	}
}

func TestMatchLinesFallbackIsAValidEdit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		n, m := rng.IntN(60), rng.IntN(60)
		a, b := make([]int32, n), make([]int32, m)
		for i := range a {
			a[i] = rng.Int32N(40)
		}
		for i := range b {
			b[i] = rng.Int32N(40)
		}
		// A cost of 3 forces the anchored fallback on most pairs.
		at, bt := 0, 0
		for _, r := range matchLines(a, b, 3) {
			if r.i < at || r.j < bt || r.n < 1 || r.i+r.n > n || r.j+r.n > m || !slices.Equal(a[r.i:r.i+r.n], b[r.j:r.j+r.n]) {
				t.Fatalf("bad run %+v after (%d, %d) for %v → %v", r, at, bt, a, b)
			}
			at, bt = r.i+r.n, r.j+r.n
		}
	}
}

func TestMatchLinesFallbackKeepsAnchors(t *testing.T) {
	// Lines 1..3 are unique on both sides; between them too many changes
	// for a cost of 2, so the stretches are replaced and the anchors kept.
	a := []int32{1, 10, 11, 12, 2, 13, 14, 15, 3}
	b := []int32{1, 20, 21, 22, 2, 23, 24, 25, 3}
	want := []lineMatch{{0, 0, 1}, {4, 4, 1}, {8, 8, 1}}
	if got := matchLines(a, b, 2); !slices.Equal(got, want) {
		t.Fatalf("matchLines = %v, want %v", got, want)
	}
}

func BenchmarkDescribeChange20k(b *testing.B) {
	before := lines(20000, "\tvalue_%d = compute(%d)\n")
	cases := []struct{ name, after string }{
		{"one edit in the middle", strings.Replace(before, "value_10000 =", "value_10000 := ", 1)},
		{"two edits far apart", strings.Replace(strings.Replace(before, "value_100 =", "v100 =", 1), "value_19900 =", "v19900 =", 1)},
		{"rewrite", lines(20000, "\tother_%d = compute(%d)\n")},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				DescribeChange("Edited", "big.go", before, c.after)
			}
		})
	}
}
