package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// writeGroups prints this build's statistics after the original's plain
// summary: four tables, one line per model and serving setup.
func writeGroups(w io.Writer, gs []GroupStats) {
	fmt.Fprintln(w, "pass rates: N = runs less bench_error, server and sandbox rows (the harness's failures, not the model's); "+
		"PASS = acceptance pass")
	fmt.Fprintln(w, "intervals 95%: WILSON = Wilson score; BY_TASK = Wilson at the effective size N/deff, "+
		"deff = design effect of tasks as clusters (at least 1)")
	fmt.Fprintln(w, "PASS@K = chance some of k repeats of a task pass, PASS^K = that all k pass "+
		"(unbiased estimators, mean over tasks; k = fewest repeats of a task)")
	rows := make([][]string, len(gs))
	for i, g := range gs {
		rows[i] = rateCells(g)
	}
	fmt.Fprintln(w, formatTable([]string{"model", "runs", "n", "pass", "rate", "wilson", "by_task", "tasks", "k", "pass@k", "pass^k"}, rows))
	fmt.Fprintln(w)

	fmt.Fprintln(w, "verdicts (accept/reject on counted runs): FALSE_PASS = acceptance pass, verdict reject; "+
		"FALSE_FAIL = acceptance fail or gamed, verdict accept; REVIEW_S/ACCEPT = review seconds of reviewed runs per accepted run")
	for i, g := range gs {
		v := g.Verdicts
		rows[i] = []string{
			g.Label, strconv.Itoa(v.Verdicts), strconv.Itoa(v.Agree), strconv.Itoa(v.FalsePass),
			strconv.Itoa(v.FalseFail), fixedOrDash(g.ReviewSecondsPerAccept, 1),
		}
	}
	fmt.Fprintln(w, formatTable([]string{"model", "verdicts", "agree", "false_pass", "false_fail", "review_s/accept"}, rows))
	fmt.Fprintln(w)

	fmt.Fprintln(w, "failure classes (runs, most first): "+strings.Join(FailureClasses, ", "))
	for i, g := range gs {
		rows[i] = []string{g.Label, classesCell(g.FailureClasses)}
	}
	fmt.Fprintln(w, formatTable([]string{"model", "failures"}, rows))
	fmt.Fprintln(w)

	fmt.Fprintln(w, "median time split (seconds; DECODE_TOK/S in tokens per second)")
	for i, g := range gs {
		rows[i] = append([]string{g.Label}, timeCells(g.MedianTime)...)
	}
	fmt.Fprintln(w, formatTable([]string{
		"model", "staging", "sandbox_start", "prefill", "decode", "decode_tok/s", "tools", "export", "acceptance",
	}, rows))
	fmt.Fprintln(w)
}

func rateCells(g GroupStats) []string {
	var by *Interval
	if g.TaskClustered != nil {
		by = &g.TaskClustered.Interval
	}
	k := "-"
	if g.K > 0 {
		k = strconv.Itoa(g.K)
	}
	return []string{
		g.Label, strconv.Itoa(g.Runs), strconv.Itoa(g.N), strconv.Itoa(g.Passes),
		fixedOrDash(g.PassRate, 3), intervalCell(g.Wilson), intervalCell(by), strconv.Itoa(g.Tasks), k,
		fixedOrDash(g.PassAtK, 3), fixedOrDash(g.PassHatK, 3),
	}
}

func intervalCell(iv *Interval) string {
	if iv == nil {
		return "-"
	}
	return "[" + pyFixed(iv.Lo, 3) + ", " + pyFixed(iv.Hi, 3) + "]"
}

func fixedOrDash(x *float64, decimals int) string {
	if x == nil {
		return "-"
	}
	return pyFixed(*x, decimals)
}

// classesCell is `class=N,…`, most frequent first (ties in the order of
// FailureClasses, unknown classes last by name), "-" for none.
func classesCell(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for c := range counts {
		names = append(names, c)
	}
	rank := func(c string) int {
		if i := slices.Index(FailureClasses, c); i >= 0 {
			return i
		}
		return len(FailureClasses)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := counts[b] - counts[a]; d != 0 {
			return d
		}
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	if len(names) == 0 {
		return "-"
	}
	parts := make([]string, len(names))
	for i, c := range names {
		parts[i] = c + "=" + strconv.Itoa(counts[c])
	}
	return strings.Join(parts, ",")
}

func timeCells(t Time) []string {
	parts := t.parts()
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = fixedOrDash(p, 1)
	}
	return out
}

// writePaired prints the paired comparison after the original's compare
// tables.
func writePaired(w io.Writer, ps []Paired) {
	fmt.Fprintf(w, "paired (cases, task and repeat, counted in both files): P = exact McNemar test, two-sided; "+
		"not separable = P >= %s (a difference these runs cannot tell from chance)\n", strconv.FormatFloat(Alpha, 'f', -1, 64))
	rows := make([][]string, len(ps))
	for i, p := range ps {
		rows[i] = []string{
			p.Label, rateCell(p.A), rateCell(p.B), strconv.Itoa(p.Pairs), strconv.Itoa(p.AOnly),
			strconv.Itoa(p.BOnly), fixedOrDash(p.P, 3), pairedResult(p),
		}
	}
	fmt.Fprintln(w, formatTable([]string{"model", "a", "b", "pairs", "a_only", "b_only", "p", "result"}, rows))
}

// rateCell is `rate [lo, hi]` of one side, "-" without the group.
func rateCell(r *Rate) string {
	if r == nil {
		return "-"
	}
	if r.PassRate == nil {
		return "n=0"
	}
	return pyFixed(*r.PassRate, 3) + " " + intervalCell(r.Wilson)
}

func pairedResult(p Paired) string {
	switch {
	case p.Separable == nil:
		return "-"
	case *p.Separable:
		return "separable"
	default:
		return "not separable"
	}
}
