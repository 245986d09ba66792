package termsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// JSON that dirtywork prints is read by programs, and by people on a
// terminal. encoding/json escapes the C0 controls, but writes DEL, the C1
// controls (U+009B is a one-byte CSI) and the bidirectional formatting
// characters raw: valid JSON that a terminal acts on. What is printed
// therefore goes through EncodeJSON (or EscapeJSON for a document already
// encoded), which writes those as \uXXXX escapes. Decoding the result
// gives exactly the strings decoding the plain encoding gives, so a
// program reading it sees no difference.

// EncodeJSON encodes v as one line of JSON ending in a newline, without
// HTML escaping (what dirtywork prints is read by programs and people,
// not browsers), with every character a terminal acts on escaped (see
// EscapeJSON). It is the one encoder for JSON that dirtywork prints.
func EncodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return EscapeJSON(b.Bytes()), nil
}

// WriteJSON writes EncodeJSON(v) to w.
func WriteJSON(w io.Writer, v any) error {
	data, err := EncodeJSON(v)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// EscapeJSON returns doc, a JSON document, with DEL, the C1 controls, the
// bidirectional formatting characters and any C0 control other than tab,
// newline and carriage return written as \uXXXX escapes, and each byte
// that is not part of valid UTF-8 as \ufffd. In valid JSON every one of
// them can only stand inside a string, where the escape decodes to the
// same character (and an invalid byte to U+FFFD, as Go's decoder reads
// it), so the document means exactly what it meant. A document that
// needs none of that is returned as it is, without allocating.
func EscapeJSON(doc []byte) []byte {
	i := jsonSafeUpTo(doc)
	if i == len(doc) {
		return doc
	}
	out := make([]byte, 0, len(doc)+32)
	out = append(out, doc[:i]...)
	for i < len(doc) {
		c := doc[i]
		if c < utf8.RuneSelf {
			if jsonEscapedByte(c) {
				out = fmt.Appendf(out, `\u%04x`, c)
			} else {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(doc[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case unsafeRune(r):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, doc[i:i+size]...)
		}
		i += size
	}
	return out
}

// jsonEscapedByte reports the ASCII bytes EscapeJSON escapes: controls
// other than the whitespace JSON allows between tokens, and DEL.
func jsonEscapedByte(c byte) bool {
	return c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f
}

// jsonSafeUpTo is the length of doc's longest prefix EscapeJSON leaves as
// it is.
func jsonSafeUpTo(doc []byte) int {
	for i := 0; i < len(doc); {
		c := doc[i]
		if c < utf8.RuneSelf {
			if jsonEscapedByte(c) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(doc[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return i
		}
		i += size
	}
	return len(doc)
}
