package export

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLinkEscapes(t *testing.T) {
	tests := []struct {
		name, target string
		want         bool
	}{
		{"l", "/etc/passwd", true},
		{"l", "../../../etc", true},
		{"l", "..", true},
		{"a/l", "../..", true},
		{"a/l", "../../x", true},
		{"a/b/l", "../../../x", true},
		{"a/l", "b/../../../x", true},
		{"l", "a.txt", false},
		{"l", "..hidden", false},
		{"l", "..hidden/../x", false},
		{"a/l", "..", false},
		{"a/l", "../x", false},
		{"a/b/l", "../../x", false},
		{"l", ".", false},
	}
	for _, tc := range tests {
		if got := linkEscapes(tc.name, tc.target); got != tc.want {
			t.Errorf("linkEscapes(%q, %q) = %v, want %v", tc.name, tc.target, got, tc.want)
		}
	}
}

// TestQuotedNeutralisesNames checks names reach messages without control
// sequences or invalid UTF-8, and bounded.
func TestQuotedNeutralisesNames(t *testing.T) {
	tests := []struct{ name, want string }{
		{"plain/name.go", "'plain/name.go'"},
		{"café 日本", "'café 日本'"},
		{"a\nb", `'a\u000ab'`},
		{"\x1b[31mred", `'\u001b[31mred'`},
		{"bidi\u202eevil", `'bidi\u202eevil'`},
		{"bad\xffbyte", `'bad\xffbyte'`},
		{"real\uFFFDreplacement", "'real\uFFFDreplacement'"},
	}
	for _, tc := range tests {
		if got := quoted(tc.name); got != tc.want {
			t.Errorf("quoted(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
	long := quoted(strings.Repeat("x", 10000))
	if want := "'" + strings.Repeat("x", maxShown) + "…'"; long != want {
		t.Errorf("a long name is quoted as %d bytes, want it cut to %d", len(long), len(want))
	}
}

// TestCapReaderCountsExactly checks the cap trips on the first byte past
// it, wherever the reads fall, and never hands that byte on.
func TestCapReaderCountsExactly(t *testing.T) {
	data := strings.Repeat("z", 1000)
	for _, limit := range []int64{0, 1, 511, 999, 1000, 1001} {
		for name, r := range map[string]io.Reader{
			"whole":    strings.NewReader(data),
			"one byte": iotest.OneByteReader(strings.NewReader(data)),
		} {
			cr := newCapReader(r, limit)
			got, err := io.ReadAll(cr)
			wantOver := limit < int64(len(data))
			if cr.over != wantOver || (err != nil) != wantOver {
				t.Errorf("limit %d, %s: over=%v err=%v, want over=%v", limit, name, cr.over, err, wantOver)
			}
			if int64(len(got)) != min(limit, int64(len(data))) {
				t.Errorf("limit %d, %s: passed %d bytes on", limit, name, len(got))
			}
		}
	}
}
