package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// writeLegacyPlain prints the original's plain summary (B-11): the legends
// and per-case table when there are rows, then one block per model.
func writeLegacyPlain(w io.Writer, es []entry, models []ModelStats) {
	if len(es) > 0 {
		fmt.Fprintln(w, "nudges: stall/empty/truncated/text_tool_call/timeout")
		fmt.Fprintln(w, "failures: harness classes for the run; timeouts=N counts timed-out bash "+
			"calls (excluded from empty_reply, which is the FailureTracker kind)")
		cells := make([][]string, len(es))
		for i, e := range es {
			cells[i] = detailCells(e)
		}
		fmt.Fprintln(w, formatTable(detailColumns, cells))
		fmt.Fprintln(w)
	}
	for _, m := range models {
		writeModelBlock(w, m.Model, m.LegacyStats)
	}
}

func writeModelBlock(w io.Writer, model string, s LegacyStats) {
	fmt.Fprintf(w, "model: %s\n", model)
	fmt.Fprintf(w, "  runs: %d\n", s.Runs)
	fmt.Fprintf(w, "  completion rate: %s\n", pyPercent(s.CompletionRate))
	fmt.Fprintf(w, "  acceptance rate: %s\n", pyPercent(s.AcceptanceRate))
	fmt.Fprintf(w, "  gamed: %d\n", s.Gamed)
	fmt.Fprintf(w, "  mean tokens: %s\n", fixedOrNA(s.MeanTokens))
	fmt.Fprintf(w, "  mean wall_s: %s\n", fixedOrNA(s.MeanWallS))
	fmt.Fprintf(w, "  mean trimmed_turns: %s\n", fixedOrNA(s.MeanTrimmedTurns))
	if s.VerdictRate != nil {
		fmt.Fprintf(w, "  verdict rate: %s\n", pyPercent(*s.VerdictRate))
		review := "n/a"
		if s.MedianReviewSeconds != nil {
			review = pyFormatG(*s.MedianReviewSeconds)
		}
		fmt.Fprintf(w, "  median review_seconds: %s\n", review)
	}
	fmt.Fprintln(w)
}

func fixedOrNA(x *float64) string {
	if x == nil {
		return "n/a"
	}
	return pyFixed(*x, 1)
}

// The compare tables (B-13).
var (
	compareColumns = []string{
		"model", "task", "runs", "turns", "wall_s", "prompt", "completion",
		"accept", "outcomes", "verdict", "harness",
	}
	compareModelColumns = []string{
		"model", "runs", "completion", "accept", "gamed", "tokens",
		"wall_s", "trimmed", "verdict", "review_s",
	}
)

// writeLegacyCompare prints the original's two paired tables for files a
// and b.
func writeLegacyCompare(w io.Writer, a, b *Side) {
	fmt.Fprintf(w, "A = %s\n", pyPath(a.File))
	fmt.Fprintf(w, "B = %s\n", pyPath(b.File))
	fmt.Fprintln(w, "cells: A -> B (Δ); Δ = B - A (component-wise for count cells); "+
		"'-' = no rows for that key in that file; outcomes = pass/fail/gamed/skipped")
	fmt.Fprintln(w, "harness: nudges/stalled/max_turns/timeouts (timeout nudges are also counted in nudges)")
	fmt.Fprintln(w)
	byCaseA, byCaseB := caseMap(a.Cases), caseMap(b.Cases)
	keys := unionKeys(byCaseA, byCaseB, compareModelTask)
	rows := make([][]string, len(keys))
	for i, k := range keys {
		rows[i] = compareCaseCells(k, byCaseA[k], byCaseB[k])
	}
	fmt.Fprintln(w, formatTable(compareColumns, rows))
	if note := harnessFootnote(a.Cases, b.Cases); note != "" {
		fmt.Fprintln(w, note)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "per-model (A -> B):")
	byModelA, byModelB := modelMap(a.Models), modelMap(b.Models)
	models := unionKeys(byModelA, byModelB, strings.Compare)
	rows = make([][]string, len(models))
	for i, m := range models {
		rows[i] = compareModelCells(m, byModelA[m], byModelB[m])
	}
	fmt.Fprintln(w, formatTable(compareModelColumns, rows))
}

func caseMap(cases []CaseStats) map[modelTask]*LegacyStats {
	out := make(map[modelTask]*LegacyStats, len(cases))
	for i := range cases {
		out[modelTask{Model: cases[i].Model, Task: cases[i].Task}] = &cases[i].LegacyStats
	}
	return out
}

func modelMap(models []ModelStats) map[string]*LegacyStats {
	out := make(map[string]*LegacyStats, len(models))
	for i := range models {
		out[models[i].Model] = &models[i].LegacyStats
	}
	return out
}

// unionKeys is the sorted union of the keys of a and b.
func unionKeys[K comparable, V any](a, b map[K]V, cmp func(x, y K) int) []K {
	keys := make([]K, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, cmp)
	return keys
}

func compareCaseCells(k modelTask, a, b *LegacyStats) []string {
	return []string{
		k.Model, k.Task,
		compareCell(intStat(a, runs), intStat(b, runs), kindInt),
		compareCell(ptrStat(a, meanTurns), ptrStat(b, meanTurns), kindFloat),
		compareCell(ptrStat(a, meanWall), ptrStat(b, meanWall), kindFloat),
		compareCell(ptrStat(a, meanPrompt), ptrStat(b, meanPrompt), kindFloat),
		compareCell(ptrStat(a, meanCompletion), ptrStat(b, meanCompletion), kindFloat),
		compareCell(floatStat(a, acceptRate), floatStat(b, acceptRate), kindPct),
		countsCell(outcomesCell(a), outcomesCell(b), outcomeCounts(a), outcomeCounts(b)),
		compareCell(ptrStat(a, verdictRate), ptrStat(b, verdictRate), kindPct),
		countsCell(harnessCell(a), harnessCell(b), harnessCounts(a), harnessCounts(b)),
	}
}

func compareModelCells(model string, a, b *LegacyStats) []string {
	return []string{
		model,
		compareCell(intStat(a, runs), intStat(b, runs), kindInt),
		compareCell(floatStat(a, completionRate), floatStat(b, completionRate), kindPct),
		compareCell(floatStat(a, acceptRate), floatStat(b, acceptRate), kindPct),
		compareCell(intStat(a, gamed), intStat(b, gamed), kindInt),
		compareCell(ptrStat(a, meanTokens), ptrStat(b, meanTokens), kindFloat),
		compareCell(ptrStat(a, meanWall), ptrStat(b, meanWall), kindFloat),
		compareCell(ptrStat(a, meanTrimmed), ptrStat(b, meanTrimmed), kindFloat),
		compareCell(ptrStat(a, verdictRate), ptrStat(b, verdictRate), kindPct),
		compareCell(ptrStat(a, medianReview), ptrStat(b, medianReview), kindFloat),
	}
}

// Accessors of the compared statistics: a side without rows for a key has
// none (nil).
func runs(s *LegacyStats) int               { return s.Runs }
func gamed(s *LegacyStats) int              { return s.Gamed }
func acceptRate(s *LegacyStats) float64     { return s.AcceptanceRate }
func completionRate(s *LegacyStats) float64 { return s.CompletionRate }
func meanTurns(s *LegacyStats) *float64     { return s.MeanTurns }
func meanWall(s *LegacyStats) *float64      { return s.MeanWallS }
func meanPrompt(s *LegacyStats) *float64    { return s.MeanPromptTokens }
func meanCompletion(s *LegacyStats) *float64 {
	return s.MeanCompletionTokens
}
func meanTokens(s *LegacyStats) *float64   { return s.MeanTokens }
func meanTrimmed(s *LegacyStats) *float64  { return s.MeanTrimmedTurns }
func verdictRate(s *LegacyStats) *float64  { return s.VerdictRate }
func medianReview(s *LegacyStats) *float64 { return s.MedianReviewSeconds }

func intStat(s *LegacyStats, f func(*LegacyStats) int) *float64 {
	if s == nil {
		return nil
	}
	x := float64(f(s))
	return &x
}

func floatStat(s *LegacyStats, f func(*LegacyStats) float64) *float64 {
	if s == nil {
		return nil
	}
	x := f(s)
	return &x
}

func ptrStat(s *LegacyStats, f func(*LegacyStats) *float64) *float64 {
	if s == nil {
		return nil
	}
	return f(s)
}

// cellKind is how a compared statistic is shown.
type cellKind int

const (
	kindFloat cellKind = iota // one decimal
	kindPct                   // a whole percentage
	kindInt                   // a whole number
)

// compareCell is `A -> B (Δ)`, the Δ left out when a side is missing.
func compareCell(a, b *float64, kind cellKind) string {
	text := fmtCell(a, kind) + " -> " + fmtCell(b, kind)
	if d := fmtDelta(a, b, kind); d != "" {
		return text + " (" + d + ")"
	}
	return text
}

func fmtCell(v *float64, kind cellKind) string {
	switch {
	case v == nil:
		return "-"
	case kind == kindPct:
		return pyPercent(*v)
	case kind == kindInt:
		return strconv.Itoa(int(*v))
	default:
		return pyFixed(*v, 1)
	}
}

// fmtDelta is B - A computed from the shown values (each side rounded as
// its cell shows it), so a cell never contradicts itself: 33% -> 67% is
// +34%. It is "0" for no change and "" when a side is missing.
func fmtDelta(a, b *float64, kind cellKind) string {
	if a == nil || b == nil {
		return ""
	}
	switch kind {
	case kindPct:
		return signed(int64(roundHalfEven(*b*100)-roundHalfEven(*a*100)), "%")
	case kindInt:
		return signed(int64(int(*b)-int(*a)), "")
	default:
		diff := pyRound1(*b) - pyRound1(*a)
		switch {
		case diff == 0:
			return "0"
		case diff > 0:
			return "+" + pyFixed(diff, 1)
		default:
			return "-" + pyFixed(-diff, 1)
		}
	}
}

func signed(d int64, unit string) string {
	switch {
	case d == 0:
		return "0"
	case d > 0:
		return "+" + strconv.FormatInt(d, 10) + unit
	default:
		return strconv.FormatInt(d, 10) + unit
	}
}

// countsCell is `A -> B (ΔA/ΔB/…)` for count cells, the component-wise Δ
// only when both sides' counts are known.
func countsCell(left, right string, a, b []pyNum) string {
	text := left + " -> " + right
	if a == nil || b == nil {
		return text
	}
	parts := make([]string, len(a))
	for i := range a {
		parts[i] = componentDelta(a[i], b[i])
	}
	return text + " (" + strings.Join(parts, "/") + ")"
}

func componentDelta(a, b pyNum) string {
	if !a.isFloat && !b.isFloat {
		return signed(b.i-a.i, "")
	}
	d := b.float() - a.float()
	switch {
	case d == 0:
		return "0"
	case d > 0:
		return "+" + pyFloatRepr(d)
	default:
		return pyFloatRepr(d)
	}
}

func outcomesCell(s *LegacyStats) string {
	if s == nil {
		return "-"
	}
	o := s.Outcomes
	return fmt.Sprintf("%d/%d/%d/%d", o.Pass, o.Fail, o.Gamed, o.Skipped)
}

func outcomeCounts(s *LegacyStats) []pyNum {
	if s == nil {
		return nil
	}
	return s.Outcomes.counts()
}

// harnessCell is nudges/stalled/max_turns/timeouts of one side: "-" when
// none of its rows ran the harness, marked * when only some did.
func harnessCell(s *LegacyStats) string {
	if s == nil || s.HarnessRows == 0 {
		return "-"
	}
	counts := harnessCounts(s)
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = c.String()
	}
	cell := strings.Join(parts, "/")
	if s.HarnessRows < s.Runs {
		cell += "*"
	}
	return cell
}

func harnessCounts(s *LegacyStats) []pyNum {
	if s == nil || s.HarnessRows == 0 {
		return nil
	}
	return []pyNum{s.nudges, {i: int64(s.Stalled)}, {i: int64(s.MaxTurns)}, s.timeouts}
}

// harnessFootnote is the one line explaining every * of the table: how many
// of the runs behind starred cells carried harness data; "" for no star.
func harnessFootnote(a, b []CaseStats) string {
	var n, m int
	for _, c := range slices.Concat(a, b) {
		if c.HarnessRows > 0 && c.HarnessRows < c.Runs {
			n += c.HarnessRows
			m += c.Runs
		}
	}
	if m == 0 {
		return ""
	}
	return fmt.Sprintf("* harness data present for %d of %d runs", n, m)
}
