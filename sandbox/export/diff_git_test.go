package export

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// lines joins numbered lines "<prefix><i>\n" for i in [from, to).
func lines(prefix string, from, to int) string {
	var sb strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&sb, "%s%d\n", prefix, i)
	}
	return sb.String()
}

const goSource = `package demo

import "fmt"

func first(a int) int {
	if a > 0 {
		return a
	}
	return -a
}

func second(b string) string {
	return b + b
}

type thing struct {
	name string
	size int
}

func (t *thing) describe() string {
	return fmt.Sprintf("%s:%d", t.name, t.size)
}
`

// gitCases are before/after trees whose diff git prints one way only.
func gitCases() []struct {
	name          string
	before, after treeSpec
} {
	long := strings.Repeat("deeply/nested/", 6) + "a_file_with_a_rather_long_name.txt"
	return []struct {
		name          string
		before, after treeSpec
	}{
		{"nothing changed", treeSpec{"a.txt": {body: "a\n"}}, treeSpec{"a.txt": {body: "a\n"}}},
		{"add", treeSpec{"a.txt": {body: "a\n"}}, treeSpec{"a.txt": {body: "a\n"}, "b.txt": {body: "one\ntwo\n"}}},
		{"delete", treeSpec{"a.txt": {body: "a\n"}, "b.txt": {body: "one\ntwo\n"}}, treeSpec{"a.txt": {body: "a\n"}}},
		{
			"modify with function names",
			treeSpec{"demo.go": {body: goSource}},
			treeSpec{"demo.go": {body: strings.Replace(strings.Replace(goSource, "return b + b", "return b + b + b", 1), "size int", "size int64", 1)}},
		},
		{
			"insert a function (indent heuristic)",
			treeSpec{"demo.go": {body: goSource}},
			treeSpec{"demo.go": {body: strings.Replace(goSource, "func second", "func extra() {\n\treturn\n}\n\nfunc second", 1)}},
		},
		{
			"rename is delete plus add",
			treeSpec{"old.txt": {body: lines("l", 0, 10)}},
			treeSpec{"new.txt": {body: lines("l", 0, 10)}},
		},
		{
			"binary add modify delete",
			treeSpec{"b1.bin": {body: "\x00\x01\x02"}, "b2.bin": {body: "bin\x00ary"}},
			treeSpec{"b1.bin": {body: "\x00\x01\x02\x03"}, "b3.bin": {body: "new\x00file, twelve"}},
		},
		{
			"exec bit only",
			treeSpec{"run.sh": {body: "#!/bin/sh\necho hi\n"}, "data.bin": {body: "\x00x"}},
			treeSpec{"run.sh": {body: "#!/bin/sh\necho hi\n", mode: ModeExecutable}, "data.bin": {body: "\x00x", mode: ModeExecutable}},
		},
		{
			"exec bit and content",
			treeSpec{"run.sh": {body: "#!/bin/sh\necho hi\n", mode: ModeExecutable}},
			treeSpec{"run.sh": {body: "#!/bin/sh\necho bye\n"}},
		},
		{
			"symlinks: add, retarget, type changes",
			treeSpec{"l1": {body: "a.txt", mode: ModeSymlink}, "f": {body: "was a file\n"}, "l2": {body: "x", mode: ModeSymlink}, "a.txt": {body: "a\n"}},
			treeSpec{"l1": {body: "b.txt", mode: ModeSymlink}, "f": {body: "a.txt", mode: ModeSymlink}, "l2": {body: "now a file\n"}, "a.txt": {body: "a\n"}, "l3": {body: "../outside", mode: ModeSymlink}},
		},
		{
			"file becomes a directory",
			treeSpec{"q": {body: "x\n"}, "q.txt": {body: "y\n"}},
			treeSpec{"q/x": {body: "in\n"}, "q.txt": {body: "y\n"}},
		},
		{
			"long path names",
			treeSpec{long: {body: "1\n"}, "short": {body: "s\n"}},
			treeSpec{long: {body: "2\n"}, "short": {body: "t\n"}, long + ".more": {body: lines("m", 0, 3)}},
		},
		{
			"many lines scale the bar",
			treeSpec{"big.txt": {body: lines("x", 0, 400)}, "small.txt": {body: "a\nb\nc\n"}},
			treeSpec{"big.txt": {body: lines("y", 0, 300) + lines("x", 200, 400)}, "small.txt": {body: "a\nB\nc\n"}, "huge.txt": {body: lines("h", 0, 1234)}},
		},
		{
			"single line changes scale up",
			treeSpec{"one": {body: "a\n"}, "two": {body: "a\nb\n"}},
			treeSpec{"one": {body: "b\n"}, "two": {body: "c\n"}},
		},
		{
			"newline at end of file",
			treeSpec{"a": {body: "x\ny"}, "b": {body: "x\ny\n"}, "c": {body: "x\ny"}},
			treeSpec{"a": {body: "x\ny\n"}, "b": {body: "x\ny"}, "c": {body: "x\ny\nz"}},
		},
		{
			"empty files",
			treeSpec{"gone": {body: ""}, "grows": {body: ""}},
			treeSpec{"new": {body: ""}, "grows": {body: "now\n"}},
		},
		{
			"names that need quoting",
			treeSpec{"plain": {body: "p\n"}},
			treeSpec{"plain": {body: "p\n"}, "with space.txt": {body: "s\n"}, "caf\u00e9.txt": {body: "c\n"}, "quo\"te\\d": {body: "q\n"}, "tab\there": {body: "t\n"}},
		},
		{
			"hunks merge and split",
			treeSpec{"f.txt": {body: lines("line ", 0, 60)}},
			treeSpec{"f.txt": {body: lines("line ", 0, 5) + "changed\n" + lines("line ", 6, 11) + "changed\n" + lines("line ", 12, 40) + "new\n" + lines("line ", 40, 60)}},
		},
		{
			"only deletions and only insertions summary",
			treeSpec{"a": {body: "1\n2\n3\n"}},
			treeSpec{"a": {body: "1\n"}},
		},
		{
			"binary only summary",
			treeSpec{},
			treeSpec{"z.bin": {body: "\x00"}},
		},
	}
}

// TestDiffMatchesGit checks the stat, patch and file list against real
// git on the same trees, byte for byte.
func TestDiffMatchesGit(t *testing.T) {
	for _, tc := range gitCases() {
		t.Run(tc.name, func(t *testing.T) {
			compareWithGit(t, tc.before, tc.after)
		})
	}
}

// TestDiffMatchesGitOnRandomEdits stresses the line diff where many
// scripts are equally short: files of few distinct lines (braces, blank
// lines, repeats) edited at random. Git's choice among them is specific;
// the patch must still be git's.
func TestDiffMatchesGitOnRandomEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := []string{"{", "}", "", "\treturn x", "x++", "if x {", "\t}", "// note", "end"}
	randomFile := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = vocab[rng.IntN(len(vocab))]
		}
		return out
	}
	edit := func(in []string) []string {
		out := append([]string(nil), in...)
		for range 1 + rng.IntN(8) {
			pos := rng.IntN(len(out) + 1)
			switch rng.IntN(3) {
			case 0:
				out = append(out[:pos], append(randomFile(1+rng.IntN(4)), out[pos:]...)...)
			case 1:
				if pos < len(out) {
					out = append(out[:pos], out[min(len(out), pos+1+rng.IntN(4)):]...)
				}
			default:
				if pos < len(out) {
					out[pos] = vocab[rng.IntN(len(vocab))]
				}
			}
		}
		return out
	}
	before, after := treeSpec{}, treeSpec{}
	for i := range 40 {
		a := randomFile(20 + rng.IntN(300))
		b := edit(a)
		if i%2 == 0 {
			b = edit(b)
		}
		name := fmt.Sprintf("f%02d.txt", i)
		before[name] = spec{body: strings.Join(a, "\n") + "\n"}
		after[name] = spec{body: strings.Join(b, "\n") + "\n"}
	}
	// One file past xdiff's cost limits, so its heuristics decide.
	big := randomFile(6000)
	bigAfter := big
	for range 30 {
		bigAfter = edit(bigAfter)
	}
	before["big.txt"] = spec{body: strings.Join(big, "\n") + "\n"}
	after["big.txt"] = spec{body: strings.Join(append(randomFile(700), bigAfter...), "\n") + "\n"}
	compareWithGit(t, before, after)
}

func compareWithGit(t *testing.T, before, after treeSpec) {
	t.Helper()
	repo := newGitRepo(t)
	repo.commit(before, "before")
	repo.commit(after, "after")
	wantStat := repo.git("diff", "--no-renames", "--stat", "HEAD~", "HEAD")
	wantPatch := repo.git("diff", "--no-renames", "HEAD~", "HEAD")
	wantFiles := strings.TrimSuffix(repo.git("diff", "--no-renames", "--name-only", "-z", "HEAD~", "HEAD"), "\x00")

	d, patch := diffOf(t, before, after, DiffOptions{MaxPatchMB: 64})
	if d.Stat != wantStat {
		t.Errorf("stat differs from git\n--- ours\n%s--- git\n%s", d.Stat, wantStat)
	}
	if patch != wantPatch {
		t.Errorf("patch differs from git\n%s", firstDifference(patch, wantPatch))
	}
	got := strings.Join(d.Files, "\x00")
	if got != wantFiles {
		t.Errorf("files = %q, git lists %q", d.Files, wantFiles)
	}
	if d.PatchTruncated || d.FilesTruncated {
		t.Errorf("truncated flags set: %+v", d)
	}
}

// firstDifference shows where two texts part, line by line.
func firstDifference(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d: ours %q, git %q\ncontext (git):\n%s", i+1, gl, wl, strings.Join(w[lo:min(len(w), i+4)], ""))
		}
	}
	return "identical"
}
