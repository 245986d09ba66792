package fsops

import (
	"slices"
	"testing"
)

func TestSplitLines(t *testing.T) {
	// Expected values are Python's str.splitlines() on the same input.
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"no newline", "a", []string{"a"}},
		{"final newline ends, not starts", "a\n", []string{"a"}},
		{"lone newline", "\n", []string{""}},
		{"blank line kept", "a\n\nb", []string{"a", "", "b"}},
		{"crlf is one break", "a\r\nb\r\n", []string{"a", "b"}},
		{"lone cr", "a\rb", []string{"a", "b"}},
		{"cr then crlf", "\r\r\n", []string{"", ""}},
		{"vt and ff", "a\vb\fc", []string{"a", "b", "c"}},
		{"file group record separators", "a\x1cb\x1dc\x1ed", []string{"a", "b", "c", "d"}},
		{"unit separator is not a break", "a\x1fb", []string{"a\x1fb"}},
		{"next line", "a\u0085b", []string{"a", "b"}},
		{"line and paragraph separators", "a\u2028b\u2029c", []string{"a", "b", "c"}},
		{"stray 0x85 byte is not NEL", "a\x85b", []string{"a\x85b"}},
		{"tab is not a break", "a\tb", []string{"a\tb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SplitLines(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("SplitLines(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitKeepNewlines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"x", []string{"x"}},
		{"x\n", []string{"x\n"}},
		{"a\nb", []string{"a\n", "b"}},
		{"a\fb\n\nc\r\n", []string{"a\fb\n", "\n", "c\r\n"}},
		{"a\u2028b\n", []string{"a\u2028b\n"}},
	}
	for _, tt := range tests {
		got := splitKeepNewlines(tt.in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("splitKeepNewlines(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if n := countKeepNewlines(tt.in); n != len(tt.want) {
			t.Errorf("countKeepNewlines(%q) = %d, want %d", tt.in, n, len(tt.want))
		}
	}
}
