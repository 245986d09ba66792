package highlight

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestLinesColourCodeAndKeepText(t *testing.T) {
	h := New("monokai")
	in := []string{"package main", "", "func f() int { return 1 } // done", `s := "a ␛[2J string"`}
	out := h.Lines("x.go", in)
	if len(out) != len(in) {
		t.Fatalf("%d lines, want %d", len(out), len(in))
	}
	sgrOnly := regexp.MustCompile("\x1b\\[[0-9;:]*m")
	for i, l := range out {
		if got := ansi.Strip(l); got != in[i] {
			t.Errorf("line %d text changed: %q -> %q", i, in[i], got)
		}
		if strings.Contains(sgrOnly.ReplaceAllString(l, ""), "\x1b") {
			t.Errorf("line %d holds an escape that is not colour: %q", i, l)
		}
	}
	if !strings.Contains(out[2], "\x1b[") {
		t.Fatal("no colour on a line of code")
	}
}

func TestPlainWhenUnknownOrOff(t *testing.T) {
	in := []string{"some text"}
	if out := New("monokai").Lines("file.unknown-ext-xyz", in); out[0] != in[0] {
		t.Fatalf("unknown language coloured: %q", out[0])
	}
	none := New("")
	if out := none.Lines("x.go", in); out[0] != in[0] {
		t.Fatal("no-colour highlighter coloured")
	}
	long := []string{strings.Repeat("x", MaxLineBytes+1), "y := 1"}
	if out := New("monokai").Lines("x.go", long); out[0] != long[0] {
		t.Fatal("an over-long line was coloured")
	}
}
