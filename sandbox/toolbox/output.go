package toolbox

import (
	"io"
	"strings"
	"unicode/utf8"
)

// captured is what was kept of a command's output.
type captured struct {
	data []byte
	// capped is set when output beyond the kept part was dropped.
	capped bool
}

// capture reads r to its end, keeping the first max bytes.
func capture(r io.Reader, max int) captured {
	var c captured
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			take := min(n, max-len(c.data))
			c.data = append(c.data, buf[:take]...)
			if take < n {
				c.capped = true
			}
		}
		if err != nil {
			return c
		}
	}
}

// decodeOutput decodes b as UTF-8, each invalid byte becoming U+FFFD, as
// host mode does.
func decodeOutput(b []byte) string {
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
