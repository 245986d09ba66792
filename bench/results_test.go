package bench

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// scoredRow is a complete row of a run that finished, with this build's keys.
func scoredRow() Row {
	return Row{
		Stamp: "20260102T030405Z", Model: "qwen/qwen3-coder-next", Task: "py-fix-off-by-one", Repeat: 1,
		Provider: ptr("openai"), Slug: ptr("fix-it-0102030405-abcd1234"), RunDir: ptr("/h/runs/fix-it-0102030405-abcd1234"),
		Status: "completed", Turns: ptr(4), WallS: ptr(Seconds(12)), PromptTokens: ptr(100), CompletionTokens: ptr(20),
		Acceptance: AcceptanceFail, DiffStat: ptr(" a.py | 2 +-\n"),
		Harness:      &Harness{NudgeEmpty: 1, EmptyReply: 1, Timeouts: 2, AbortKind: ptr("mixed")},
		FailureClass: FailureModel, FailureEvidence: "acceptance: exit status 1",
		Serving: &Serving{Server: "lmstudio", Version: "0.3.31", ContextLength: ptr(65536), Quantization: "q4_k_m", Slots: 2},
		Time:    &Time{StagingS: ptr(0.5), DecodeS: ptr(9.25)},
	}
}

func TestRowJSONIsTheOriginals(t *testing.T) {
	t.Parallel()
	data, err := scoredRow().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// Every key of B-8 in the original's order, nulls as nulls, wall_s
	// with its decimal point, then this build's keys.
	want := `{"stamp":"20260102T030405Z","model":"qwen/qwen3-coder-next","task":"py-fix-off-by-one","repeat":1,` +
		`"provider":"openai","base_url":null,"slug":"fix-it-0102030405-abcd1234","run_dir":"/h/runs/fix-it-0102030405-abcd1234",` +
		`"status":"completed","turns":4,"wall_s":12.0,"trimmed_turns":null,"prompt_tokens":100,"completion_tokens":20,` +
		`"acceptance":"fail","guardrail_blocks":0,"sandbox_resets":0,"diff_stat":" a.py | 2 +-\n",` +
		`"harness":{"nudge_stall":0,"nudge_empty":1,"nudge_truncated":0,"nudge_text_tool_call":0,"nudge_timeout":0,` +
		`"nudge_other":0,"empty_reply":1,"timeouts":2,"stalled":0,"max_turns":0,"sandbox_error":0,"abort_kind":"mixed"},` +
		`"verdict":null,"review_seconds":null,"failure_class":"model","failure_evidence":"acceptance: exit status 1",` +
		`"serving":{"server":"lmstudio","version":"0.3.31","context_length":65536,"quantization":"q4_k_m","slots":2},` +
		`"time":{"staging_s":0.5,"sandbox_start_s":null,"prefill_s":null,"decode_s":9.25,"decode_tokens_per_s":null,` +
		`"tools_s":null,"export_s":null,"acceptance_s":null}}`
	if string(data) != want {
		t.Errorf("row JSON =\n%s\nwant\n%s", data, want)
	}
}

func TestBenchErrorRowJSON(t *testing.T) {
	t.Parallel()
	row := Row{
		Stamp: "s", Model: "m", Task: "t", Status: StatusBenchError, Error: ptr("git: command not found"),
		WallS: ptr(Seconds(0.3)), Acceptance: AcceptanceSkipped,
	}
	data, err := row.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// No trimmed_turns key, an empty harness, counters 0, the rest null.
	want := `{"stamp":"s","model":"m","task":"t","repeat":0,"provider":null,"base_url":null,"slug":null,"run_dir":null,` +
		`"status":"bench_error","error":"git: command not found","turns":null,"wall_s":0.3,"prompt_tokens":null,` +
		`"completion_tokens":null,"acceptance":"skipped","guardrail_blocks":0,"sandbox_resets":0,"diff_stat":null,` +
		`"harness":{},"verdict":null,"review_seconds":null}`
	if string(data) != want {
		t.Errorf("bench_error JSON =\n%s\nwant\n%s", data, want)
	}
}

func TestAppendRowAndReadBack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "results.jsonl")
	first, second := scoredRow(), Row{Model: "m", Task: "t", Status: StatusBenchError, Error: ptr("boom"), Acceptance: AcceptanceSkipped}
	for _, r := range []Row{first, second} {
		if err := AppendRow(path, r); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("results file mode = %v, %v; want 0600", info.Mode(), err)
	}
	data, _ := os.ReadFile(path)
	if lines := strings.Split(string(data), "\n"); len(lines) != 3 || lines[2] != "" {
		t.Fatalf("want two newline-terminated lines, got %q", data)
	}
	res, err := ReadResults(path)
	if err != nil || len(res.Rows) != 2 || len(res.Problems) != 0 {
		t.Fatalf("ReadResults = %+v, %v", res, err)
	}
	got := res.Rows[0]
	if got.Line != 1 || res.Rows[1].Line != 2 {
		t.Errorf("line numbers %d, %d", got.Line, res.Rows[1].Line)
	}
	got.Line, got.raw = 0, nil
	if !reflect.DeepEqual(got, first) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, first)
	}
	if res.Rows[1].Harness != nil || res.Rows[1].Error == nil || *res.Rows[1].Error != "boom" {
		t.Errorf("bench_error row read back as %+v", res.Rows[1])
	}
	if got.Case() != (CaseKey{Model: first.Model, Provider: "openai", Task: first.Task, Repeat: 1}) {
		t.Errorf("Case() = %+v", got.Case())
	}
}

func TestAppendRowRefusesLinksAndSpecialFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := AppendRow(link, scoredRow()); err == nil {
		t.Error("AppendRow followed a symlink")
	}
	if data, _ := os.ReadFile(target); len(data) != 0 {
		t.Errorf("the link's target was written: %q", data)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// No reader: a plain open would block; the open fails at once instead.
	if err := AppendRow(fifo, scoredRow()); err == nil {
		t.Error("AppendRow wrote into a FIFO")
	}
	if err := AppendRow(dir, scoredRow()); err == nil {
		t.Error("AppendRow wrote into a directory")
	}
}

func TestReadResultsToleratesAndReports(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	content := strings.Join([]string{
		`{"model": "m", "task": "t", "repeat": 2, "future_key": {"x": 1}, "acceptance": "pass"}`,
		``,
		`   `,
		`{"model": "m", "turns": "many", "wall_s": 3.5, "Status": "completed"}`,
		`{"model": "m", "task": "t2", "cut`,
		`[1, 2]`,
		`{"model": "m"} {"model": "n"}`,
		`{"model": "last", "harness": {}, "serving": {"server": "ollama", "slots": 1}}`,
	}, "\n")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("rows = %+v", res.Rows)
	}
	if r := res.Rows[0]; r.Task != "t" || r.Repeat != 2 || !r.Passed() || r.Line != 1 {
		t.Errorf("row with an unknown key = %+v", r)
	}
	// A value of the wrong type reads as absent, the rest of the row stays;
	// a key differing in case is no key of ours.
	if r := res.Rows[1]; r.Turns != nil || r.WallS == nil || *r.WallS != 3.5 || r.Status != "" || r.Line != 4 {
		t.Errorf("row with an odd value = %+v", r)
	}
	if r := res.Rows[2]; r.Harness != nil || r.Serving == nil || r.Serving.Server != "ollama" || !r.Extended() || r.Line != 8 {
		t.Errorf("last row = %+v", r)
	}
	var lines []int
	for _, p := range res.Problems {
		lines = append(lines, p.Line)
	}
	if !reflect.DeepEqual(lines, []int{5, 6, 7}) {
		t.Errorf("problem lines = %v (%v)", lines, res.Problems)
	}
	if _, err := ReadResults(filepath.Join(t.TempDir(), "absent.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// A row appended after a cut last line (a sweep killed mid-write) starts
// a line of its own: the cut line is one problem, the row is whole.
func TestAppendRowAfterACutLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	whole := Row{Model: "m", Task: "t", Status: "completed", Acceptance: AcceptancePass}
	if err := AppendRow(path, whole); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"stamp":"s","model":"m","ta`); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	next := Row{Model: "m", Task: "t", Repeat: 1, Status: "completed", Acceptance: AcceptanceFail}
	if err := AppendRow(path, next); err != nil {
		t.Fatal(err)
	}
	res, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[1].Repeat != 1 || res.Rows[1].Acceptance != AcceptanceFail {
		t.Fatalf("rows %+v", res.Rows)
	}
	if len(res.Problems) != 1 || res.Problems[0].Line != 2 {
		t.Fatalf("problems %v", res.Problems)
	}
}
