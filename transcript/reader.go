package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxLineBytes bounds one transcript line. Real lines stay far below it (the
// engine caps every text it records); a longer one is reported as a problem
// and skipped without being held in memory.
const MaxLineBytes = 128 << 20

// ProblemKind classifies a [Problem].
type ProblemKind string

// Problem kinds.
const (
	// ProblemPartial is an unterminated last line: the writer died mid-line,
	// or (for a replaced file) the old file ended that way.
	ProblemPartial ProblemKind = "partial"
	// ProblemCorrupt is a complete line that is not a transcript event: not
	// JSON, not an object, no "event" or "ts", or longer than MaxLineBytes.
	ProblemCorrupt ProblemKind = "corrupt"
	// ProblemWatch is a file-watching failure reported by a follower; the
	// follower keeps going on its safety poll.
	ProblemWatch ProblemKind = "watch"
)

var (
	// ErrPartialLine marks an unterminated last line.
	ErrPartialLine = errors.New("incomplete last line")
	// ErrCorruptLine marks a line that is not a transcript event.
	ErrCorruptLine = errors.New("corrupt transcript line")
	// ErrLineTooLong marks a line longer than MaxLineBytes.
	ErrLineTooLong = errors.New("transcript line too long")
)

// excerptBytes bounds Problem.Excerpt.
const excerptBytes = 200

// Problem is a damaged or unreadable part of a transcript. Problems are
// reported alongside the good lines instead of aborting the read: a
// transcript is evidence, and one bad line must not hide the rest.
type Problem struct {
	Kind ProblemKind
	// Line is the 1-based line number (counting blank lines); 0 when the
	// problem is not about one line.
	Line int
	// Err says what is wrong; it wraps ErrPartialLine, ErrCorruptLine or
	// ErrLineTooLong for line problems.
	Err error
	// Excerpt is the start of the offending line (at most 200 bytes, made
	// valid UTF-8), for display.
	Excerpt string
}

// Error implements error, so a Problem can be logged or wrapped directly.
func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("line %d: %s: %v", p.Line, p.Kind, p.Err)
	}
	return fmt.Sprintf("%s: %v", p.Kind, p.Err)
}

// Unwrap returns the underlying error.
func (p Problem) Unwrap() error { return p.Err }

// Line is one well-formed transcript line.
type Line struct {
	Number int       // 1-based line number, counting blank lines
	TS     time.Time // the "ts" stamp
	Event  string    // the "event" name
	// Raw is the whole JSON object, "ts" and "event" included, trimmed of
	// surrounding whitespace. Decode turns it into a typed event.
	Raw json.RawMessage
}

// Decode decodes the line into its typed event: RunStart, Assistant, ... by
// value. A run_end without "turns" decodes as RunEndFailure. An unknown event
// name decodes as Unknown, never as an error, because newer writers may add
// events. If a known event's fields have the wrong JSON types, Decode returns
// the partly decoded event together with the error.
func (l Line) Decode() (Event, error) {
	decode, ok := decoders[l.Event]
	if !ok {
		decode = decodeUnknown(l.Event)
	}
	ev, err := decode(l.Raw)
	if err != nil {
		return ev, fmt.Errorf("decode %s event on line %d: %w", l.Event, l.Number, err)
	}
	return ev, nil
}

// decoders maps event names to their typed decoders.
var decoders = map[string]func(json.RawMessage) (Event, error){
	EventRunStart:       decodeAs[RunStart],
	EventModelRequest:   decodeAs[ModelRequest],
	EventModelProgress:  decodeAs[ModelProgress],
	EventSetup:          decodeAs[Setup],
	EventAssistant:      decodeAs[Assistant],
	EventToolResult:     decodeAs[ToolResult],
	EventGuardrailBlock: decodeAs[GuardrailBlock],
	EventNudge:          decodeAs[Nudge],
	EventSandboxReset:   decodeAs[SandboxReset],
	EventVerify:         decodeAs[Verify],
	EventRunEnd:         decodeRunEnd,
}

func decodeAs[T Event](raw json.RawMessage) (Event, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

// decodeRunEnd tells the two run_end shapes apart: only the runner's has
// "turns".
func decodeRunEnd(raw json.RawMessage) (Event, error) {
	var probe struct {
		Turns json.RawMessage `json:"turns"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return RunEnd{}, err
	}
	if probe.Turns == nil {
		return decodeAs[RunEndFailure](raw)
	}
	return decodeAs[RunEnd](raw)
}

func decodeUnknown(name string) func(json.RawMessage) (Event, error) {
	return func(raw json.RawMessage) (Event, error) {
		ev := Unknown{Name: name}
		if err := json.Unmarshal(raw, &ev.Fields); err != nil {
			return ev, err
		}
		delete(ev.Fields, "ts")
		delete(ev.Fields, "event")
		return ev, nil
	}
}

// Read parses a whole transcript. Blank lines are skipped; damaged lines
// and an unterminated last line come back as problems, in file order like
// the lines. err is only an I/O error of r (lines read before it are
// returned too). Read never panics on any input.
func Read(r io.Reader) (lines []Line, problems []Problem, err error) {
	p := lineParser{limit: MaxLineBytes}
	emit := func(it Item) bool {
		switch it.Kind {
		case ItemLine:
			lines = append(lines, it.Line)
		case ItemProblem:
			problems = append(problems, it.Problem)
		}
		return true
	}
	err = p.readAll(r, emit)
	return lines, problems, err
}

// ReadFile reads the transcript at path; see Read.
func ReadFile(path string) ([]Line, []Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open transcript %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only: closing cannot lose data
	lines, problems, err := Read(f)
	if err != nil {
		return lines, problems, fmt.Errorf("read transcript %s: %w", path, err)
	}
	return lines, problems, nil
}

// readChunk is how much a parser reads at a time.
const readChunk = 64 << 10

// lineParser turns a byte stream into line and problem items. It holds back
// an unterminated tail until its newline arrives, and counts lines so
// problems can name them. Both Read and the follower use it.
type lineParser struct {
	limit   int    // longest line kept, in bytes, without its newline
	number  int    // lines completed so far
	pending []byte // bytes of the current, unterminated line
	// skipping is set while inside a line longer than limit: its bytes are
	// dropped, not buffered, until its newline.
	skipping bool
	excerpt  string // start of the skipped line
}

// readAll feeds everything from r and then finishes the input.
func (p *lineParser) readAll(r io.Reader, emit func(Item) bool) error {
	buf := make([]byte, readChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 && !p.feed(buf[:n], emit) {
			return nil
		}
		if errors.Is(err, io.EOF) {
			p.finish(emit)
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// feed consumes data and emits an item for each line it completes. It
// returns false as soon as emit does.
func (p *lineParser) feed(data []byte, emit func(Item) bool) bool {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			p.hold(data)
			return true
		}
		p.hold(data[:i])
		data = data[i+1:]
		p.number++
		it, ok := p.complete()
		if ok && !emit(it) {
			return false
		}
	}
	return true
}

// hold appends part of the current line, switching to skipping when the
// line outgrows the limit.
func (p *lineParser) hold(part []byte) {
	if p.skipping {
		return
	}
	if len(p.pending)+len(part) > p.limit {
		p.excerpt = excerpt(append(p.pending, part[:min(len(part), excerptBytes)]...))
		p.pending = nil // release the buffer: the line is lost anyway
		p.skipping = true
		return
	}
	p.pending = append(p.pending, part...)
}

// complete turns the held line into an item; ok is false for a blank line.
func (p *lineParser) complete() (it Item, ok bool) {
	defer p.clearLine()
	if p.skipping {
		return problemItem(ProblemCorrupt, p.number,
			fmt.Errorf("%w: over %d bytes", ErrLineTooLong, p.limit), p.excerpt), true
	}
	raw := bytes.TrimSpace(p.pending)
	if len(raw) == 0 {
		return Item{}, false
	}
	line, err := parseLine(raw, p.number)
	if err != nil {
		return problemItem(ProblemCorrupt, p.number, err, excerpt(raw)), true
	}
	return Item{Kind: ItemLine, Line: line}, true
}

// finish reports a non-blank unterminated tail at the end of the input.
func (p *lineParser) finish(emit func(Item) bool) {
	defer p.clearLine()
	var text string
	switch {
	case p.skipping:
		text = p.excerpt
	case len(bytes.TrimSpace(p.pending)) > 0:
		text = excerpt(p.pending)
	default:
		return
	}
	emit(problemItem(ProblemPartial, p.number+1, ErrPartialLine, text))
}

// unfinished reports whether part of a line is held back.
func (p *lineParser) unfinished() bool {
	return p.skipping || len(bytes.TrimSpace(p.pending)) > 0
}

// reset forgets everything, for a follower starting over on a new file.
func (p *lineParser) reset() {
	p.clearLine()
	p.number = 0
}

func (p *lineParser) clearLine() {
	p.pending = p.pending[:0]
	p.skipping = false
	p.excerpt = ""
}

func problemItem(kind ProblemKind, line int, err error, text string) Item {
	return Item{Kind: ItemProblem, Problem: Problem{Kind: kind, Line: line, Err: err, Excerpt: text}}
}

// parseLine checks that raw (one trimmed, non-blank line) is a transcript
// event and reads its "ts" and "event".
func parseLine(raw []byte, number int) (Line, error) {
	var head struct {
		TS    *string `json:"ts"`
		Event *string `json:"event"`
	}
	// json.Unmarshal validates the whole line before decoding, and fails on
	// anything but an object (null aside, caught below by the missing keys).
	if err := json.Unmarshal(raw, &head); err != nil {
		return Line{}, fmt.Errorf("%w: %w", ErrCorruptLine, err)
	}
	if head.Event == nil || *head.Event == "" {
		return Line{}, fmt.Errorf("%w: no \"event\" name", ErrCorruptLine)
	}
	if head.TS == nil {
		return Line{}, fmt.Errorf("%w: no \"ts\"", ErrCorruptLine)
	}
	ts, err := time.Parse(time.RFC3339Nano, *head.TS)
	if err != nil {
		return Line{}, fmt.Errorf("%w: bad \"ts\": %w", ErrCorruptLine, err)
	}
	return Line{Number: number, TS: ts, Event: *head.Event, Raw: bytes.Clone(raw)}, nil
}

// excerpt returns the start of b as valid UTF-8 of at most excerptBytes
// bytes, for problem reports.
func excerpt(b []byte) string {
	// Only the start matters; bound the work on a huge line. Replacing
	// invalid bytes can change the length either way, so cut afterwards.
	s := strings.ToValidUTF8(string(b[:min(len(b), 4*excerptBytes)]), "\uFFFD")
	if len(s) > excerptBytes {
		cut := excerptBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
