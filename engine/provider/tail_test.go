package provider

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTailKeepsTheEndOnACharacter(t *testing.T) {
	t.Parallel()
	var nilTail *Tail
	if nilTail.String() != "" {
		t.Fatal("a nil tail is not empty")
	}
	var tl Tail
	tl.Add("short")
	if tl.String() != "short" {
		t.Fatalf("tail %q", tl.String())
	}
	// Many small deltas of three-byte characters: the tail is at most
	// TailBytes, begins on a whole character, and ends with the last one.
	var all strings.Builder
	all.WriteString("short")
	for i := range 500 {
		s := strings.Repeat("€", i%3+1)
		tl.Add(s)
		all.WriteString(s)
	}
	got := tl.String()
	if len(got) > TailBytes || len(got) < TailBytes-3 || !utf8.ValidString(got) || !strings.HasSuffix(all.String(), got) {
		t.Fatalf("tail of %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if len(tl.buf) > 4*TailBytes+3 {
		t.Fatalf("the tail holds %d bytes", len(tl.buf))
	}
}
