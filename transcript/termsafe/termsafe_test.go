package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, line string
	}{
		{"plain ascii", "hello, world", "hello, world", "hello, world"},
		{"newline and tab kept", "a\n\tb", "a\n\tb", "a␤␉b"},
		{"unicode kept", "naïve — ✓ 日本", "naïve — ✓ 日本", "naïve — ✓ 日本"},
		{"csi colour", "\x1b[31mred\x1b[0m", "␛[31mred␛[0m", "␛[31mred␛[0m"},
		{"osc title with bel", "\x1b]0;pwned\x07", "␛]0;pwned␇", "␛]0;pwned␇"},
		{"osc 52 clipboard", "\x1b]52;c;ZWNobyBoaQ==\x1b\\", "␛]52;c;ZWNobyBoaQ==␛\\", "␛]52;c;ZWNobyBoaQ==␛\\"},
		{"osc 8 hyperlink", "\x1b]8;;http://x\x1b\\click\x1b]8;;\x1b\\", "␛]8;;http://x␛\\click␛]8;;␛\\", "␛]8;;http://x␛\\click␛]8;;␛\\"},
		{"c1 csi", "a\u009b31mb", `a\u009b31mb`, `a\u009b31mb`},
		{"c1 osc", "\u009d0;t\u009c", `\u009d0;t\u009c`, `\u009d0;t\u009c`},
		{"stray cr", "progress 10%\rprogress 99%", "progress 10%␍progress 99%", "progress 10%␍progress 99%"},
		{"del and nul", "a\x7fb\x00c", "a␡b␀c", "a␡b␀c"},
		{"backspace", "ab\bc", "ab␈c", "ab␈c"},
		{"bidi override", "x\u202ey", `x\u202ey`, `x\u202ey`},
		{"bidi isolate", "x\u2067y\u2069", `x\u2067y\u2069`, `x\u2067y\u2069`},
		{"invalid utf8", "a\xffb\xc3", "a\ufffdb\ufffd", "a\ufffdb\ufffd"},
		{"empty", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := Line(tc.in); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got, want := Safe(tc.in), tc.in == tc.want; got != want {
				t.Errorf("Safe(%q) = %v, want %v", tc.in, got, want)
			}
		})
	}
}

func TestSafeTextIsNotCopied(t *testing.T) {
	s := strings.Repeat("clean text ", 100)
	if n := testing.AllocsPerRun(100, func() { _ = String(s) }); n != 0 {
		t.Errorf("String of clean text allocated %v times per call", n)
	}
}

// inert reports whether out holds nothing a terminal would act on.
func inert(out string, oneLine bool) bool {
	if !utf8.ValidString(out) {
		return false
	}
	for _, r := range out {
		if r < 0x20 && (oneLine || r != '\n' && r != '\t') || r == 0x7f || unsafeRune(r) {
			return false
		}
	}
	return true
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "\u009b1m", "a\xffb", "\x1b]52;c;x\x07", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, line := String(s), Line(s)
		if !inert(out, false) {
			t.Fatalf("String(%q) = %q still holds a control", s, out)
		}
		if !inert(line, true) {
			t.Fatalf("Line(%q) = %q still holds a control", s, line)
		}
		if Safe(s) != (out == s) {
			t.Fatalf("Safe(%q) disagrees with String", s)
		}
		if String(out) != out {
			t.Fatalf("String is not idempotent on %q", s)
		}
	})
}

func TestWriterNeutralisesAcrossWrites(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	in := "ok \x1b]0;t\x07 日本 \u009b31m\n"
	// One byte a write: a rune split anywhere is still whole on the other side.
	for i := 0; i < len(in); i++ {
		if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	if got, want := b.String(), String(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWriterFlushShowsACutRune(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	if _, err := w.Write([]byte("ok \xe6\x97")); err != nil { // 日 without its last byte
		t.Fatal(err)
	}
	if b.String() != "ok " {
		t.Fatalf("the cut rune was not held back: %q", b.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "ok \ufffd\ufffd"; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
	if err := w.Flush(); err != nil || b.String() != "ok \ufffd\ufffd" {
		t.Errorf("a second Flush wrote again: %q %v", b.String(), err)
	}
}
