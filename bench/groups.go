package bench

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// This build's statistics, beside the original's: per model and serving
// setup, the pass rate with its uncertainty, repeat consistency, how the
// acceptance score agrees with the verdicts people gave, why runs failed
// and where their time went.

// GroupStats is this build's statistics for the rows of one model served
// one way. Rows of one model whose serving differs are separate groups.
type GroupStats struct {
	// Label is the model, followed by the serving setup in brackets when
	// the rows carry one: `model [server version ctx=N quant slots=N]`.
	Label   string   `json:"label"`
	Model   string   `json:"model"`
	Serving *Serving `json:"serving"`
	// Runs counts every row; N the rows that count for the pass rate (all
	// but bench_error, server and sandbox rows, which are the harness's
	// failures), Infra the rows left out.
	Runs   int `json:"runs"`
	N      int `json:"n"`
	Infra  int `json:"infra"`
	Passes int `json:"passes"`
	// PassRate is Passes/N with its Wilson and task-clustered 95 %
	// intervals; all nil when N is 0.
	PassRate      *float64   `json:"pass_rate"`
	Wilson        *Interval  `json:"wilson"`
	TaskClustered *Clustered `json:"task_clustered"`
	// Tasks counts the tasks with a counted row; K is the fewest counted
	// repeats of one of them, the k of PassAtK and PassHatK (means over
	// tasks of the unbiased estimators).
	Tasks    int       `json:"tasks"`
	K        int       `json:"k"`
	PassAtK  *float64  `json:"pass_at_k"`
	PassHatK *float64  `json:"pass_hat_k"`
	Verdicts Agreement `json:"verdicts"`
	// ReviewSecondsPerAccept is the review seconds of every reviewed run
	// over the accepted runs: what one accepted change cost its reviewer.
	ReviewSecondsPerAccept *float64 `json:"review_seconds_per_accept"`
	// FailureClasses counts the rows of each failure class.
	FailureClasses map[string]int `json:"failure_classes"`
	// MedianTime is the median of each time part over the rows that
	// measured it.
	MedianTime Time `json:"median_time"`
}

// Agreement compares the acceptance score with the verdicts people gave
// (accept or reject; a cleanup verdict judges nothing).
type Agreement struct {
	// Verdicts counts accept and reject verdicts on scored runs.
	Verdicts int `json:"verdicts"`
	Accepts  int `json:"accepts"`
	// Agree counts acceptance pass with accept, and fail or gamed with
	// reject.
	Agree int `json:"agree"`
	// FalsePass counts acceptance pass with reject: the checker let through
	// what a person would not have.
	FalsePass int `json:"false_pass"`
	// FalseFail counts acceptance fail or gamed with accept.
	FalseFail int `json:"false_fail"`
}

// groupKey tells groups apart: the model's text and the serving's JSON.
type groupKey struct {
	model, serving string
}

func groupKeyOf(e entry) groupKey {
	k := groupKey{model: modelOf(e)}
	if s := e.row.Serving; s != nil {
		data, _ := json.Marshal(s) // a struct of plain fields always encodes
		k.serving = string(data)
	}
	return k
}

// groupStats computes the statistics of every group of es, sorted by label.
func groupStats(es []entry) []GroupStats {
	groups := groupAll(es)
	out := make([]GroupStats, len(groups))
	for i := range groups {
		out[i] = groups[i].GroupStats
	}
	return out
}

// RowGroup is one model served one way: its statistics and its rows.
type RowGroup struct {
	GroupStats
	// Rows are the indices of the group's rows in the rows given, in
	// their order.
	Rows []int
}

// GroupRows computes this build's statistics of rows (what summarize
// prints after the original's tables, and its JSON's groups) per model
// and serving setup, sorted by label, and says which rows each group
// holds. lookup reads verdicts live from the runs' records (nil: the
// rows' own verdicts only).
func GroupRows(rows []Row, lookup VerdictLookup) []RowGroup {
	return groupAll(newEntries(rows, lookup))
}

// groupAll groups es by model and serving setup, sorted by label.
func groupAll(es []entry) []RowGroup {
	members := map[groupKey][]int{}
	var keys []groupKey
	for i, e := range es {
		k := groupKeyOf(e)
		if _, ok := members[k]; !ok {
			keys = append(keys, k)
		}
		members[k] = append(members[k], i)
	}
	slices.SortFunc(keys, func(a, b groupKey) int {
		if c := strings.Compare(a.model, b.model); c != 0 {
			return c
		}
		return strings.Compare(a.serving, b.serving)
	})
	out := make([]RowGroup, 0, len(keys))
	for _, k := range keys {
		idx := members[k]
		group := make([]entry, len(idx))
		for j, i := range idx {
			group[j] = es[i]
		}
		out = append(out, RowGroup{GroupStats: oneGroup(k.model, group), Rows: idx})
	}
	slices.SortStableFunc(out, func(a, b RowGroup) int { return strings.Compare(a.Label, b.Label) })
	return out
}

func oneGroup(model string, es []entry) GroupStats {
	g := GroupStats{Model: model, Serving: es[0].row.Serving, Runs: len(es), FailureClasses: map[string]int{}}
	g.Label = groupLabel(model, g.Serving)
	tasks := map[string]*TaskCluster{}
	var taskOrder []string
	for _, e := range es {
		if c := e.row.FailureClass; c != "" {
			g.FailureClasses[c]++
		}
		if e.row.Infra() {
			g.Infra++
			continue
		}
		g.N++
		task := pyStr(get(e.raw, "task", "?"))
		t, ok := tasks[task]
		if !ok {
			t = &TaskCluster{}
			tasks[task] = t
			taskOrder = append(taskOrder, task)
		}
		t.N++
		if passed(e) {
			g.Passes++
			t.Passes++
		}
	}
	clusters := make([]TaskCluster, len(taskOrder))
	for i, name := range taskOrder {
		clusters[i] = *tasks[name]
	}
	g.rates(clusters)
	g.Verdicts, g.ReviewSecondsPerAccept = agreement(es)
	g.MedianTime = medianTime(es)
	return g
}

func passed(e entry) bool { return e.raw["acceptance"] == AcceptancePass }

// rates fills the pass rate, its intervals and pass@k / pass^k.
func (g *GroupStats) rates(clusters []TaskCluster) {
	g.Tasks = len(clusters)
	if g.N == 0 {
		return
	}
	rate := float64(g.Passes) / float64(g.N)
	g.PassRate = &rate
	if iv, ok := Wilson(float64(g.Passes), float64(g.N)); ok {
		g.Wilson = &iv
	}
	if c, ok := TaskClustered(clusters); ok {
		g.TaskClustered = &c
	}
	g.K = clusters[0].N
	for _, c := range clusters {
		g.K = min(g.K, c.N)
	}
	var at, hat float64
	for _, c := range clusters {
		at += PassAtK(c.N, c.Passes, g.K)
		hat += PassHatK(c.N, c.Passes, g.K)
	}
	at, hat = at/float64(len(clusters)), hat/float64(len(clusters))
	g.PassAtK, g.PassHatK = &at, &hat
}

// agreement compares acceptance with the live verdicts of the group's
// counted runs, and prices an accepted run in review seconds.
func agreement(es []entry) (Agreement, *float64) {
	var a Agreement
	var reviewed []pyNum
	for _, e := range es {
		if e.row.Infra() {
			continue
		}
		if pyTruthy(e.verdict) {
			if n, ok := asNumber(e.review); ok {
				reviewed = append(reviewed, n)
			}
		}
		accept, reject := e.verdict == "accept", e.verdict == "reject"
		if !accept && !reject {
			continue
		}
		a.Verdicts++
		pass, fail := passed(e), e.raw["acceptance"] == AcceptanceFail || e.raw["acceptance"] == AcceptanceGamed
		switch {
		case accept:
			a.Accepts++
			if pass {
				a.Agree++
			} else if fail {
				a.FalseFail++
			}
		case pass:
			a.FalsePass++
		case fail:
			a.Agree++
		}
	}
	if a.Accepts == 0 || len(reviewed) == 0 {
		return a, nil
	}
	per := pySum(reviewed).float() / float64(a.Accepts)
	return a, &per
}

// medianTime is the median of each time part over the rows measuring it.
func medianTime(es []entry) Time {
	var values [timeParts][]float64
	for _, e := range es {
		if e.row.Time == nil {
			continue
		}
		for i, p := range e.row.Time.parts() {
			if p != nil {
				values[i] = append(values[i], *p)
			}
		}
	}
	var med [timeParts]*float64
	for i, v := range values {
		if len(v) > 0 {
			m := median(v)
			med[i] = &m
		}
	}
	return Time{
		StagingS: med[0], SandboxStartS: med[1], PrefillS: med[2], DecodeS: med[3],
		DecodeTokensPerS: med[4], ToolsS: med[5], ExportS: med[6], AcceptanceS: med[7],
	}
}

// timeParts is how many parts Time has.
const timeParts = 8

// parts is t's parts in their key order.
func (t *Time) parts() [timeParts]*float64 {
	return [timeParts]*float64{
		t.StagingS, t.SandboxStartS, t.PrefillS, t.DecodeS,
		t.DecodeTokensPerS, t.ToolsS, t.ExportS, t.AcceptanceS,
	}
}

// groupLabel is the model, and the serving setup in brackets when known.
func groupLabel(model string, s *Serving) string {
	if s == nil {
		return model
	}
	var parts []string
	for _, p := range []string{s.Server, s.Version} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if s.ContextLength != nil {
		parts = append(parts, fmt.Sprintf("ctx=%d", *s.ContextLength))
	}
	if s.Quantization != "" {
		parts = append(parts, s.Quantization)
	}
	if s.Slots > 0 {
		parts = append(parts, fmt.Sprintf("slots=%d", s.Slots))
	}
	if len(parts) == 0 {
		parts = []string{"serving unknown"}
	}
	return model + " [" + strings.Join(parts, " ") + "]"
}
