package provider

import "unicode/utf8"

// TailBytes is how much of a reply being generated a Tail keeps.
const TailBytes = 240

// Tail keeps the last TailBytes of what a streamed reply has generated so
// far (its text, reasoning and tool-call arguments as they arrive), so a
// supervisor can watch the model write. Adding is cheap; String copies.
// The zero value is empty and ready; a nil Tail reads as "".
type Tail struct {
	buf []byte
}

// Add appends s.
func (t *Tail) Add(s string) {
	t.buf = append(t.buf, s...)
	// Trim only now and then, so a stream of small deltas copies little.
	if len(t.buf) > 4*TailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-TailBytes:]...)
	}
}

// String is the last TailBytes at most, starting at a whole character.
func (t *Tail) String() string {
	if t == nil {
		return ""
	}
	b := t.buf
	if len(b) > TailBytes {
		b = b[len(b)-TailBytes:]
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return string(b)
}

// Progress is how far a streamed reply has come.
type Progress struct {
	// Tokens is the completion tokens received so far (estimated when the
	// server does not count).
	Tokens int
	// Tail is the end of what was generated so far; read it only inside
	// the OnProgress call (it changes as the stream goes on).
	Tail *Tail
}
