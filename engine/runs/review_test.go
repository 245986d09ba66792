package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

// Review reads the run once and returns its diff, the worker's own
// summary (its finish call's, else its last text) and the merge forecast.
func TestReviewIsWhatAReviewShows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "reviewed", map[string]any{"last_assistant_text": "my last words"})
	if err := os.WriteFile(filepath.Join(wt, "a.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rv, err := e.store.Review(t.Context(), "reviewed")
	if err != nil {
		t.Fatal(err)
	}
	if rv.Run.Slug != "reviewed" || rv.Diff.Source != DiffFromWorktree || !strings.Contains(string(rv.Diff.Patch), "+changed") {
		t.Fatalf("review %+v, diff %+v", rv.Run, rv.Diff)
	}
	if rv.Summary != "my last words" {
		t.Fatalf("summary without a finish call %q", rv.Summary)
	}
	if rv.ForecastErr != nil || rv.Forecast == nil || rv.Forecast.Slug != "reviewed" {
		t.Fatalf("forecast %+v %v", rv.Forecast, rv.ForecastErr)
	}
	// ReviewDiff is the same review without the forecast, which a reviewer
	// reads while it is made.
	quick, err := e.store.ReviewDiff(t.Context(), "reviewed")
	if err != nil || quick.Forecast != nil || quick.ForecastErr != nil || string(quick.Diff.Patch) != string(rv.Diff.Patch) || quick.Summary != rv.Summary {
		t.Fatalf("review without forecast %+v (%v)", quick, err)
	}

	// With a finish call in the transcript, its summary is the run's.
	w, err := transcript.Create(filepath.Join(rv.Run.Dir, transcript.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Write(transcript.Assistant{ToolCalls: []transcript.ToolCallRecord{{Name: "finish", Arguments: `{"summary":"fixed the thing"}`}}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rv, err = e.store.Review(t.Context(), "reviewed"); err != nil || rv.Summary != "fixed the thing" {
		t.Fatalf("summary %q (%v)", rv.Summary, err)
	}
	if _, err := e.store.Review(t.Context(), "no-such-run-0101000000-00000000"); err == nil {
		t.Fatal("an unknown run was reviewed")
	}
}
