// Package termsafe makes text that came from the model or the worker safe
// to print on a terminal.
//
// Assistant text, tool output, file names and diff lines are written by a
// program we do not trust. Printed raw, an escape sequence in them can
// rewrite the screen, set the window title, plant a hyperlink or write to
// the clipboard (OSC 52), and a bidirectional override can make a line
// read differently from what it is. This package shows every such
// character instead of sending it: C0 controls and DEL as the Unicode
// control pictures (ESC as ␛, BEL as ␇, CR as ␍, …), C1 controls and
// bidirectional formatting characters as \uXXXX, and bytes that are not
// UTF-8 as U+FFFD. What remains is printable text, so every escape
// sequence is inert and visible.
//
// JSON is different: it must decode to exactly what was encoded, so
// EncodeJSON and EscapeJSON write the same characters as JSON's own
// \uXXXX escapes instead of showing them.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// String returns s made safe for a terminal: newlines and tabs are kept,
// every other control character, C1 control and bidirectional formatting
// character is shown visibly (see the package doc), and invalid UTF-8
// becomes U+FFFD. Text that needs none of that is returned as it is,
// without allocating.
func String(s string) string { return convert(s, false) }

// Line is String for text shown on one line (a table cell, a title):
// newlines and tabs are shown visibly too, as ␤ and ␉.
func Line(s string) string { return convert(s, true) }

// Safe reports whether String would return s unchanged.
func Safe(s string) bool { return safeUpTo(s, false) == len(s) }

// convert is String (oneLine false) or Line (oneLine true).
func convert(s string, oneLine bool) string {
	i := safeUpTo(s, oneLine)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r < 0x20:
			if !oneLine && (r == '\n' || r == '\t') {
				b.WriteRune(r)
				continue
			}
			// U+2400..U+241F are the control pictures for 0x00..0x1F;
			// U+2424 (␤) reads better than ␊ for a newline.
			if r == '\n' {
				b.WriteRune('\u2424')
				continue
			}
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('\u2421') // ␡
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// safeUpTo is the length of s's longest prefix that needs no change.
func safeUpTo(s string, oneLine bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f || !oneLine && (c == '\n' || c == '\t') {
				i++
				continue
			}
			return i
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return i
		}
		i += size
	}
	return len(s)
}

// unsafeRune reports the non-ASCII runes a terminal acts on rather than
// shows: the C1 controls (U+009B is a one-byte CSI, U+009D an OSC) and
// the characters that reorder bidirectional text.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Writer passes text through String on its way to a terminal. A rune cut
// between two writes is held back until the rest of it arrives, so a
// multi-byte character is never shown as U+FFFD for being split.
type Writer struct {
	w       io.Writer
	pending []byte
}

// NewWriter returns a Writer that writes String of what it is given to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write neutralises p and writes it; it reports len(p) on success.
func (t *Writer) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	cut := len(buf)
	// Hold back an incomplete UTF-8 sequence at the end (at most 3 bytes).
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	t.pending = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(t.w, String(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back of a rune cut at the end of the last
// write (shown as U+FFFD, as it never came whole). Call it once nothing
// more will be written.
func (t *Writer) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	held := string(t.pending)
	t.pending = nil
	_, err := io.WriteString(t.w, String(held))
	return err
}
