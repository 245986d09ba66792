package stats_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/runsstore"
	"github.com/dirtywork/dirtywork/tui/stats"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// writeRun makes a run dir under root holding run.json with rec.
func writeRun(t *testing.T, root, slug string, rec map[string]any) string {
	t.Helper()
	dir, err := transcript.CreateRunDir(root, slug)
	if err != nil {
		t.Fatal(err)
	}
	full := map[string]any{"schema_version": 2, "slug": slug, "started": "2026-01-02T03:04:05.000000+00:00"}
	for k, v := range rec {
		full[k] = v
	}
	if err := transcript.WriteRecord(dir, full); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The statistics over runs read from disk, as mission control reads them:
// an even number of samples takes the mean of the two middle values, and a
// run.json that cannot be read (not JSON, a directory, a link) neither
// crashes the count, nor skews it, nor vanishes: the view names it.
func TestStatsOverRecordsOnDisk(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "runs")
	if err := transcript.EnsureDir(root); err != nil {
		t.Fatal(err)
	}
	good := []struct {
		slug, model, status, verdict string
		review                       float64
		turns, prompt                int
	}{
		{"r1", "m", "completed", "accept", 10, 2, 100},
		{"r2", "m", "completed", "reject", 40, 8, 400},
		{"r3", "m", "max_turns", "accept", 20, 4, 200},
		{"r4", "m", "completed", "cleanup", 30, 30, 1000},
	}
	for _, g := range good {
		writeRun(t, root, g.slug, map[string]any{
			"model": g.model, "repo": "/r/x", "status": g.status, "verdict": g.verdict,
			"review_seconds": g.review, "turns": g.turns,
			"usage": map[string]any{"prompt_tokens": g.prompt, "completion_tokens": 0},
		})
	}
	notJSON := writeRun(t, root, "bad-json", nil)
	if err := os.WriteFile(filepath.Join(notJSON, transcript.RecordName), []byte(`{"model": "m", "status": "compl`), 0o644); err != nil {
		t.Fatal(err)
	}
	isDir := writeRun(t, root, "bad-dir", nil)
	if err := os.Remove(filepath.Join(isDir, transcript.RecordName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(isDir, transcript.RecordName), 0o755); err != nil {
		t.Fatal(err)
	}
	isLink := writeRun(t, root, "bad-link", nil)
	if err := os.Rename(filepath.Join(isLink, transcript.RecordName), filepath.Join(isLink, "elsewhere.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere.json", filepath.Join(isLink, transcript.RecordName)); err != nil {
		t.Fatal(err)
	}
	bad := []string{"bad-dir", "bad-json", "bad-link"}

	list, err := runsstore.New(runs.Open(root)).List(t.Context())
	if err != nil {
		t.Fatalf("listing the runs: %v", err)
	}
	overall, rows := stats.Aggregate(list, stats.ByModel)
	want := stats.Row{
		Name: "overall", Runs: 4, Finished: 4, Completed: 3, Accept: 2, Reject: 1, Cleanup: 1,
		MedianReview: 25,  // 10 20 | 30 40
		MedianTurns:  6,   // 2 4 | 8 30
		MedianTokens: 300, // 100 200 | 400 1000
	}
	if overall != want {
		t.Errorf("overall %+v\nwant    %+v", overall, want)
	}
	if len(rows) != 1 || rows[0].Name != "m" || rows[0].Runs != 4 {
		t.Errorf("rows %+v: want one row, model m, with the four readable runs", rows)
	}
	var named []string
	for _, r := range stats.Unreadable(list) {
		named = append(named, r.Slug)
	}
	if strings.Join(named, " ") != strings.Join(bad, " ") {
		t.Errorf("unreadable records %v, want %v", named, bad)
	}

	km := keys.Default()
	m := stats.New(theme.New(theme.NoColor), &km.Stats, list)
	m.SetSize(120, 20)
	view := ansi.Strip(m.View())
	for _, slug := range bad {
		if !strings.Contains(view, slug) {
			t.Errorf("the view does not name the unreadable %s:\n%s", slug, view)
		}
	}
	if !strings.Contains(view, "not counted") {
		t.Errorf("the view does not say the unreadable runs are left out of the figures:\n%s", view)
	}
}

// Medians of an even number of samples are the mean of the two middle
// values, whatever order the runs come in; of one sample, that sample.
func TestAggregateMedianOfEvenSamples(t *testing.T) {
	t.Parallel()
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		name    string
		reviews []float64
		want    float64
	}{
		{"none", nil, -1},
		{"one", []float64{7}, 7},
		{"two", []float64{3, 8}, 5.5},
		{"two equal", []float64{4, 4}, 4},
		{"four, unsorted", []float64{40, 10, 30, 20}, 25},
		{"six with a zero", []float64{0, 100, 1, 3, 2, 50}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var list []backend.Run
			for _, r := range tt.reviews {
				list = append(list, backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusCompleted, Verdict: "accept", ReviewSeconds: f(r), Turns: new(int(r))}})
			}
			all, _ := stats.Aggregate(list, stats.ByModel)
			if all.MedianReview != tt.want || all.MedianTurns != tt.want {
				t.Errorf("median review %v, turns %v; want %v", all.MedianReview, all.MedianTurns, tt.want)
			}
		})
	}
}
