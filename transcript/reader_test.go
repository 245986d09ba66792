package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// good returns a well-formed transcript line (without newline).
func good(event string, turn int) string {
	return fmt.Sprintf(`{"ts":"%s","event":"%s","turn":%d}`, testTS, event, turn)
}

func TestRead(t *testing.T) {
	type wantLine struct {
		number int
		event  string
	}
	type wantProblem struct {
		line int
		kind ProblemKind
		err  error
	}
	tests := []struct {
		name     string
		in       string
		lines    []wantLine
		problems []wantProblem
	}{
		{name: "empty"},
		{name: "one line", in: good("nudge", 1) + "\n", lines: []wantLine{{1, "nudge"}}},
		{
			name:  "blank lines skipped but counted",
			in:    "\n" + good("a", 1) + "\n\n  \t \r\n" + good("b", 2) + "\n\n",
			lines: []wantLine{{2, "a"}, {5, "b"}},
		},
		{
			name: "CRLF endings", in: good("a", 1) + "\r\n" + good("b", 2) + "\r\n",
			lines: []wantLine{{1, "a"}, {2, "b"}},
		},
		{
			name: "partial last line of valid JSON", in: good("a", 1) + "\n" + good("b", 2),
			lines:    []wantLine{{1, "a"}},
			problems: []wantProblem{{2, ProblemPartial, ErrPartialLine}},
		},
		{
			name: "partial last line cut mid-object", in: good("a", 1) + "\n" + `{"ts":"2026-`,
			lines:    []wantLine{{1, "a"}},
			problems: []wantProblem{{2, ProblemPartial, ErrPartialLine}},
		},
		{
			name: "blank unterminated tail is no problem", in: good("a", 1) + "\n  ",
			lines: []wantLine{{1, "a"}},
		},
		{
			name: "corrupt lines between good ones",
			in: strings.Join([]string{
				good("a", 1),
				"not json at all",
				`[1,2,3]`,
				`null`,
				`"a string"`,
				`{"ts":"` + testTS + `"}`,
				`{"ts":"` + testTS + `","event":""}`,
				`{"ts":"` + testTS + `","event":7}`,
				`{"event":"x"}`,
				`{"ts":"yesterday","event":"x"}`,
				`{"ts":12,"event":"x"}`,
				`{"ts":"` + testTS + `","event":"x","n":NaN}`,
				`{"ts":"` + testTS + `","event":"x"} trailing`,
				good("b", 2),
			}, "\n") + "\n",
			lines: []wantLine{{1, "a"}, {14, "b"}},
			problems: []wantProblem{
				{2, ProblemCorrupt, ErrCorruptLine},
				{3, ProblemCorrupt, ErrCorruptLine},
				{4, ProblemCorrupt, ErrCorruptLine},
				{5, ProblemCorrupt, ErrCorruptLine},
				{6, ProblemCorrupt, ErrCorruptLine},
				{7, ProblemCorrupt, ErrCorruptLine},
				{8, ProblemCorrupt, ErrCorruptLine},
				{9, ProblemCorrupt, ErrCorruptLine},
				{10, ProblemCorrupt, ErrCorruptLine},
				{11, ProblemCorrupt, ErrCorruptLine},
				{12, ProblemCorrupt, ErrCorruptLine},
				{13, ProblemCorrupt, ErrCorruptLine},
			},
		},
		{
			name:  "timestamp without fraction (original writer)",
			in:    `{"ts":"2026-11-30T07:38:12+00:00","event":"a"}` + "\n",
			lines: []wantLine{{1, "a"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per Read call shakes out chunk-boundary bugs.
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				lines, problems, err := Read(r)
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				var gotLines []wantLine
				for _, l := range lines {
					gotLines = append(gotLines, wantLine{l.Number, l.Event})
					if !json.Valid(l.Raw) {
						t.Errorf("line %d: Raw is not JSON: %s", l.Number, l.Raw)
					}
				}
				if fmt.Sprint(gotLines) != fmt.Sprint(tc.lines) {
					t.Errorf("lines = %v, want %v", gotLines, tc.lines)
				}
				if len(problems) != len(tc.problems) {
					t.Fatalf("problems = %v, want %v", problems, tc.problems)
				}
				for i, p := range problems {
					w := tc.problems[i]
					if p.Line != w.line || p.Kind != w.kind || !errors.Is(p, w.err) {
						t.Errorf("problem %d = {%d %s %v}, want {%d %s %v}", i, p.Line, p.Kind, p.Err, w.line, w.kind, w.err)
					}
					if p.Excerpt == "" {
						t.Errorf("problem %d has no excerpt", i)
					}
				}
			}
		})
	}
}

func TestReadHugeLine(t *testing.T) {
	text := strings.Repeat("a", 64<<20) // 64 MiB of text in one line
	var in bytes.Buffer
	in.WriteString(good("first", 1) + "\n")
	fmt.Fprintf(&in, `{"ts":"%s","event":"assistant","text":"%s","tool_calls":[]}`+"\n", testTS, text)
	in.WriteString(good("last", 3) + "\n")
	lines, problems, err := Read(&in)
	if err != nil || len(problems) != 0 {
		t.Fatalf("Read: %v %v", err, problems)
	}
	if len(lines) != 3 || lines[1].Number != 2 || lines[2].Event != "last" {
		t.Fatalf("got %d lines", len(lines))
	}
	want := fmt.Sprintf(`{"ts":"%s","event":"assistant","text":"%s","tool_calls":[]}`, testTS, text)
	if lines[1].Event != EventAssistant || string(lines[1].Raw) != want {
		t.Fatalf("huge line read back wrong: event %q, %d bytes", lines[1].Event, len(lines[1].Raw))
	}
}

func TestReadSkipsOverLongLines(t *testing.T) {
	long := `{"ts":"` + testTS + `","event":"x","pad":"` + strings.Repeat("é", 300) + `"}`
	tests := []struct {
		name         string
		in           string
		wantLines    []int
		wantProblems []string // "line:kind"
	}{
		{
			"terminated", good("a", 1) + "\n" + long + "\n" + good("b", 2) + "\n",
			[]int{1, 3},
			[]string{"2:corrupt"},
		},
		{
			"unterminated at the end", good("a", 1) + "\n" + long,
			[]int{1},
			[]string{"2:partial"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{1, 7, 100, 1 << 16} {
				var lines []int
				var problems []string
				p := lineParser{limit: 400}
				err := p.readAll(iotest.HalfReader(&chunkReader{s: tc.in, n: chunk}), func(it Item) bool {
					switch it.Kind {
					case ItemLine:
						lines = append(lines, it.Line.Number)
					case ItemProblem:
						problems = append(problems, fmt.Sprintf("%d:%s", it.Problem.Line, it.Problem.Kind))
						if !utf8.ValidString(it.Problem.Excerpt) || len(it.Problem.Excerpt) > excerptBytes || it.Problem.Excerpt == "" {
							t.Errorf("bad excerpt %q", it.Problem.Excerpt)
						}
						if it.Problem.Kind == ProblemCorrupt && !errors.Is(it.Problem.Err, ErrLineTooLong) {
							t.Errorf("over-long line reported as %v", it.Problem.Err)
						}
					}
					return true
				})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(lines) != fmt.Sprint(tc.wantLines) || fmt.Sprint(problems) != fmt.Sprint(tc.wantProblems) {
					t.Errorf("chunk %d: lines %v problems %v, want %v %v", chunk, lines, problems, tc.wantLines, tc.wantProblems)
				}
				if cap(p.pending) > 1024 {
					t.Errorf("chunk %d: parser kept a %d-byte buffer for a skipped line", chunk, cap(p.pending))
				}
			}
		})
	}
}

// chunkReader returns s at most n bytes per Read.
type chunkReader struct {
	s string
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[n:]
	return n, nil
}

func TestReadReturnsLinesBeforeIOError(t *testing.T) {
	boom := errors.New("disk on fire")
	in := io.MultiReader(strings.NewReader(good("a", 1)+"\n"+good("b", 2)), iotest.ErrReader(boom))
	lines, problems, err := Read(in)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the reader's error", err)
	}
	// The unterminated "b" is not a partial line: the input did not end,
	// it failed.
	if len(lines) != 1 || lines[0].Event != "a" || len(problems) != 0 {
		t.Fatalf("lines %v problems %v", lines, problems)
	}
}

func TestReadFile(t *testing.T) {
	_, _, err := ReadFile(filepath.Join(t.TempDir(), TranscriptName))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: got %v, want fs.ErrNotExist", err)
	}
	w, path := newTestWriter(t)
	if err := w.Write(Nudge{Kind: NudgeStall, Turn: 1}); err != nil {
		t.Fatal(err)
	}
	lines, problems, err := ReadFile(path)
	if err != nil || len(problems) != 0 || len(lines) != 1 || lines[0].Event != EventNudge {
		t.Fatalf("ReadFile: %v %v %v", lines, problems, err)
	}
}

func TestProblemError(t *testing.T) {
	p := Problem{Kind: ProblemCorrupt, Line: 3, Err: fmt.Errorf("%w: x", ErrCorruptLine)}
	if got := p.Error(); got != "line 3: corrupt: corrupt transcript line: x" {
		t.Errorf("Error() = %q", got)
	}
	var err error = p
	if !errors.Is(err, ErrCorruptLine) {
		t.Error("Problem does not unwrap to its cause")
	}
}

func FuzzRead(f *testing.F) {
	seeds := []string{
		"",
		"\n",
		good("a", 1) + "\n",
		good("a", 1) + "\n" + good("b", 2),
		good("a", 1) + "\r\n\r\n" + `{"ts":"` + testTS + `"}` + "\n",
		`{"ts":"` + testTS + `","event":"run_end","status":"x","turns":"bad"}` + "\n",
		`{"ts":"` + testTS + `","event":"run_start","sandbox":{"backend":"docker"},"temperature":null}` + "\n",
		`[{"ts":1}]` + "\n" + "\xff\xfe\n" + `{"ts":"` + testTS + `","event":"\u00e9"}`,
		`{"ts":"` + testTS + `","event":"assistant","text":"` + strings.Repeat("x", 1000) + `"}` + "\n",
		"{\"ts\":\"" + testTS + "\",\"event\":\"x\",\"a\":[[[[[[[[[[]]]]]]]]]]}\n{",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, problems, err := Read(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Read from memory failed: %v", err)
		}
		newlines := bytes.Count(data, []byte{'\n'})
		last := 0
		li, pi := 0, 0
		// Lines and problems interleave in file order with rising numbers.
		for li < len(lines) || pi < len(problems) {
			var n int
			if pi == len(problems) || li < len(lines) && lines[li].Number < problems[pi].Line {
				l := lines[li]
				li++
				n = l.Number
				if !json.Valid(l.Raw) || l.Event == "" || l.TS.IsZero() {
					t.Fatalf("bad line %+v", l)
				}
				_, _ = l.Decode() // must not panic; errors are allowed
			} else {
				p := problems[pi]
				pi++
				n = p.Line
				if p.Kind == ProblemPartial && (pi != len(problems) || n != newlines+1) {
					t.Fatalf("partial problem %+v is not the last line (%d newlines)", p, newlines)
				}
				if !utf8.ValidString(p.Excerpt) || len(p.Excerpt) > excerptBytes {
					t.Fatalf("bad excerpt %q", p.Excerpt)
				}
			}
			if n <= last {
				t.Fatalf("line number %d after %d", n, last)
			}
			last = n
		}
		if last > newlines+1 {
			t.Fatalf("line number %d beyond %d newlines", last, newlines)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' && len(bytes.TrimSpace(data[bytes.LastIndexByte(data, '\n')+1:])) > 0 {
			if len(problems) == 0 || problems[len(problems)-1].Kind != ProblemPartial {
				t.Fatalf("unterminated non-blank tail not reported as partial")
			}
		}
	})
}
