package fsops

import (
	"bytes"
	"regexp"
	"testing"
)

// prefilterAdmits checks the prefilter's one promise: a file with a
// matching line is never ruled out.
func prefilterAdmits(t *testing.T, pattern string, data []byte) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return
	}
	lit := requiredLiteral(pattern)
	whole := wholeFilePrefilter(pattern)
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if !re.Match(line) {
			continue
		}
		if lit != nil && !bytes.Contains(line, lit) {
			t.Fatalf("pattern %q matches line %q, which lacks its required literal %q", pattern, line, lit)
		}
		if whole != nil && bytes.IndexByte(data, '\r') < 0 && !whole.Match(data) {
			t.Fatalf("pattern %q matches line %q, but the prefilter rules out the file %q", pattern, line, data)
		}
	}
}

func TestWholeFilePrefilter(t *testing.T) {
	files := [][]byte{
		[]byte("id = 12\nname = x\n"),
		[]byte("first\n\nlast"),
		[]byte("word\nnext word\n"),
		[]byte("x\n"),
		[]byte(""),
	}
	patterns := []string{
		`^id = 1[0-9]$`, `^$`, `^word$`, `\bword\b`, `^next`, `word$`, `last$`, `^first$`,
		`x`, `[^a]$`, `(?i)WORD`, `^\s*$`, `d\n`, `.*`, `\Bext`,
	}
	for _, p := range patterns {
		for _, f := range files {
			prefilterAdmits(t, p, f)
		}
	}
	for _, p := range []string{`\Aid`, `word\z`, `(?-m:^x)`} {
		if wholeFilePrefilter(p) != nil {
			t.Errorf("%q has text anchors: it must get no prefilter", p)
		}
	}
	if wholeFilePrefilter(`^id = 1[0-9]$`) == nil {
		t.Error("a line-anchored pattern must get a prefilter")
	}
	for pattern, want := range map[string]string{
		`^id = 1[0-9]$`: "id = 1", `marker-[0-9]+`: "marker-", `(?i)abc`: "", `a|b`: "",
		`(foo)+bar`: "foo", `x*yz`: "yz", `TODO: refine item 19[0-9]$`: "TODO: refine item 19",
	} {
		if got := string(requiredLiteral(pattern)); got != want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", pattern, got, want)
		}
	}
}

func FuzzWholeFilePrefilter(f *testing.F) {
	f.Add(`^a$`, []byte("b\na\n"))
	f.Add(`\bx`, []byte("y\nx"))
	f.Add(`[^\n]$`, []byte("\n\n"))
	f.Fuzz(func(t *testing.T, pattern string, data []byte) {
		prefilterAdmits(t, pattern, data)
	})
}
