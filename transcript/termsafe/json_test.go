package termsafe

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// jsonInert reports whether doc holds nothing a terminal acts on: valid
// UTF-8 without controls (but the JSON whitespace), DEL, C1 controls or
// bidirectional formatting characters.
func jsonInert(doc []byte) bool {
	if !utf8.Valid(doc) {
		return false
	}
	for _, r := range string(doc) {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f || unsafeRune(r) {
			return false
		}
	}
	return true
}

// decodeJSON decodes doc as Go's decoder does, numbers kept as text.
func decodeJSON(t *testing.T, doc []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", doc, err)
	}
	return v
}

func TestEncodeJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"plain", map[string]string{"task": "fix it <now> & then"}, `{"task":"fix it <now> & then"}` + "\n"},
		{"unicode kept raw", "naïve — ✓ 日本", `"naïve — ✓ 日本"` + "\n"},
		{"esc and bel", "\x1b]0;t\x07", `"\u001b]0;t\u0007"` + "\n"},
		{"osc 52", "\x1b]52;c;ZWNobyBoaQ==\x07", `"\u001b]52;c;ZWNobyBoaQ==\u0007"` + "\n"},
		{"del", "a\x7fb", `"a\u007fb"` + "\n"},
		{"c1 csi", "a\u009b31mb", `"a\u009b31mb"` + "\n"},
		{"c1 range ends", "\u0080\u009f", `"\u0080\u009f"` + "\n"},
		{"bidi", "\u061c\u200e\u200f\u202a\u202e\u2066\u2069", `"\u061c\u200e\u200f\u202a\u202e\u2066\u2069"` + "\n"},
		{"invalid utf8", "a\xffb", `"a\ufffdb"` + "\n"},
		{"in a key", map[string]int{"k\u202e": 1}, `{"k\u202e":1}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeJSON(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("EncodeJSON(%q) = %s, want %s", tc.in, got, tc.want)
			}
			plain, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := decodeJSON(t, got), decodeJSON(t, plain); !reflect.DeepEqual(a, b) {
				t.Errorf("decodes to %q, json.Marshal's to %q", a, b)
			}
		})
	}
}

func TestEscapeJSONKeepsTheMeaning(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"raw c1 and bidi in a string", "{\"a\":\"x\u009by\u202ez\"}", `{"a":"x\u009by\u202ez"}`},
		{"raw del", "[\"\x7f\"]", `["\u007f"]`},
		{"after an escaped backslash", "\"\\\\\u009b\"", `"\\\u009b"`},
		{"invalid bytes as the decoder reads them", "\"a\xff\xc3b\"", `"a\ufffd\ufffdb"`},
		{"surrogate half as three invalid bytes", "\"\xed\xa0\x80\"", `"\ufffd\ufffd\ufffd"`},
		{"whitespace between tokens kept", "{\r\n\t\"a\": 1}\n", "{\r\n\t\"a\": 1}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EscapeJSON([]byte(tc.in))
			if string(got) != tc.want {
				t.Errorf("EscapeJSON(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if a, b := decodeJSON(t, got), decodeJSON(t, []byte(tc.in)); !reflect.DeepEqual(a, b) {
				t.Errorf("decodes to %q, the input to %q", a, b)
			}
		})
	}
}

func TestEscapeJSONOfSafeJSONIsNotCopied(t *testing.T) {
	doc := []byte(strings.Repeat(`{"a":"clean ✓ text"}`, 50))
	if n := testing.AllocsPerRun(100, func() { _ = EscapeJSON(doc) }); n != 0 {
		t.Errorf("EscapeJSON of safe JSON allocated %v times per call", n)
	}
}

func FuzzEncodeJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "\u009b1m", "a\xffb", "\x1b]52;c;x\x07", "\u202e", "\x7f", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := EncodeJSON(map[string]any{s: []string{s}})
		if err != nil {
			t.Fatal(err)
		}
		if !jsonInert(got) {
			t.Fatalf("EncodeJSON(%q) = %q still holds a control", s, got)
		}
		plain, err := json.Marshal(map[string]any{s: []string{s}})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := decodeJSON(t, got), decodeJSON(t, plain); !reflect.DeepEqual(a, b) {
			t.Fatalf("EncodeJSON(%q) decodes to %q, json.Marshal's to %q", s, a, b)
		}
	})
}

func FuzzEscapeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `"\u001b"`, "\"\u009b\"", "[\"a\xff\", 1.5e3, null]", "{\"\u202e\": true}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			return
		}
		got := EscapeJSON(doc)
		if !json.Valid(got) {
			t.Fatalf("EscapeJSON(%q) = %q is no longer JSON", doc, got)
		}
		if !jsonInert(got) {
			t.Fatalf("EscapeJSON(%q) = %q still holds a control", doc, got)
		}
		if a, b := decodeJSON(t, got), decodeJSON(t, doc); !reflect.DeepEqual(a, b) {
			t.Fatalf("EscapeJSON(%q) decodes to %q, the input to %q", doc, a, b)
		}
		if again := EscapeJSON(got); !bytes.Equal(again, got) {
			t.Fatalf("EscapeJSON is not idempotent on %q", doc)
		}
	})
}
