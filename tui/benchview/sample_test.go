package benchview

import (
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// t0 is the tests' "now".
var t0 = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// samplePath is where the sample claims to come from.
const samplePath = "/home/u/.dirtywork/bench/20261202T130000Z.jsonl"

// sampleRuns is the runs root of the sample: verdicts people gave.
type sampleRuns map[string]backend.Run

func (s sampleRuns) get(slug string) (backend.Run, *live.State, bool) {
	r, ok := s[slug]
	if !ok {
		return backend.Run{}, nil, false
	}
	var st *live.State
	if r.Live() {
		st = &live.State{Turn: 7}
	}
	return r, st, true
}

// liveRun is a run in flight.
func liveRun(slug string) backend.Run {
	return backend.Run{RunRecord: transcript.RunRecord{Slug: slug, Status: transcript.StatusRunning}, Alive: true}
}

// outcome is one sample case's result.
type outcome struct {
	acceptance, class, evidence string
}

var (
	pass     = outcome{bench.AcceptancePass, "", ""}
	failM    = outcome{bench.AcceptanceFail, bench.FailureModel, "run_end: status completed; acceptance: exit status 1"}
	failLoop = outcome{bench.AcceptanceSkipped, bench.FailureLoop, "run_end: status max_turns"}
	failFmt  = outcome{bench.AcceptanceSkipped, bench.FailureFormat, "run_end: status model_error: aborted after 3 consecutive malformed_args tool failures"}
	gamed    = outcome{bench.AcceptanceGamed, bench.FailureGamed, "acceptance: acceptance/check.py changed"}
	server   = outcome{bench.AcceptanceSkipped, bench.FailureServer, "run_end: model_failure server: connection refused"}
)

// sampleRows is a finished sweep: three models, one served two ways,
// four tasks, three repeats.
func sampleRows() ([]bench.Row, sampleRuns) {
	lms := &bench.Serving{Server: "lmstudio", Version: "0.3.31", ContextLength: ptr(65536), Quantization: "q4_k_m", Slots: 2}
	oll := &bench.Serving{Server: "ollama", Version: "0.12.3", ContextLength: ptr(32768), Quantization: "Q8_0", Slots: 1}
	cpp := &bench.Serving{Server: "llama.cpp", Version: "b6000", ContextLength: ptr(32768), Quantization: "Q8_0", Slots: 4}
	models := []struct {
		name, url string
		serving   *bench.Serving
		by        map[string][3]outcome
	}{
		{"qwen/qwen3-coder", "http://10.0.0.5:1234/v1", lms, map[string][3]outcome{
			"go-failing-test": {pass, pass, pass}, "node-cli-flag": {pass, failM, pass},
			"py-off-by-one": {pass, pass, pass}, "shell-format": {failLoop, pass, server},
		}},
		{"devstral", "http://10.0.0.6:11434/v1", oll, map[string][3]outcome{
			"go-failing-test": {pass, failM, failM}, "node-cli-flag": {failFmt, failFmt, pass},
			"py-off-by-one": {pass, pass, failM}, "shell-format": {gamed, failM, failM},
		}},
		{"devstral", "http://10.0.0.7:8080/v1", cpp, map[string][3]outcome{
			"go-failing-test": {pass, pass, failM}, "node-cli-flag": {pass, failFmt, pass},
			"py-off-by-one": {pass, pass, pass}, "shell-format": {failM, pass, failM},
		}},
		{"gpt-oss-20b", "http://10.0.0.5:1234/v1", nil, map[string][3]outcome{
			"go-failing-test": {failM, failM, failM}, "node-cli-flag": {failLoop, failM, failM},
			"py-off-by-one": {pass, failM, failM}, "shell-format": {failM, failM, failM},
		}},
	}
	runs := sampleRuns{}
	var rows []bench.Row
	n := 0
	for _, mdl := range models {
		for _, task := range []string{"go-failing-test", "node-cli-flag", "py-off-by-one", "shell-format"} {
			for rep, o := range mdl.by[task] {
				n++
				slug := fmt.Sprintf("%s-1202130000-%08x", task, n)
				r := bench.Row{
					Stamp: "20261202T130000Z", Model: mdl.name, Task: task, Repeat: rep, Provider: ptr("openai"), BaseURL: ptr(mdl.url),
					Slug: ptr(slug), RunDir: ptr("/home/u/.dirtywork/runs/" + slug), Status: "completed",
					Turns: ptr(4 + n%9), WallS: ptr(bench.Seconds(20 + float64(n%7)*3.5)), PromptTokens: ptr(9000 + n*10),
					CompletionTokens: ptr(700), Acceptance: o.acceptance, Harness: &bench.Harness{},
					FailureClass: o.class, FailureEvidence: o.evidence, Serving: mdl.serving, DiffStat: ptr(" main.go | 4 ++--\n"),
					Time: &bench.Time{
						StagingS: ptr(0.4), SandboxStartS: ptr(1.1), PrefillS: ptr(2.5), DecodeS: ptr(12.0 + float64(n%5)),
						DecodeTokensPerS: ptr(31.0), ToolsS: ptr(3.2), ExportS: ptr(0.3), AcceptanceS: ptr(1.4),
					},
				}
				if o.class == bench.FailureLoop || o.class == bench.FailureFormat {
					r.Status = "max_turns"
				}
				if o.acceptance == bench.AcceptancePass {
					r.FixRound = ptr(0)
				}
				rows = append(rows, r)
				runs[slug] = backend.Run{
					RunRecord: transcript.RunRecord{Slug: slug, Status: transcript.StatusCompleted, Turns: r.Turns}, RunDir: *r.RunDir,
				}
			}
		}
	}
	// Verdicts: qwen's first three accepted, one of devstral's passes
	// rejected (a false pass), one failure rejected.
	for i, v := range map[int]transcript.Verdict{0: "accept", 1: "accept", 2: "accept", 12: "reject", 13: "reject"} {
		run := runs[*rows[i].Slug]
		run.Verdict = v
		run.ReviewSeconds = ptr(10 + float64(i))
		runs[*rows[i].Slug] = run
	}
	return rows, runs
}

// sampleModel is the view over rows, as the first read delivers them.
func sampleModel(t *testing.T, w, h int, mode theme.Mode, rows []bench.Row, runs sampleRuns) Model {
	t.Helper()
	km := keys.Default()
	m := New(theme.New(mode), &km, runs.get, samplePath, "")
	m.SetSize(w, h)
	for i := range rows {
		rows[i].Line = i + 1
	}
	m, _ = m.Update(rowsMsg{path: samplePath, u: update{Reset: true, Rows: rows}})
	m, _ = m.Update(stateMsg{})
	return m
}

// press sends keys by name.
func press(m Model, names ...string) (Model, tea.Cmd) {
	var cmd tea.Cmd
	for _, n := range names {
		m, cmd = m.Update(keyPress(n))
	}
	return m, cmd
}

func keyPress(name string) tea.KeyPressMsg {
	switch name {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	}
	r := []rune(name)[0]
	return tea.KeyPressMsg{Code: r, Text: name}
}
