package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// TranscriptName is the file name of a run's transcript inside its run
// directory.
const TranscriptName = "transcript.jsonl"

// transcriptMode is the permission of a transcript file.
const transcriptMode fs.FileMode = 0o600

// ErrWriterClosed is returned by Write after Close.
var ErrWriterClosed = errors.New("transcript writer is closed")

// errNilEvent rejects a nil Event, a programming error.
var errNilEvent = errors.New("nil event")

// Writer appends events to a transcript file, one JSON object per line.
// It is safe for concurrent use; lines never interleave.
type Writer struct {
	path string
	now  func() time.Time

	mu     sync.Mutex
	f      appendFile
	closed bool
	// size is how many bytes of whole lines the file holds: where a line
	// that was only partly written (a full disk) is cut back to.
	size int64
	// torn is set while the file may end in part of a line that could not
	// be cut back: the next line starts on a fresh line, so the torn part
	// is one bad line a reader skips, not glued to a good event.
	torn bool
	// firstErr is the first write that failed: a line that never reached
	// the file is evidence lost, and callers that ignore one write's error
	// must still learn of it at the end (Err).
	firstErr error
}

// appendFile is the file a Writer appends to (an *os.File opened with
// O_APPEND).
type appendFile interface {
	Write(p []byte) (int, error)
	Truncate(size int64) error
	Close() error
}

// WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithClock makes the Writer stamp "ts" from now instead of time.Now, so
// tests can write reproducible transcripts.
func WithClock(now func() time.Time) WriterOption {
	return func(w *Writer) { w.now = now }
}

// Create creates the transcript at path and opens it for appending. It
// refuses to reuse anything already at path, a symlink included (even a
// dangling one), so a transcript is always a fresh file of this run.
func Create(path string, opts ...WriterOption) (*Writer, error) {
	f, err := os.OpenFile(path,
		os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC,
		transcriptMode)
	if err != nil {
		return nil, fmt.Errorf("create transcript %s: %w", path, err)
	}
	// The umask may have cleared bits of 0600; set the mode exactly so the
	// owner can always read the transcript back.
	if err := f.Chmod(transcriptMode); err != nil {
		_ = f.Close() // the chmod error is the one worth reporting
		return nil, fmt.Errorf("set mode of transcript %s: %w", path, err)
	}
	w := &Writer{path: path, now: time.Now, f: f}
	for _, opt := range opts {
		opt(w)
	}
	return w, nil
}

// Path returns the file the Writer appends to.
func (w *Writer) Path() string { return w.path }

// Write appends ev as one line: {"ts": ..., "event": ..., <fields>}. The
// line is in the file (one write(2), no user-space buffering) when Write
// returns. Non-finite floats are written as null.
func (w *Writer) Write(ev Event) error {
	if ev == nil {
		return fmt.Errorf("write to %s: %w", w.path, errNilEvent)
	}
	name := ev.EventName()
	// Encoding happens outside the lock; only the timestamp and the write
	// are serialized, so "ts" never goes backwards down the file.
	body, err := encodeFields(ev)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("write %s event to %s: %w", name, w.path, ErrWriterClosed)
	}
	line := make([]byte, 0, len(body)+len(name)+65)
	if w.torn {
		line = append(line, '\n')
	}
	line = appendLine(line, w.now(), name, body)
	n, err := w.f.Write(line)
	if err != nil {
		err = fmt.Errorf("write %s event to %s: %w", name, w.path, err)
		if w.firstErr == nil {
			w.firstErr = err
		}
		if n > 0 {
			w.cutBack(n)
		}
		return err
	}
	w.size += int64(n)
	w.torn = false
	return nil
}

// cutBack removes the n bytes of a line a failed write left (a disk that
// filled mid-line), so the file still ends on a whole line: readers see
// every line before it intact and no torn JSON. When the file cannot be
// cut, the torn bytes stay counted and the next line starts on a fresh
// line. Called with mu held.
func (w *Writer) cutBack(n int) {
	if err := w.f.Truncate(w.size); err != nil {
		w.size += int64(n)
		w.torn = true
		return
	}
	w.torn = false
}

// Err is the first error a Write met writing to the file (nil when every
// line reached it), kept however many writes failed after it and whether
// or not the caller looked at each one. A line lost that way (a full
// disk) is evidence missing from the transcript.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

// Close closes the file. It is idempotent: later calls return nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close transcript %s: %w", w.path, err)
	}
	return nil
}

// appendLine appends one transcript line: "ts" and "event" first, then the
// fields of body (a JSON object), then a newline.
func appendLine(dst []byte, ts time.Time, name string, body []byte) []byte {
	dst = append(dst, `{"ts":"`...)
	dst = appendTimestamp(dst, ts)
	dst = append(dst, `","event":`...)
	dst = appendJSONString(dst, name)
	if len(body) > 2 { // body is "{...}"; "{}" adds no fields
		dst = append(dst, ',')
		dst = append(dst, body[1:]...)
	} else {
		dst = append(dst, '}')
	}
	return append(dst, '\n')
}

// encodeFields renders the event's fields as a JSON object.
func encodeFields(ev Event) ([]byte, error) {
	if n, ok := ev.(normalizer); ok {
		ev = n.normalized()
	}
	var v any = ev
	if p, ok := ev.(payloader); ok {
		v = p.payload()
	}
	body, err := marshalJSON(v)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("event fields must encode as a JSON object, got %.40q", body)
	}
	return body, nil
}

// timestampLayout is UTC with microseconds; the "+00:00" offset is appended
// literally because Go's layouts spell UTC as "Z".
const timestampLayout = "2006-01-02T15:04:05.000000"

// FormatTimestamp renders t as a transcript "ts" value: UTC, ISO-8601 with
// microseconds and an explicit offset, e.g. 2026-11-30T07:38:12.123456+00:00.
func FormatTimestamp(t time.Time) string {
	return string(appendTimestamp(nil, t))
}

func appendTimestamp(b []byte, t time.Time) []byte {
	b = t.UTC().AppendFormat(b, timestampLayout)
	return append(b, "+00:00"...)
}
