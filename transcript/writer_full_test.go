package transcript

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"time"
)

// fullFile is an appendFile with room for limit bytes: a write past it
// stores what fits and fails with ENOSPC, as write(2) does on a full disk.
type fullFile struct {
	data        bytes.Buffer
	limit       int
	truncateErr error
}

func (f *fullFile) Write(p []byte) (int, error) {
	room := max(0, f.limit-f.data.Len())
	if len(p) <= room {
		return f.data.Write(p)
	}
	n, _ := f.data.Write(p[:room])
	return n, syscall.ENOSPC
}

func (f *fullFile) Truncate(size int64) error {
	if f.truncateErr != nil {
		return f.truncateErr
	}
	f.data.Truncate(int(size))
	return nil
}

func (f *fullFile) Close() error { return nil }

// readBack parses what the fake file holds.
func readBack(t *testing.T, f *fullFile) ([]Line, []Problem) {
	t.Helper()
	lines, problems, err := Read(bytes.NewReader(f.data.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return lines, problems
}

// TestWriteOnAFullDiskLeavesNoTornLine: a line that only partly fits is
// cut back, so the transcript ends on its last whole line; the error is
// returned and kept; and once there is room again the next line is whole.
func TestWriteOnAFullDiskLeavesNoTornLine(t *testing.T) {
	f := &fullFile{limit: 200}
	w := &Writer{path: "fake", now: func() time.Time { return time.Unix(0, 0) }, f: f}
	if err := w.Write(Nudge{Kind: "stall", Turn: 1}); err != nil {
		t.Fatal(err)
	}
	whole := f.data.Len()
	err := w.Write(Assistant{Text: string(bytes.Repeat([]byte("x"), 500))})
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(w.Err(), syscall.ENOSPC) {
		t.Fatalf("write error %v, kept %v", err, w.Err())
	}
	if f.data.Len() != whole {
		t.Fatalf("the file holds %d bytes after the failed write, want the %d of its whole lines", f.data.Len(), whole)
	}
	if lines, problems := readBack(t, f); len(lines) != 1 || len(problems) != 0 {
		t.Fatalf("lines %v, problems %v", lines, problems)
	}
	f.limit = 1 << 20 // room again
	if err := w.Write(Nudge{Kind: "stall", Turn: 2}); err != nil {
		t.Fatal(err)
	}
	if lines, problems := readBack(t, f); len(lines) != 2 || len(problems) != 0 {
		t.Fatalf("lines %v, problems %v", lines, problems)
	}
}

// TestWriteAfterATornLineThatCannotBeCut: when the torn part cannot be
// cut, the next line starts on a line of its own, so a reader sees one
// bad line and every good event, none glued to the torn part.
func TestWriteAfterATornLineThatCannotBeCut(t *testing.T) {
	f := &fullFile{limit: 200, truncateErr: errors.New("truncate refused")}
	w := &Writer{path: "fake", now: time.Now, f: f}
	if err := w.Write(Nudge{Kind: "stall", Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Assistant{Text: string(bytes.Repeat([]byte("x"), 500))}); err == nil {
		t.Fatal("a write past the limit succeeded")
	}
	f.limit = 1 << 20
	for turn := 2; turn <= 3; turn++ {
		if err := w.Write(Nudge{Kind: "stall", Turn: turn}); err != nil {
			t.Fatal(err)
		}
	}
	lines, problems := readBack(t, f)
	if len(lines) != 3 || len(problems) != 1 || problems[0].Kind != ProblemCorrupt || problems[0].Line != 2 {
		t.Fatalf("lines %d, problems %v", len(lines), problems)
	}
	for i, l := range lines {
		ev, err := l.Decode()
		if n, ok := ev.(Nudge); err != nil || !ok || n.Turn != i+1 {
			t.Fatalf("line %d: %#v %v", l.Number, ev, err)
		}
	}
	if w.size != int64(f.data.Len()) {
		t.Fatalf("the writer counts %d bytes, the file holds %d", w.size, f.data.Len())
	}
}
