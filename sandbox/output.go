package sandbox

import (
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Captured is what was kept of a command's merged output.
type Captured struct {
	Data []byte
	// Capped is set when output beyond the kept part was read and dropped.
	Capped bool
}

// Drain reads a command's output pipe in the background to its end,
// keeping the first max bytes and dropping the rest, so the command never
// blocks on a full pipe. Host mode and the in-container tool server share
// it, so both report output the same way.
type Drain struct {
	r *os.File
	c chan Captured
}

// StartDrain starts reading r, the read end of the command's output pipe.
func StartDrain(r *os.File, max int) *Drain {
	d := &Drain{r: r, c: make(chan Captured, 1)}
	go func() { d.c <- capture(r, max) }()
	return d
}

// Wait returns what was read once the pipe reached its end, or, when
// something outside the command still holds the write end, once grace has
// passed: closing the read end then wakes the reader, and what the command
// wrote before it exited was already read.
func (d *Drain) Wait(grace time.Duration) Captured {
	select {
	case out := <-d.c:
		return out
	case <-time.After(grace):
		_ = d.r.Close() // a read end: nothing to lose
		return <-d.c
	}
}

func capture(r io.Reader, max int) Captured {
	var c Captured
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			take := min(n, max-len(c.Data))
			c.Data = append(c.Data, buf[:take]...)
			if take < n {
				c.Capped = true
			}
		}
		if err != nil {
			return c
		}
	}
}

// DecodeOutput decodes b as UTF-8, each invalid byte becoming U+FFFD.
func DecodeOutput(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}
