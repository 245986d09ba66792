package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

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
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, resultsFileMode)
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
	// A sweep killed mid-write left a cut last line: the row starts a line
	// of its own, or it would be glued to the cut one and lost with it.
	if info.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, info.Size()-1); err != nil {
			return fmt.Errorf("read results file %s: %w", f.Name(), err)
		}
		if last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
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
	row := typedRow(raw)
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

// typedRow is a decoded object as a Row. Only keys spelled exactly as
// ours count (encoding/json would also take "Model" for "model"), and a
// value of another type than the field's reads as absent, so one odd value
// never hides the rest of the row.
func typedRow(raw map[string]any) Row {
	f := fields(raw)
	r := Row{
		Stamp: f.str("stamp"), Model: f.str("model"), Task: f.str("task"), Repeat: f.int("repeat"),
		Provider: f.strPtr("provider"), BaseURL: f.strPtr("base_url"), Slug: f.strPtr("slug"),
		RunDir: f.strPtr("run_dir"), Status: f.str("status"), Error: f.strPtr("error"), Turns: f.intPtr("turns"),
		TrimmedTurns: f.intPtr("trimmed_turns"), PromptTokens: f.intPtr("prompt_tokens"),
		CompletionTokens: f.intPtr("completion_tokens"), Acceptance: f.str("acceptance"),
		GuardrailBlocks: f.int("guardrail_blocks"), SandboxResets: f.int("sandbox_resets"),
		DiffStat: f.strPtr("diff_stat"), Verdict: f.strPtr("verdict"), ReviewSeconds: f.floatPtr("review_seconds"),
		FailureClass: f.str("failure_class"), FailureEvidence: f.str("failure_evidence"), FixRound: f.intPtr("fix_round"),
	}
	if w := f.floatPtr("wall_s"); w != nil {
		r.WallS = (*Seconds)(w)
	}
	// A bench_error row's harness is an empty object: no harness.
	if h, ok := raw["harness"].(map[string]any); ok && len(h) > 0 {
		r.Harness = typedHarness(h)
	}
	if s, ok := raw["serving"].(map[string]any); ok {
		f := fields(s)
		r.Serving = &Serving{
			Server: f.str("server"), Version: f.str("version"), ContextLength: f.intPtr("context_length"),
			Quantization: f.str("quantization"), Slots: f.int("slots"),
		}
	}
	if t, ok := raw["time"].(map[string]any); ok {
		f := fields(t)
		r.Time = &Time{
			StagingS: f.floatPtr("staging_s"), SandboxStartS: f.floatPtr("sandbox_start_s"),
			PrefillS: f.floatPtr("prefill_s"), DecodeS: f.floatPtr("decode_s"),
			DecodeTokensPerS: f.floatPtr("decode_tokens_per_s"), ToolsS: f.floatPtr("tools_s"),
			ExportS: f.floatPtr("export_s"), AcceptanceS: f.floatPtr("acceptance_s"),
		}
	}
	return r
}

func typedHarness(h map[string]any) *Harness {
	f := fields(h)
	return &Harness{
		NudgeStall: f.int("nudge_stall"), NudgeEmpty: f.int("nudge_empty"), NudgeTruncated: f.int("nudge_truncated"),
		NudgeTextToolCall: f.int("nudge_text_tool_call"), NudgeTimeout: f.int("nudge_timeout"),
		NudgeOther: f.int("nudge_other"), EmptyReply: f.int("empty_reply"), Timeouts: f.int("timeouts"),
		Stalled: f.int("stalled"), MaxTurns: f.int("max_turns"), SandboxError: f.int("sandbox_error"),
		AbortKind: f.strPtr("abort_kind"),
	}
}

// fields reads typed values out of a decoded object; a value of another
// type is absent, as is a number that does not fit (an integer field takes
// integer literals only, as encoding/json does).
type fields map[string]any

func (f fields) str(k string) string {
	s, _ := f[k].(string)
	return s
}

func (f fields) strPtr(k string) *string {
	if s, ok := f[k].(string); ok {
		return &s
	}
	return nil
}

func (f fields) intPtr(k string) *int {
	n, ok := f[k].(json.Number)
	if !ok {
		return nil
	}
	i, err := strconv.Atoi(string(n))
	if err != nil {
		return nil
	}
	return &i
}

func (f fields) int(k string) int {
	if p := f.intPtr(k); p != nil {
		return *p
	}
	return 0
}

func (f fields) floatPtr(k string) *float64 {
	n, ok := f[k].(json.Number)
	if !ok {
		return nil
	}
	x, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return nil
	}
	return &x
}

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
