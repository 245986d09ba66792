package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The golden files under testdata/ were written by hand from the contract
// (B-10 … B-14 and the cells the original's tests pin), then checked
// against the Python original's own output for the same input files and
// run records (testdata/runs). They are never regenerated from this code:
// a difference is a bug here, or a reason to re-check by hand.

func readGolden(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func mustRead(t *testing.T, path string) *Results {
	t.Helper()
	res, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSummarizeGoldens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, compare, golden string
	}{
		// Original files: the original's output byte for byte.
		{"plain", "testdata/plain.jsonl", "", "plain.golden"},
		{"compare", "testdata/compare_a.jsonl", "testdata/compare_b.jsonl", "compare.golden"},
		// Files with this build's keys: the original's tables, then ours.
		{"extended", "testdata/ours.jsonl", "", "ours.golden"},
		{"extended compare", "testdata/ours.jsonl", "testdata/ours_b.jsonl", "ours_compare.golden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b *Results
			if tc.compare != "" {
				b = mustRead(t, tc.compare)
			}
			var out bytes.Buffer
			if err := Summarize(mustRead(t, tc.file), b, LiveVerdicts("testdata/runs")).WriteText(&out); err != nil {
				t.Fatal(err)
			}
			if want := readGolden(t, tc.golden); out.String() != want {
				t.Errorf("output differs from %s:\n%s", tc.golden, lineDiff(out.String(), want))
			}
		})
	}
}

// lineDiff shows the first differing line of got and want.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + itoa(i+1) + ":\n got  " + quote(gl) + "\n want " + quote(wl)
		}
	}
	return "(same lines)"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestSummarizeReportsCorruptLines(t *testing.T) {
	t.Parallel()
	s := Summarize(mustRead(t, "testdata/plain.jsonl"), nil, nil)
	want := []Problem{
		{File: "testdata/plain.jsonl", Line: 5, Error: "not JSON: unexpected EOF"},
		{File: "testdata/plain.jsonl", Line: 8, Error: "not a JSON object but an array"},
	}
	if !reflect.DeepEqual(s.Problems, want) {
		t.Errorf("problems = %+v", s.Problems)
	}
	if s.A.Rows != 5 {
		t.Errorf("rows summarized = %d, want the other 5", s.A.Rows)
	}
}

// writeRun writes <root>/<slug>/run.json.
func writeRun(t *testing.T, root, slug, content string) {
	t.Helper()
	dir := filepath.Join(root, slug)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeResults(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// detail is the per-case table's verdict and review cells of each row.
func detail(t *testing.T, path, runsRoot string) [][2]string {
	t.Helper()
	s := Summarize(mustRead(t, path), nil, LiveVerdicts(runsRoot))
	var out [][2]string
	for _, e := range s.entriesA {
		c := detailCells(e)
		out = append(out, [2]string{c[9], c[10]})
	}
	return out
}

func TestVerdictsAreReadLive(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	path := writeResults(t,
		`{"model": "m", "slug": "run-a", "acceptance": "pass", "verdict": "reject", "review_seconds": 5}`,
		`{"model": "m", "slug": "run-b", "acceptance": "pass", "verdict": "reject", "review_seconds": 5}`,
		`{"model": "m", "slug": "../escape", "acceptance": "pass", "verdict": "reject", "review_seconds": 5}`,
		`{"model": "m", "slug": 7, "acceptance": "pass", "verdict": "accept", "review_seconds": 1.5}`,
	)
	writeRun(t, filepath.Dir(root), "escape", `{"verdict": "accept", "review_seconds": 99}`)
	// No run dirs yet: every row's own values.
	want := [][2]string{{"reject", "5"}, {"reject", "5"}, {"reject", "5"}, {"accept", "1.5"}}
	if got := detail(t, path, root); !reflect.DeepEqual(got, want) {
		t.Fatalf("before any run.json: %v", got)
	}
	// A verdict given after the sweep shows at once; a record without a
	// verdict means none, whatever the row says; a record that is not an
	// object falls back to the row. A slug leaving the runs root is never
	// followed.
	writeRun(t, root, "run-a", `{"status": "completed", "verdict": "accept", "review_seconds": 60.0}`)
	writeRun(t, root, "run-b", `{"status": "completed"}`)
	want[0], want[1] = [2]string{"accept", "60.0"}, [2]string{"-", "-"}
	if got := detail(t, path, root); !reflect.DeepEqual(got, want) {
		t.Fatalf("after verdicts: %v", got)
	}
	writeRun(t, root, "run-a", `{"status": "completed", "verdict": "reject", "review_seconds": 61}`)
	writeRun(t, root, "run-b", `[1, 2, 3]`)
	want[0], want[1] = [2]string{"reject", "61"}, [2]string{"reject", "5"}
	if got := detail(t, path, root); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the verdict changed: %v", got)
	}
}

// group finds the named group of a side.
func group(t *testing.T, s Side, label string) GroupStats {
	t.Helper()
	for _, g := range s.Groups {
		if g.Label == label {
			return g
		}
	}
	t.Fatalf("no group %q in %+v", label, s.Groups)
	return GroupStats{}
}

func TestGroupStatsReferenceValues(t *testing.T) {
	t.Parallel()
	// Seven passes in ten cases over five tasks of two repeats: tasks pass
	// 2, 2, 2, 1 and 0 times. Values computed by hand (see stats_test.go).
	passes := map[string]int{"t1": 2, "t2": 2, "t3": 2, "t4": 1, "t5": 0}
	var lines []string
	for _, task := range []string{"t1", "t2", "t3", "t4", "t5"} {
		for rep := range 2 {
			acc := "fail"
			if rep < passes[task] {
				acc = "pass"
			}
			lines = append(lines, `{"model": "m", "task": "`+task+`", "repeat": `+itoa(rep)+`, "acceptance": "`+acc+`", "serving": {"server": "vllm"}}`)
		}
	}
	lines = append(lines,
		`{"model": "m", "task": "t6", "repeat": 0, "acceptance": "skipped", "failure_class": "server", "serving": {"server": "vllm"}}`,
		`{"model": "m", "task": "t6", "repeat": 1, "acceptance": "skipped", "failure_class": "sandbox", "serving": {"server": "vllm"}}`)
	s := Summarize(mustRead(t, writeResults(t, lines...)), nil, nil)
	g := group(t, s.A, "m [vllm]")
	if g.Runs != 12 || g.N != 10 || g.Infra != 2 || g.Passes != 7 || g.Tasks != 5 || g.K != 2 {
		t.Fatalf("counts = %+v", g)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"rate", *g.PassRate, 0.7},
		{"wilson lo", g.Wilson.Lo, 0.397},
		{"wilson hi", g.Wilson.Hi, 0.892},
		{"by task lo", g.TaskClustered.Interval.Lo, 0.306},
		{"by task hi", g.TaskClustered.Interval.Hi, 0.925},
		{"deff", g.TaskClustered.DesignEffect, 1.905},
		// pass@2 per task: 1, 1, 1, 1, 0; pass^2: 1, 1, 1, 0, 0.
		{"pass@k", *g.PassAtK, 0.8},
		{"pass^k", *g.PassHatK, 0.6},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %.4f, want %.3f", c.name, c.got, c.want)
		}
	}
	if !reflect.DeepEqual(g.FailureClasses, map[string]int{"server": 1, "sandbox": 1}) {
		t.Errorf("failure classes = %v", g.FailureClasses)
	}
}

func TestServingNeverPooled(t *testing.T) {
	t.Parallel()
	path := writeResults(t,
		`{"model": "m", "task": "t", "repeat": 0, "acceptance": "pass", "serving": {"server": "ollama", "version": "0.12.6", "context_length": 32768, "quantization": "Q4_K_M", "slots": 1}}`,
		`{"model": "m", "task": "t", "repeat": 1, "acceptance": "pass", "serving": {"server": "ollama", "version": "0.12.6", "context_length": 32768, "quantization": "Q4_K_M", "slots": 1}}`,
		`{"model": "m", "task": "t", "repeat": 0, "acceptance": "fail", "serving": {"server": "ollama", "version": "0.12.6", "context_length": 8192, "quantization": "Q4_K_M", "slots": 1}}`,
		`{"model": "m", "task": "t", "repeat": 0, "acceptance": "fail", "serving": {"server": "ollama", "version": "0.12.6", "context_length": 32768, "quantization": "Q4_K_M", "slots": 4}}`,
		`{"model": "m", "task": "t", "repeat": 0, "acceptance": "fail"}`,
	)
	s := Summarize(mustRead(t, path), nil, nil)
	var labels []string
	var n []int
	for _, g := range s.A.Groups {
		labels = append(labels, g.Label)
		n = append(n, g.N)
	}
	wantLabels := []string{
		"m",
		"m [ollama 0.12.6 ctx=32768 Q4_K_M slots=1]",
		"m [ollama 0.12.6 ctx=32768 Q4_K_M slots=4]",
		"m [ollama 0.12.6 ctx=8192 Q4_K_M slots=1]",
	}
	if !reflect.DeepEqual(labels, wantLabels) || !reflect.DeepEqual(n, []int{1, 2, 1, 1}) {
		t.Errorf("groups = %v %v", labels, n)
	}
	// The original's per-model statistics pool by model, as it does.
	if len(s.A.Models) != 1 || s.A.Models[0].Runs != 5 {
		t.Errorf("models = %+v", s.A.Models)
	}
}

func TestPairedWithMissingSides(t *testing.T) {
	t.Parallel()
	var a, b []string
	// m: ten cases in both; A passes the first eight, B the first two:
	// six cases only A passed, none only B. The server row of A and the
	// two cases only B counted (B passes 4 of 12) are no pairs. m2 is only
	// in A, m3 only in B.
	for i := range 10 {
		accA, accB := "fail", "fail"
		if i < 8 {
			accA = "pass"
		}
		if i < 2 {
			accB = "pass"
		}
		a = append(a, `{"model": "m", "task": "t", "repeat": `+itoa(i)+`, "acceptance": "`+accA+`", "time": {}}`)
		b = append(b, `{"model": "m", "task": "t", "repeat": `+itoa(i)+`, "acceptance": "`+accB+`"}`)
	}
	a = append(a, `{"model": "m", "task": "t", "repeat": 10, "acceptance": "skipped", "failure_class": "server"}`,
		`{"model": "m2", "task": "t", "repeat": 0, "acceptance": "pass"}`)
	b = append(b, `{"model": "m", "task": "t", "repeat": 10, "acceptance": "pass"}`,
		`{"model": "m", "task": "u", "repeat": 0, "acceptance": "pass"}`,
		`{"model": "m3", "task": "t", "repeat": 0, "acceptance": "pass"}`)
	s := Summarize(mustRead(t, writeResults(t, a...)), mustRead(t, writeResults(t, b...)), nil)
	if len(s.Paired) != 3 {
		t.Fatalf("paired = %+v", s.Paired)
	}
	m, m2, m3 := s.Paired[0], s.Paired[1], s.Paired[2]
	// 2·C(6,0)/2^6 = 0.03125.
	if m.Label != "m" || m.Pairs != 10 || m.AOnly != 6 || m.BOnly != 0 || !near(*m.P, 0.031) || !*m.Separable {
		t.Errorf("m = %+v", m)
	}
	if m.A.N != 10 || m.B.N != 12 || *m.A.PassRate != 0.8 {
		t.Errorf("m sides = %+v %+v", m.A, m.B)
	}
	if m2.Label != "m2" || m2.B != nil || m2.A == nil || m2.Pairs != 0 || m2.P != nil || m2.Separable != nil {
		t.Errorf("m2 = %+v", m2)
	}
	if m3.Label != "m3" || m3.A != nil || m3.B == nil || m3.P != nil {
		t.Errorf("m3 = %+v", m3)
	}
	var out bytes.Buffer
	if err := s.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"not separable = P >= 0.05",
		"m      0.800 [0.490, 0.943]  0.333 [0.138, 0.609]  10     6       0       0.031  separable",
		"m2     1.000 [0.207, 1.000]  -                     0      0       0       -      -",
		"m3     -                     1.000 [0.207, 1.000]  0      0       0       -      -",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestAgreement(t *testing.T) {
	t.Parallel()
	path := writeResults(t,
		`{"model": "m", "acceptance": "pass", "verdict": "accept", "review_seconds": 30, "time": {}}`,
		`{"model": "m", "acceptance": "pass", "verdict": "reject", "review_seconds": 50}`,
		`{"model": "m", "acceptance": "fail", "verdict": "accept", "review_seconds": 40}`,
		`{"model": "m", "acceptance": "gamed", "verdict": "reject"}`,
		`{"model": "m", "acceptance": "skipped", "verdict": "cleanup", "review_seconds": 10}`,
		`{"model": "m", "acceptance": "skipped", "status": "bench_error", "verdict": "accept", "review_seconds": 1000}`,
	)
	g := Summarize(mustRead(t, path), nil, nil).A.Groups[0]
	want := Agreement{Verdicts: 4, Accepts: 2, Agree: 2, FalsePass: 1, FalseFail: 1}
	if g.Verdicts != want {
		t.Errorf("agreement = %+v, want %+v", g.Verdicts, want)
	}
	// (30 + 50 + 40 + 10) / 2 accepted; the bench_error row is not counted.
	if g.ReviewSecondsPerAccept == nil || *g.ReviewSecondsPerAccept != 65 {
		t.Errorf("review seconds per accept = %v", g.ReviewSecondsPerAccept)
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	s := Summarize(mustRead(t, "testdata/ours.jsonl"), mustRead(t, "testdata/ours_b.jsonl"), LiveVerdicts("testdata/runs"))
	var out bytes.Buffer
	if err := s.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var got struct {
		File     string `json:"file"`
		Compare  string `json:"compare"`
		Problems []any  `json:"problems"`
		A        struct {
			Rows     int  `json:"rows"`
			Extended bool `json:"extended"`
			Models   []struct {
				Model          string  `json:"model"`
				Runs           int     `json:"runs"`
				CompletionRate float64 `json:"completion_rate"`
				Nudges         int     `json:"nudges"`
			} `json:"models"`
			Cases  []map[string]any `json:"cases"`
			Groups []map[string]any `json:"groups"`
		} `json:"a"`
		B      map[string]any   `json:"b"`
		Paired []map[string]any `json:"paired"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if got.File != "testdata/ours.jsonl" || got.Compare != "testdata/ours_b.jsonl" || got.Problems == nil ||
		got.A.Rows != 8 || !got.A.Extended || len(got.A.Models) != 1 || got.A.Models[0].Runs != 8 ||
		got.A.Models[0].CompletionRate != 0.625 || len(got.A.Cases) != 3 || len(got.A.Groups) != 3 ||
		got.B == nil || len(got.Paired) != 4 {
		t.Errorf("summary JSON = %+v", got)
	}
	if g := got.A.Groups[1]; g["label"] != "q [lmstudio 0.3.31 ctx=65536 q4_k_m slots=2]" || g["pass_rate"] != 0.5 {
		t.Errorf("group = %v", g)
	}
}

// TestPinnedCells holds the cells the original's own tests pin (the
// contract's §8 item 55).
func TestPinnedCells(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeRun(t, root, "s1", `{"verdict": "accept", "review_seconds": 30}`)
	writeRun(t, root, "s2", `{"verdict": "reject", "review_seconds": 90}`)
	writeRun(t, root, "s4", `{"verdict": "accept"}`)
	path := writeResults(t,
		`{"model": "m1", "task": "t", "repeat": 0, "status": "completed", "acceptance": "pass", "turns": 3, "wall_s": 2.0, "prompt_tokens": 10, "completion_tokens": 5, "slug": "s1", "harness": {}}`,
		`{"model": "m1", "task": "t", "repeat": 1, "status": "completed", "acceptance": "fail", "turns": 3, "wall_s": 4.0, "prompt_tokens": 20, "completion_tokens": 10, "slug": "s2", "harness": {}}`,
		`{"model": "m2", "task": "t", "repeat": 0, "status": "stalled", "acceptance": "skipped", "turns": 12, "wall_s": 1.0, "prompt_tokens": 5, "completion_tokens": 1, "slug": "s3", `+
			`"harness": {"nudge_stall": 2, "nudge_empty": 1, "nudge_truncated": 0, "nudge_text_tool_call": 0, "nudge_other": 0, "empty_reply": 1, "stalled": 1, "max_turns": 0, "sandbox_error": 0, "abort_kind": null}}`,
		`{"model": "m3", "task": "t", "repeat": 0, "status": "completed", "acceptance": "pass", "slug": "s4"}`,
	)
	var out bytes.Buffer
	if err := Summarize(mustRead(t, path), nil, LiveVerdicts(root)).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2/1/0/0/0  stalled,empty_reply=1",
		"model: m1\n  runs: 2\n  completion rate: 100%\n  acceptance rate: 50%\n  gamed: 0\n  mean tokens: 22.5\n" +
			"  mean wall_s: 3.0\n  mean trimmed_turns: n/a\n  verdict rate: 50%\n  median review_seconds: 60\n\n",
		"model: m2\n  runs: 1\n  completion rate: 0%\n  acceptance rate: 0%\n  gamed: 0\n  mean tokens: 6.0\n" +
			"  mean wall_s: 1.0\n  mean trimmed_turns: n/a\n\n",
		"  verdict rate: 100%\n  median review_seconds: n/a\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCompareCells(t *testing.T) {
	t.Parallel()
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		got, want string
	}{
		{fmtDelta(f(2), f(2), kindInt), "0"},
		{fmtDelta(f(3.02), f(3.0), kindFloat), "0"},
		{fmtDelta(f(0.501), f(0.5), kindPct), "0"},
		{fmtDelta(f(2), f(5), kindInt), "+3"},
		{fmtDelta(f(3.5), f(2.0), kindFloat), "-1.5"},
		{fmtDelta(f(0.5), f(1.0), kindPct), "+50%"},
		{fmtDelta(nil, f(1), kindInt), ""},
		{compareCell(f(1.0/3), f(2.0/3), kindPct), "33% -> 67% (+34%)"},
		{compareCell(f(5.02), f(5.06), kindFloat), "5.0 -> 5.1 (+0.1)"},
		{compareCell(f(5), f(3), kindFloat), "5.0 -> 3.0 (-2.0)"},
		{compareCell(nil, nil, kindFloat), "- -> -"},
		{compareCell(nil, f(1), kindInt), "- -> 1"},
		{countsCell("0/0/1/0", "1/0/0/0", []pyNum{{}, {}, {i: 1}, {}}, []pyNum{{i: 1}, {}, {}, {}}), "0/0/1/0 -> 1/0/0/0 (+1/0/-1/0)"},
		{countsCell("-", "0/0/0/0", nil, []pyNum{{}, {}, {}, {}}), "- -> 0/0/0/0"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
