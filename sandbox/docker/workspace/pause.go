package workspace

import (
	"io"

	"github.com/dirtywork/dirtywork/sandbox/pause"
)

// midExportAfter is how much of the export's stream passes before the
// mid-export pause point: past the first members, so the lane holds part
// of the tree when the process stops there.
const midExportAfter = 4 << 10

// midExport is w, or, when a test asked for the mid-export pause point, w
// pausing once midExportAfter bytes went through it.
func midExport(w io.Writer) io.Writer {
	if !pause.Armed(pause.MidExport) {
		return w
	}
	return &pausingWriter{w: w}
}

// pausingWriter pauses at pause.MidExport once enough bytes were written.
type pausingWriter struct {
	w      io.Writer
	n      int
	paused bool
}

func (p *pausingWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.n += n
	if !p.paused && p.n >= midExportAfter {
		p.paused = true
		pause.At(pause.MidExport)
	}
	return n, err
}
