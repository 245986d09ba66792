package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// resultsFileMode is a results file's mode: rows name tasks, models and run
// directories, which are nobody else's business (B-4).
const resultsFileMode = 0o600

// AppendRow appends row to the results file at path as one JSON line and
// syncs it to disk before returning, so a sweep killed after a case still
// has that case's row. The file is created 0600 when absent; a symbolic
// link or anything but a regular file at path is refused. The line goes
// out in one write on a descriptor opened for appending, so rows of
// concurrent cases never interleave.
func AppendRow(path string, row Row) error {
	line, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("encode the row of %s %s repeat %d: %w", row.Model, row.Task, row.Repeat, err)
	}
	line = append(line, '\n')
	// O_NONBLOCK: a FIFO planted at path must not hang the sweep in open;
	// it is refused below. It changes nothing for a regular file.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, resultsFileMode)
	if err != nil {
		return fmt.Errorf("open results file: %w", err)
	}
	if err := appendTo(f, line); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close results file %s: %w", path, err)
	}
	return nil
}

func appendTo(f *os.File, line []byte) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("inspect results file %s: %w", f.Name(), err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("results file %s is not a regular file", f.Name())
	}
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("append to results file %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync results file %s: %w", f.Name(), err)
	}
	return nil
}

// Results is a results file as read: its rows in file order, and the lines
// that were not rows.
type Results struct {
	// Path is the file read.
	Path     string
	Rows     []Row
	Problems []LineError
}

// LineError is a line of a results file that is not a row: not JSON (a
// sweep killed mid-write leaves a cut line), or JSON but not an object.
// Blank lines are no problem.
type LineError struct {
	Line int
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e LineError) Unwrap() error { return e.Err }

// ReadResults reads the results file at path. Every line holding a JSON
// object is a row, unknown keys and all (a key of an unexpected type reads
// as absent in the typed fields); every other non-blank line is a problem,
// reported with its number, and the rest is still read. A missing file
// gives an error matching fs.ErrNotExist.
func ReadResults(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results file: %w", err)
	}
	return parseResults(path, data), nil
}

func parseResults(path string, data []byte) *Results {
	rows, problems := ParseLines(data, 1)
	return &Results{Path: path, Rows: rows, Problems: problems}
}

// ParseLines reads lines of a results file as ReadResults does: every
// line holding a JSON object is a row, every other non-blank line a
// problem. first is the number of data's first line in its file (1 for
// the whole file), so a tail read later numbers rows and problems as the
// file does. A last line without its newline is read as a whole line:
// whoever reads a file being written keeps such a line back until its
// newline arrives.
func ParseLines(data []byte, first int) (rows []Row, problems []LineError) {
	for i, line := range bytes.Split(data, []byte("\n")) {
		// Whitespace around a line is no part of its JSON (the original
		// strips it too), and a whitespace-only line is blank.
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		row, err := decodeRow(line)
		if err != nil {
			problems = append(problems, LineError{Line: first + i, Err: err})
			continue
		}
		row.Line = first + i
		rows = append(rows, row)
	}
	return rows, problems
}

// decodeRow decodes one line into a row: the typed fields, leniently, and
// the object as written.
func decodeRow(line []byte) (Row, error) {
	raw, err := decodeObject(line)
	if err != nil {
		return Row{}, err
	}
	row := typedRow(line, raw)
	row.raw = raw
	return row, nil
}

// decodeObject decodes data as exactly one JSON object, numbers kept as
// written (an int stays an int).
func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not JSON: more after the first value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object but %s", jsonKind(v))
	}
	return obj, nil
}

// rowKeys are the keys the typed fields take, exactly as spelled: the
// typed decoding sees no other key, so a key differing only in case (which
// encoding/json would match) is just an unknown key.
var rowKeys = map[string]bool{
	"stamp": true, "model": true, "task": true, "repeat": true, "provider": true, "base_url": true,
	"slug": true, "run_dir": true, "status": true, "error": true, "turns": true, "wall_s": true,
	"trimmed_turns": true, "prompt_tokens": true, "completion_tokens": true, "acceptance": true,
	"guardrail_blocks": true, "sandbox_resets": true, "diff_stat": true, "harness": true,
	"verdict": true, "review_seconds": true, "failure_class": true, "failure_evidence": true,
	"serving": true, "time": true, "fix_round": true,
}

// typedRow fills a Row from a line and its decoded object. A key whose
// value has another type than the field's reads as absent, so one odd value
// never hides the rest of the row.
func typedRow(line []byte, raw map[string]any) Row {
	var row Row
	if exactKeys(raw) {
		// The common case, a row as written: one decoding.
		err := json.Unmarshal(line, (*rowIn)(&row))
		var typeErr *json.UnmarshalTypeError
		if err == nil || !errors.As(err, &typeErr) {
			return fixHarness(row, raw)
		}
		row = Row{}
	}
	// Key by key, each tried alone first, so a bad one leaves no trace.
	for k, v := range raw {
		if !rowKeys[k] {
			continue
		}
		one, err := json.Marshal(map[string]any{k: v})
		if err != nil {
			continue
		}
		var probe rowIn
		if json.Unmarshal(one, &probe) != nil {
			continue
		}
		_ = json.Unmarshal(one, (*rowIn)(&row)) // the probe decoded it
	}
	return fixHarness(row, raw)
}

// exactKeys reports whether no key of raw differs from a row key in case
// alone (encoding/json would take it for that key).
func exactKeys(raw map[string]any) bool {
	for k := range raw {
		if rowKeys[k] {
			continue
		}
		for known := range rowKeys {
			if strings.EqualFold(k, known) {
				return false
			}
		}
	}
	return true
}

// fixHarness makes an empty harness object (a bench_error row's) nil.
func fixHarness(row Row, raw map[string]any) Row {
	if h, ok := raw["harness"].(map[string]any); ok && len(h) == 0 {
		row.Harness = nil
	}
	return row
}

// rowIn is Row without its MarshalJSON, to decode into.
type rowIn Row

// jsonKind names the kind of a decoded JSON value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}
