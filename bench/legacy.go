package bench

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
)

// The original's summaries (B-10 … B-14), computed as it computes them:
// over the rows as written, with Python's notion of a number, of a missing
// key and of truth, so its tables come out byte for byte.

// VerdictLookup returns the verdict and review seconds of the run a row
// names by slug, as its run.json says now; ok is false when there is no
// such readable record, and the row's own values are used instead (B-10).
// The values are as decoded (a string, a json.Number, nil, …).
type VerdictLookup func(slug string) (verdict, reviewSeconds any, ok bool)

// entry is a row as the original's summaries see it.
type entry struct {
	row     *Row
	raw     map[string]any
	verdict any
	review  any
}

// newEntries pairs every row with its decoded object and its verdict,
// looked up once.
func newEntries(rows []Row, lookup VerdictLookup) []entry {
	out := make([]entry, len(rows))
	for i := range rows {
		e := entry{row: &rows[i], raw: rowObject(&rows[i])}
		e.verdict, e.review = verdictFor(e.raw, lookup)
		out[i] = e
	}
	return out
}

// rowObject is the row's decoded object: as read, or as it would be
// written for a row made in memory.
func rowObject(r *Row) map[string]any {
	if r.raw != nil {
		return r.raw
	}
	data, err := json.Marshal(r)
	if err != nil {
		return map[string]any{}
	}
	obj, err := decodeObject(data)
	if err != nil {
		return map[string]any{}
	}
	return obj
}

// verdictFor is the original's verdict re-read: the run's record when the
// row names a run with one, else the row's own values. A record without a
// verdict means no verdict, whatever the row says.
func verdictFor(raw map[string]any, lookup VerdictLookup) (verdict, review any) {
	if slug, ok := raw["slug"].(string); ok && slug != "" && lookup != nil {
		if v, r, ok := lookup(slug); ok {
			return v, r
		}
	}
	return raw["verdict"], raw["review_seconds"]
}

// get is dict.get(key, def): a key present with null is nil, not def.
func get(raw map[string]any, key string, def any) any {
	if v, ok := raw[key]; ok {
		return v
	}
	return def
}

// orDash is "-" for nil, else str(v).
func orDash(v any) string {
	if v == nil {
		return "-"
	}
	return pyStr(v)
}

// harnessOf is the row's harness object, or an empty one.
func harnessOf(raw map[string]any) map[string]any {
	if h, ok := raw["harness"].(map[string]any); ok {
		return h
	}
	return map[string]any{}
}

// nudgeKeys are the harness keys of NudgeKinds.
var nudgeKeys = func() []string {
	keys := make([]string, len(NudgeKinds))
	for i, k := range NudgeKinds {
		keys[i] = "nudge_" + k
	}
	return keys
}()

// detailColumns are the original's per-case table (B-11).
var detailColumns = []string{
	"model", "task", "rep", "status", "turns", "wall_s", "prompt",
	"completion", "accept", "verdict", "review_s", "nudges", "failures",
}

// detailCells is one case's line of the per-case table.
func detailCells(e entry) []string {
	raw := e.raw
	h := harnessOf(raw)
	nudges := make([]string, len(nudgeKeys))
	for i, k := range nudgeKeys {
		nudges[i] = pyStr(get(h, k, json.Number("0")))
	}
	verdict := "-"
	if pyTruthy(e.verdict) {
		verdict = pyStr(e.verdict)
	}
	return []string{
		pyStr(get(raw, "model", "?")), pyStr(get(raw, "task", "?")),
		pyStr(get(raw, "repeat", json.Number("0"))), pyStr(get(raw, "status", "?")),
		orDash(raw["turns"]), orDash(raw["wall_s"]), orDash(raw["prompt_tokens"]),
		orDash(raw["completion_tokens"]), pyStr(get(raw, "acceptance", "-")),
		verdict, orDash(e.review), strings.Join(nudges, "/"), failureCell(h),
	}
}

// failureCell names the harness classes a run hit, "-" for none.
func failureCell(h map[string]any) string {
	var parts []string
	for _, name := range []string{"stalled", "max_turns", "sandbox_error"} {
		if pyTruthy(h[name]) {
			parts = append(parts, name)
		}
	}
	if pyTruthy(h["empty_reply"]) {
		parts = append(parts, "empty_reply="+pyStr(h["empty_reply"]))
	}
	if pyTruthy(h["timeouts"]) {
		parts = append(parts, "timeouts="+pyStr(h["timeouts"]))
	}
	if pyTruthy(h["abort_kind"]) {
		parts = append(parts, "abort="+pyStr(h["abort_kind"]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// Outcomes counts acceptance outcomes; anything unknown is skipped.
type Outcomes struct {
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Gamed   int `json:"gamed"`
	Skipped int `json:"skipped"`
}

func (o Outcomes) counts() []pyNum {
	return []pyNum{{i: int64(o.Pass)}, {i: int64(o.Fail)}, {i: int64(o.Gamed)}, {i: int64(o.Skipped)}}
}

// LegacyStats is the original's one aggregation over a group of rows (all
// of a model's, or of a model and task's), field by field as it computes
// them (B-12). A mean or median over no values is nil.
type LegacyStats struct {
	Runs           int      `json:"runs"`
	CompletionRate float64  `json:"completion_rate"`
	AcceptanceRate float64  `json:"acceptance_rate"`
	Gamed          int      `json:"gamed"`
	Outcomes       Outcomes `json:"outcomes"`
	MeanTokens     *float64 `json:"mean_tokens"`
	MeanWallS      *float64 `json:"mean_wall_s"`
	// VerdictRate is accepts over verdicts; nil without verdicts.
	VerdictRate          *float64 `json:"verdict_rate"`
	MedianReviewSeconds  *float64 `json:"median_review_seconds"`
	MeanTrimmedTurns     *float64 `json:"mean_trimmed_turns"`
	MeanTurns            *float64 `json:"mean_turns"`
	MeanPromptTokens     *float64 `json:"mean_prompt_tokens"`
	MeanCompletionTokens *float64 `json:"mean_completion_tokens"`
	// HarnessRows counts the rows with a non-empty harness object; the
	// counters below are over those.
	HarnessRows int     `json:"harness_rows"`
	Nudges      float64 `json:"nudges"`
	Stalled     int     `json:"stalled"`
	MaxTurns    int     `json:"max_turns"`
	Timeouts    float64 `json:"timeouts"`

	// nudges and timeouts as Python holds them: the compare table prints
	// an int sum as 3 and a float one as 3.0.
	nudges, timeouts pyNum
}

// legacyStats aggregates a non-empty group of entries.
func legacyStats(group []entry) LegacyStats {
	s := LegacyStats{Runs: len(group)}
	var completed, accepted int
	var tokens, wall, trimmed, turns, prompt, completion, reviews []pyNum
	var verdicts, accepts int
	var harnesses []map[string]any
	for _, e := range group {
		raw := e.raw
		if raw["status"] == "completed" {
			completed++
		}
		s.Outcomes.add(raw["acceptance"])
		if raw["acceptance"] == AcceptancePass {
			accepted++
		}
		if raw["prompt_tokens"] != nil || raw["completion_tokens"] != nil {
			tokens = append(tokens, pySum([]pyNum{numOrZero(raw["prompt_tokens"]), numOrZero(raw["completion_tokens"])}))
		}
		wall = appendNumber(wall, raw["wall_s"])
		trimmed = appendNumber(trimmed, raw["trimmed_turns"])
		turns = appendNumber(turns, raw["turns"])
		prompt = appendNumber(prompt, raw["prompt_tokens"])
		completion = appendNumber(completion, raw["completion_tokens"])
		if pyTruthy(e.verdict) {
			verdicts++
			if e.verdict == "accept" {
				accepts++
			}
		}
		reviews = appendNumber(reviews, e.review)
		if h, ok := raw["harness"].(map[string]any); ok && len(h) > 0 {
			harnesses = append(harnesses, h)
		}
	}
	n := float64(len(group))
	s.CompletionRate, s.AcceptanceRate = float64(completed)/n, float64(accepted)/n
	s.Gamed = s.Outcomes.Gamed
	s.MeanTokens, s.MeanWallS, s.MeanTrimmedTurns = pyMean(tokens), pyMean(wall), pyMean(trimmed)
	s.MeanTurns, s.MeanPromptTokens, s.MeanCompletionTokens = pyMean(turns), pyMean(prompt), pyMean(completion)
	if verdicts > 0 {
		r := float64(accepts) / float64(verdicts)
		s.VerdictRate = &r
	}
	s.MedianReviewSeconds = pyMedian(reviews)
	s.addHarness(harnesses)
	return s
}

func (o *Outcomes) add(acceptance any) {
	switch acceptance {
	case AcceptancePass:
		o.Pass++
	case AcceptanceFail:
		o.Fail++
	case AcceptanceGamed:
		o.Gamed++
	default:
		o.Skipped++
	}
}

func (s *LegacyStats) addHarness(harnesses []map[string]any) {
	s.HarnessRows = len(harnesses)
	var nudges, timeouts []pyNum
	for _, h := range harnesses {
		for _, k := range nudgeKeys {
			nudges = append(nudges, numOrZero(h[k]))
		}
		timeouts = append(timeouts, numOrZero(h["timeouts"]))
		if pyTruthy(h["stalled"]) {
			s.Stalled++
		}
		if pyTruthy(h["max_turns"]) {
			s.MaxTurns++
		}
	}
	s.nudges, s.timeouts = pySum(nudges), pySum(timeouts)
	s.Nudges, s.Timeouts = s.nudges.float(), s.timeouts.float()
}

// numOrZero is `v or 0` for a number: a value that is not one counts 0
// (where the original would stop with a TypeError).
func numOrZero(v any) pyNum {
	if !pyTruthy(v) {
		return pyNum{} // `0.0 or 0` is the int 0
	}
	n, _ := asNumber(v)
	return n
}

func appendNumber(nums []pyNum, v any) []pyNum {
	if n, ok := asNumber(v); ok {
		return append(nums, n)
	}
	return nums
}

// groupEntries groups entries by key, returning the keys sorted.
func groupEntries[K comparable](es []entry, key func(entry) K, less func(a, b K) int) ([]K, map[K][]entry) {
	groups := map[K][]entry{}
	var keys []K
	for _, e := range es {
		k := key(e)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], e)
	}
	slices.SortFunc(keys, less)
	return keys, groups
}

// modelOf is the row's model as the original groups it (missing is "?").
// Rows are grouped by the model's text.
func modelOf(e entry) string { return pyStr(get(e.raw, "model", "?")) }

// modelTask is a (model, task) key of the compare table.
type modelTask struct{ Model, Task string }

func modelTaskOf(e entry) modelTask {
	return modelTask{Model: modelOf(e), Task: pyStr(get(e.raw, "task", "?"))}
}

func compareModelTask(a, b modelTask) int {
	if c := strings.Compare(a.Model, b.Model); c != 0 {
		return c
	}
	return strings.Compare(a.Task, b.Task)
}

// roundHalfEven is Python's round(x) on a float.
func roundHalfEven(x float64) float64 { return math.RoundToEven(x) }
