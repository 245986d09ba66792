package highlight

import (
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/tui/theme"
)

func TestLinesColourCodeAndKeepText(t *testing.T) {
	h := New(theme.DarkSyntax())
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
	if out := New(theme.DarkSyntax()).Lines("file.unknown-ext-xyz", in); out[0] != in[0] {
		t.Fatalf("unknown language coloured: %q", out[0])
	}
	none := New(theme.Syntax{})
	if out := none.Lines("x.go", in); out[0] != in[0] {
		t.Fatal("no-colour highlighter coloured")
	}
	long := []string{strings.Repeat("x", MaxLineBytes+1), "y := 1"}
	if out := New(theme.DarkSyntax()).Lines("x.go", long); out[0] != long[0] {
		t.Fatal("an over-long line was coloured")
	}
}

// TestThemeSyntaxIsReadable: every entry of both themes is one chroma
// accepts, and it reaches the code (a keyword of each theme is coloured
// with that theme's colour).
func TestThemeSyntaxIsReadable(t *testing.T) {
	for name, sx := range map[string]theme.Syntax{"dark": theme.DarkSyntax(), "light": theme.LightSyntax()} {
		for _, e := range []string{sx.Keyword, sx.Type, sx.Function, sx.Builtin, sx.String, sx.Number, sx.Comment, sx.Meta} {
			if _, err := chroma.NewStyle("check", chroma.StyleEntries{chroma.Keyword: e}); err != nil || e == "" {
				t.Errorf("%s: entry %q: %v", name, e, err)
			}
		}
		h := New(sx)
		if h == nil {
			t.Fatalf("%s: no highlighter", name)
		}
		out := h.Lines("x.go", []string{"func f() {}"})
		if !strings.Contains(out[0], "\x1b[") {
			t.Errorf("%s: keyword not coloured: %q", name, out[0])
		}
	}
}
