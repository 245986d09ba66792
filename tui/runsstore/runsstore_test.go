package runsstore_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/runsstore"
)

// writeRun makes a run dir under root holding run.json with rec.
func writeRun(t *testing.T, root, slug string, rec map[string]any) string {
	t.Helper()
	dir, err := transcript.CreateRunDir(root, slug)
	if err != nil {
		t.Fatal(err)
	}
	if err := transcript.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The TUI's run is run.json's record itself, whole: every key the record
// type knows reaches mission control without the adapter naming it, and
// what the TUI adds (where the run lives, whether it is alive, why its
// record could not be read) is beside it.
func TestRunsAreTheirRecords(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "runs")
	if err := transcript.EnsureDir(root); err != nil {
		t.Fatal(err)
	}
	full := writeRun(t, root, "full-0001", map[string]any{
		"schema_version": 2, "slug": "full-0001", "status": "completed", "repo": "/src/shop", "task": "fix total()",
		"model": "devstral", "base_branch": "main", "context_window": 32768, "turns": 7,
		"usage":   map[string]any{"prompt_tokens": 1200, "completion_tokens": 34},
		"started": "2026-01-02T03:04:05.000000+00:00", "ended": "2026-01-02T03:09:05.000000+00:00",
		"last_assistant_text": "done", "verify": map[string]any{"command": "make test", "exit_code": 0, "passed": true},
		"files_changed": []string{"a.py", "b.py"}, "verdict": "accept", "review_seconds": 12.5,
	})
	bare := writeRun(t, root, "bare-0002", map[string]any{"schema_version": 2, "status": "running"})
	broken := writeRun(t, root, "broken-0003", nil)
	if err := os.WriteFile(filepath.Join(broken, transcript.RecordName), []byte(`{"status": "compl`), 0o644); err != nil {
		t.Fatal(err)
	}

	store := runsstore.New(runs.Open(root))
	list, err := store.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The preview leaves out what it cannot read; the listing does not.
	recent, total, err := store.Recent(t.Context(), 10)
	if err != nil || total != 3 || len(recent) != 2 {
		t.Fatalf("Recent: %d runs of %d, %v; want 2 of 3", len(recent), total, err)
	}
	for name, got := range map[string][]backend.Run{"List": list, "Recent": recent} {
		bySlug := map[string]backend.Run{}
		for _, r := range got {
			bySlug[r.Slug] = r
		}
		if _, ok := bySlug["full-0001"]; !ok {
			t.Fatalf("%s: no full-0001 among %d runs", name, len(got))
		}
		if _, ok := bySlug["bare-0002"]; !ok {
			t.Fatalf("%s: no bare-0002 among %d runs", name, len(got))
		}

		r := bySlug["full-0001"]
		rf, err := transcript.ReadRun(full)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.RunRecord, rf.Record) {
			t.Errorf("%s: record\n%+v\nwant run.json's\n%+v", name, r.RunRecord, rf.Record)
		}
		if r.RunDir != full || r.Transcript != filepath.Join(full, transcript.TranscriptName) || r.Alive || r.Problem != "" {
			t.Errorf("%s: dir %q, transcript %q, alive %v, problem %q", name, r.RunDir, r.Transcript, r.Alive, r.Problem)
		}
		start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		if !r.StartedAt().Equal(start) || !r.EndedAt().Equal(start.Add(5*time.Minute)) {
			t.Errorf("%s: started %v, ended %v", name, r.StartedAt(), r.EndedAt())
		}
		if r.TurnCount() != 7 || r.TokenCount() != 1234 || r.LastText() != "done" {
			t.Errorf("%s: turns %d, tokens %d, last text %q", name, r.TurnCount(), r.TokenCount(), r.LastText())
		}

		// A record naming no slug is named after its run dir; what it
		// does not record reads as unknown.
		b := bySlug["bare-0002"]
		if b.RunDir != bare || b.Status != transcript.StatusRunning || b.Phase() != backend.PhaseDead {
			t.Errorf("%s: bare run %+v", name, b)
		}
		if !b.StartedAt().IsZero() || !b.EndedAt().IsZero() || b.TurnCount() != -1 || b.TokenCount() != 0 || b.LastText() != "" {
			t.Errorf("%s: bare run: started %v, ended %v, turns %d, tokens %d, last text %q",
				name, b.StartedAt(), b.EndedAt(), b.TurnCount(), b.TokenCount(), b.LastText())
		}

	}

	// A record that cannot be read is still listed, with the reason.
	var x backend.Run
	for _, r := range list {
		if r.Slug == "broken-0003" {
			x = r
		}
	}
	if x.Problem == "" || x.RunDir != broken || x.Phase() != backend.PhaseFinished {
		t.Errorf("broken run: dir %q, problem %q, phase %v", x.RunDir, x.Problem, x.Phase())
	}
}

// A merge forecast that cannot be made is a blocker the review shows, not
// an error that hides the review.
func TestForecastThatCannotBeMadeBlocksMerge(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "runs")
	if err := transcript.EnsureDir(root); err != nil {
		t.Fatal(err)
	}
	store := runsstore.New(runs.Open(root))
	fc, err := store.Forecast(t.Context(), "gone-0101000000-00000000")
	if err != nil || fc.Ready || len(fc.Blockers) != 1 || fc.Blockers[0] == "" {
		t.Fatalf("forecast %+v (%v)", fc, err)
	}
	var rv backend.Review
	rv.MergeReady = true
	fc.Apply(&rv)
	if rv.MergeReady || len(rv.MergeBlockers) != 1 {
		t.Fatalf("applied %+v", rv)
	}
}

// The clean's confirmation is planned with the options the clean uses:
// it keeps run.json and the transcript, so the plan promises to keep
// them, not to remove the run dir.
func TestPlanCleanSaysWhatCleanDoes(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "runs")
	if err := transcript.EnsureDir(root); err != nil {
		t.Fatal(err)
	}
	dir := writeRun(t, root, "done-0001", map[string]any{
		"schema_version": 2, "slug": "done-0001", "status": "completed", "sandbox": "none", "task": "t",
		"started": "2026-01-02T03:04:05.000000+00:00", "ended": "2026-01-02T03:09:05.000000+00:00",
	})
	if err := os.WriteFile(filepath.Join(dir, transcript.TranscriptName), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "diff.patch"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := runsstore.New(runs.Open(root))
	plan, err := store.PlanClean(t.Context(), "done-0001")
	if err != nil {
		t.Fatal(err)
	}
	var keeps bool
	for _, a := range plan.Actions {
		if strings.HasPrefix(a, "remove-rundir") {
			t.Errorf("the plan removes the run dir, the clean keeps it: %q", plan.Actions)
		}
		if strings.HasPrefix(a, "keep-transcript: "+dir) {
			keeps = true
		}
	}
	if !keeps {
		t.Fatalf("the plan does not say run.json and the transcript are kept: %q", plan.Actions)
	}
	if _, err := store.Clean(t.Context(), "done-0001", 1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{transcript.RecordName, transcript.TranscriptName} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the clean did not keep %s as planned: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "diff.patch")); !os.IsNotExist(err) {
		t.Errorf("the clean kept the rest of the run dir: %v", err)
	}
}
