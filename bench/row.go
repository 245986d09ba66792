package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Statuses and acceptance outcomes a row carries besides a run's own status.
const (
	// StatusBenchError is the status of a case whose staging or run failed
	// before a run result existed (B-5): the sweep records it and goes on.
	StatusBenchError = "bench_error"

	// The acceptance outcomes (B-7).
	AcceptancePass    = "pass"
	AcceptanceFail    = "fail"
	AcceptanceGamed   = "gamed"
	AcceptanceSkipped = "skipped"
)

// The failure classes of a row that did not pass, read from the transcript
// and the run record. Server and sandbox failures are the harness's, never
// the model's: summaries leave them out of a model's pass rate.
const (
	FailureFormat  = "format"  // text tool call, malformed arguments, unknown tool
	FailureContext = "context" // truncation, trimming, context_exhausted, a server 400 for overflow
	FailureLoop    = "loop"    // stalled, stuck, max_turns
	FailureTimeout = "timeout" // the run's wall-clock limit
	FailureServer  = "server"  // connection refused, 5xx, the server died
	FailureSandbox = "sandbox" // infra, export, watchdog
	FailureGamed   = "gamed"   // the worker changed its copy of acceptance/
	FailureModel   = "model"   // finished, acceptance failed
)

// FailureClasses lists the failure classes in the order summaries print them.
var FailureClasses = []string{
	FailureFormat, FailureContext, FailureLoop, FailureTimeout,
	FailureServer, FailureSandbox, FailureGamed, FailureModel,
}

// NudgeKinds are the nudge kinds a row's harness counts one by one, in the
// order the original's NUDGES column prints them (B-9).
var NudgeKinds = []string{"stall", "empty", "truncated", "text_tool_call", "timeout"}

// Row is one line of a results file: one (model, task, repeat) case as
// scored. The keys of B-8 and B-9 are written exactly as the original writes
// them (a null is a null, never a 0), so the original's summarize reads our
// files; the keys after Verdict/ReviewSeconds are ours.
//
// A case is identified by Case(): model, provider, base_url, task and
// repeat. That is what a resumed sweep skips when a row for it exists.
//
// A bench_error row (Status StatusBenchError) carries Error, null run
// fields, acceptance "skipped", zero counters, an empty harness object and
// no trimmed_turns key at all.
type Row struct {
	Stamp            string   `json:"stamp"`
	Model            string   `json:"model"`
	Task             string   `json:"task"`
	Repeat           int      `json:"repeat"`
	Provider         *string  `json:"provider"`
	BaseURL          *string  `json:"base_url"`
	Slug             *string  `json:"slug"`
	RunDir           *string  `json:"run_dir"`
	Status           string   `json:"status"`
	Error            *string  `json:"error,omitempty"`
	Turns            *int     `json:"turns"`
	WallS            *Seconds `json:"wall_s"`
	TrimmedTurns     *int     `json:"trimmed_turns"`
	PromptTokens     *int     `json:"prompt_tokens"`
	CompletionTokens *int     `json:"completion_tokens"`
	Acceptance       string   `json:"acceptance"`
	GuardrailBlocks  int      `json:"guardrail_blocks"`
	SandboxResets    int      `json:"sandbox_resets"`
	DiffStat         *string  `json:"diff_stat"`
	// Harness is nil for a bench_error row (written as {}).
	Harness       *Harness `json:"harness"`
	Verdict       *string  `json:"verdict"`
	ReviewSeconds *float64 `json:"review_seconds"`

	// FailureClass is one of FailureClasses for a row that did not pass,
	// empty for a pass; FailureEvidence is the transcript or record line
	// that decided it.
	FailureClass    string `json:"failure_class,omitempty"`
	FailureEvidence string `json:"failure_evidence,omitempty"`
	// Serving is what the model server said about itself.
	Serving *Serving `json:"serving,omitempty"`
	// Time splits the case's wall time.
	Time *Time `json:"time,omitempty"`
	// FixRound is the round whose acceptance first passed: 0 for the run
	// itself, k for the k-th resume with the acceptance output as feedback;
	// nil when no round passed.
	FixRound *int `json:"fix_round,omitempty"`

	// Line is the row's line number in the file it was read from (1-based),
	// 0 for a row made in memory.
	Line int `json:"-"`
	// raw is the line as decoded (numbers kept as written), for the
	// original's summaries, which print values as they were written.
	raw map[string]any
}

// Harness is a row's harness-failure counters (B-9).
type Harness struct {
	NudgeStall        int `json:"nudge_stall"`
	NudgeEmpty        int `json:"nudge_empty"`
	NudgeTruncated    int `json:"nudge_truncated"`
	NudgeTextToolCall int `json:"nudge_text_tool_call"`
	NudgeTimeout      int `json:"nudge_timeout"`
	NudgeOther        int `json:"nudge_other"`
	// EmptyReply counts the nudges other than stall and timeout.
	EmptyReply int `json:"empty_reply"`
	// Timeouts is the run's count of timed-out commands.
	Timeouts int `json:"timeouts"`
	// Stalled, MaxTurns and SandboxError are 1 when the run's status was that.
	Stalled      int `json:"stalled"`
	MaxTurns     int `json:"max_turns"`
	SandboxError int `json:"sandbox_error"`
	// AbortKind is the failure kind that aborted the run, "mixed" for tool
	// failures of several kinds, nil when none did.
	AbortKind *string `json:"abort_kind"`
}

// Serving is what a model server says about itself, read from it when the
// case ran. Rows whose serving differs are never pooled in a summary.
type Serving struct {
	Server        string `json:"server"`
	Version       string `json:"version"`
	ContextLength *int   `json:"context_length"`
	Quantization  string `json:"quantization"`
	// Slots is how many requests the server takes at once.
	Slots int `json:"slots"`
}

// Time is where a case's wall time went, in seconds; nil where the part
// was not measured (decode tokens per second needs a stream that reports
// usage).
type Time struct {
	StagingS         *float64 `json:"staging_s"`
	SandboxStartS    *float64 `json:"sandbox_start_s"`
	PrefillS         *float64 `json:"prefill_s"`
	DecodeS          *float64 `json:"decode_s"`
	DecodeTokensPerS *float64 `json:"decode_tokens_per_s"`
	ToolsS           *float64 `json:"tools_s"`
	ExportS          *float64 `json:"export_s"`
	AcceptanceS      *float64 `json:"acceptance_s"`
}

// CaseKey identifies a case across a sweep and its resumptions.
type CaseKey struct {
	Model    string
	Provider string
	BaseURL  string
	Task     string
	Repeat   int
}

// Case is the case the row scores.
func (r *Row) Case() CaseKey {
	return CaseKey{Model: r.Model, Provider: deref(r.Provider), BaseURL: deref(r.BaseURL), Task: r.Task, Repeat: r.Repeat}
}

// Extended reports whether the row carries any key the original does not
// write: a results file with such a row gets this build's statistics.
func (r *Row) Extended() bool {
	return r.FailureClass != "" || r.FailureEvidence != "" || r.Serving != nil || r.Time != nil || r.FixRound != nil
}

// Passed reports whether the row's acceptance passed.
func (r *Row) Passed() bool { return r.Acceptance == AcceptancePass }

// Infra reports whether the row failed for a reason that is not the
// model's: a bench_error, or a server or sandbox failure.
func (r *Row) Infra() bool {
	return r.Status == StatusBenchError || r.FailureClass == FailureServer || r.FailureClass == FailureSandbox
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// rowOut is the key order of a row as the original writes one.
type rowOut struct {
	Stamp            string          `json:"stamp"`
	Model            string          `json:"model"`
	Task             string          `json:"task"`
	Repeat           int             `json:"repeat"`
	Provider         *string         `json:"provider"`
	BaseURL          *string         `json:"base_url"`
	Slug             *string         `json:"slug"`
	RunDir           *string         `json:"run_dir"`
	Status           string          `json:"status"`
	Error            *string         `json:"error,omitempty"`
	Turns            *int            `json:"turns"`
	WallS            *Seconds        `json:"wall_s"`
	TrimmedTurns     json.RawMessage `json:"trimmed_turns,omitempty"`
	PromptTokens     *int            `json:"prompt_tokens"`
	CompletionTokens *int            `json:"completion_tokens"`
	Acceptance       string          `json:"acceptance"`
	GuardrailBlocks  int             `json:"guardrail_blocks"`
	SandboxResets    int             `json:"sandbox_resets"`
	DiffStat         *string         `json:"diff_stat"`
	Harness          json.RawMessage `json:"harness"`
	Verdict          *string         `json:"verdict"`
	ReviewSeconds    *float64        `json:"review_seconds"`
	FailureClass     string          `json:"failure_class,omitempty"`
	FailureEvidence  string          `json:"failure_evidence,omitempty"`
	Serving          *Serving        `json:"serving,omitempty"`
	Time             *Time           `json:"time,omitempty"`
	FixRound         *int            `json:"fix_round,omitempty"`
}

// MarshalJSON writes the row as the original does: a bench_error row has
// no trimmed_turns key, any other row has it (null when unknown), and a
// missing harness is an empty object.
func (r Row) MarshalJSON() ([]byte, error) {
	out := rowOut{
		Stamp: r.Stamp, Model: r.Model, Task: r.Task, Repeat: r.Repeat, Provider: r.Provider,
		BaseURL: r.BaseURL, Slug: r.Slug, RunDir: r.RunDir, Status: r.Status, Error: r.Error,
		Turns: r.Turns, WallS: r.WallS, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
		Acceptance: r.Acceptance, GuardrailBlocks: r.GuardrailBlocks, SandboxResets: r.SandboxResets,
		DiffStat: r.DiffStat, Verdict: r.Verdict, ReviewSeconds: finite(r.ReviewSeconds),
		FailureClass: r.FailureClass, FailureEvidence: r.FailureEvidence, Serving: r.Serving,
		Time: r.Time.finite(), FixRound: r.FixRound,
	}
	if r.Status != StatusBenchError {
		out.TrimmedTurns = json.RawMessage("null")
		if r.TrimmedTurns != nil {
			out.TrimmedTurns = strconv.AppendInt(nil, int64(*r.TrimmedTurns), 10)
		}
	}
	out.Harness = json.RawMessage("{}")
	if r.Harness != nil {
		h, err := json.Marshal(r.Harness)
		if err != nil {
			return nil, err
		}
		out.Harness = h
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Diff stats and errors quote the worker's file names; keep them legible.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// finite is p, or nil when it points at NaN or an infinity (JSON has
// neither).
func finite(p *float64) *float64 {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	return p
}

func (t *Time) finite() *Time {
	if t == nil {
		return nil
	}
	return &Time{
		StagingS: finite(t.StagingS), SandboxStartS: finite(t.SandboxStartS), PrefillS: finite(t.PrefillS),
		DecodeS: finite(t.DecodeS), DecodeTokensPerS: finite(t.DecodeTokensPerS), ToolsS: finite(t.ToolsS),
		ExportS: finite(t.ExportS), AcceptanceS: finite(t.AcceptanceS),
	}
}

// Seconds is a duration in seconds written as the original writes wall_s:
// always with a decimal point (2.0, not 2), so a reader in the original
// prints it as a float; a non-finite value is written as null.
type Seconds float64

// MarshalJSON writes s with a decimal point, or null when it is not finite.
func (s Seconds) MarshalJSON() ([]byte, error) {
	x := float64(s)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return []byte(pyFloatRepr(x)), nil
}
