package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend/fake"
)

// sampleBenchFile is the sample's results file, in the bench root.
const sampleBenchFile = "20261202T130000Z.jsonl"

// sampleBench makes a bench root holding one results file whose cases
// are runs of the sample root (and one the root does not hold), each
// with its acceptance output in a run dir.
func sampleBench(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runs := t.TempDir()
	cases := []struct {
		model, task, slug, acceptance, class, evidence string
		repeat                                         int
	}{
		{"devstral", "py-rename", "rename-api-0103", bench.AcceptancePass, "", "", 0},
		{"devstral", "py-rename", "docs-typo-0104", bench.AcceptanceFail, bench.FailureModel, "run_end: status completed; acceptance: exit status 1", 1},
		{"qwen/qwen3-coder", "py-rename", "old-accepted-0001", bench.AcceptancePass, "", "", 0},
		{"qwen/qwen3-coder", "py-rename", "elsewhere-0105", bench.AcceptancePass, "", "", 1},
		{"qwen/qwen3-coder", "shell-format", "crashed-0099", bench.AcceptanceSkipped, bench.FailureLoop, "run_end: status max_turns", 0},
	}
	for _, c := range cases {
		rd := filepath.Join(runs, c.slug)
		if err := os.MkdirAll(rd, 0o700); err != nil {
			t.Fatal(err)
		}
		out := "acceptance: " + c.acceptance + "\n\nran 3 tests\n"
		if err := os.WriteFile(filepath.Join(rd, bench.AcceptanceFile), []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		slug, wall := c.slug, bench.Seconds(30)
		r := bench.Row{
			Stamp: "20261202T130000Z", Model: c.model, Task: c.task, Repeat: c.repeat, Slug: &slug, RunDir: &rd,
			Status: "completed", WallS: &wall, Acceptance: c.acceptance, Harness: &bench.Harness{},
			FailureClass: c.class, FailureEvidence: c.evidence,
			Serving: &bench.Serving{Server: "lmstudio", Version: "0.3.31", Slots: 2},
		}
		if err := bench.AppendRow(filepath.Join(dir, sampleBenchFile), r); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// openBench opens the bench view from the dashboard and waits for its
// file to be read.
func (h *harness) openBench() {
	h.t.Helper()
	h.key("B")
	h.until("the bench view to read its file", func() bool { return h.m.bench != nil && h.m.bench.Loaded() })
}

// openBenchCase opens the case under the cursor and waits for its
// acceptance output.
func (h *harness) openBenchCase() {
	h.t.Helper()
	h.key("enter")
	h.until("the case's acceptance output", func() bool { return !strings.Contains(plain(h.screen()), "reading acceptance.txt") })
}

// B opens the bench view on the newest results file; the verdict a run
// has in the root counts, q goes back to the dashboard.
func TestBenchOpensFromTheDashboard(t *testing.T) {
	t.Parallel()
	h := newSample(t, 140, 40)
	h.openBench()
	h.contains("Bench " + sampleBenchFile)
	h.contains("5 rows · 2 models")
	if got := h.m.bench.Path(); got != filepath.Join(h.m.opts.BenchDir, sampleBenchFile) {
		t.Fatalf("bench file %q", got)
	}
	// old-accepted-0001's accept (in the root, not in its row) counts.
	h.contains("1✓ 0×")
	h.key("q")
	if h.m.screen != screenDashboard || h.m.bench != nil || h.quit {
		t.Fatalf("q on the bench: screen %s, quit %v", h.m.screen, h.quit)
	}
	h.key("q")
	if !h.quit {
		t.Fatal("q on the dashboard does not quit")
	}
}

// Enter on a case, d for its diff, a verdict key: the store records the
// verdict, the review returns to the bench, which counts it at once.
func TestBenchCaseReviewRecordsAVerdict(t *testing.T) {
	t.Parallel()
	h := newSample(t, 140, 40)
	h.openBench()
	// The cursor starts on devstral, py-rename, repeat 0: rename-api-0103.
	h.openBenchCase()
	h.contains("Case devstral")
	h.contains("ran 3 tests")
	h.key("d")
	if h.m.screen != screenReview || h.m.review == nil || h.m.review.Slug() != "rename-api-0103" {
		t.Fatalf("d opened %s", h.m.screen)
	}
	h.contains("Review rename-api-0103")
	h.key("r")
	call := lastCall(t, h.store, "Verdict")
	if call.Slug != "rename-api-0103" || call.Verdict != transcript.VerdictReject {
		t.Fatalf("verdict call %+v", call)
	}
	if h.m.screen != screenBench {
		t.Fatalf("after the verdict: screen %s", h.m.screen)
	}
	// A false pass now: acceptance passed, the person rejected.
	h.contains("a false pass")
	h.key("q", "q")
	if h.m.screen != screenDashboard {
		t.Fatalf("q twice from the case: screen %s", h.m.screen)
	}
}

// n jumps to the next passing case nobody reviewed, skipping reviewed
// ones; from a review opened from the bench, n reviews the next such case.
func TestBenchNextUnreviewedPass(t *testing.T) {
	t.Parallel()
	h := newSample(t, 140, 40)
	h.openBench()
	h.key("n")
	h.until("a case", func() bool { return !strings.Contains(plain(h.screen()), "reading acceptance.txt") })
	if slug, open := h.m.bench.CaseOpen(); !open || slug != "elsewhere-0105" {
		t.Fatalf("n opened %q", slug)
	}
	// Its run is not in the root: no review, it says why.
	h.key("d")
	h.contains("not in the runs root")
	h.key("n")
	if slug, _ := h.m.bench.CaseOpen(); slug != "rename-api-0103" {
		t.Fatalf("n opened %q", slug)
	}
	h.key("d")
	h.key("n")
	// From the review: the next is elsewhere-0105, which has no run here.
	if h.m.screen != screenBench {
		t.Fatalf("n in a bench review: screen %s", h.m.screen)
	}
	h.contains("elsewhere-0105 is not in the runs root")
}

// mission control can start on the bench view of a named file.
func TestBenchOpenAtStart(t *testing.T) {
	t.Parallel()
	dir := sampleBench(t)
	st := fake.New(sampleRuns()...)
	h := newHarness(t, 120, 40, st, func(o *Options) {
		o.BenchOpen, o.Bench = true, filepath.Join(dir, sampleBenchFile)
	})
	h.until("the bench view to read its file", func() bool { return h.m.bench != nil && h.m.bench.Loaded() })
	if h.m.screen != screenBench {
		t.Fatalf("screen %s", h.m.screen)
	}
	h.contains("Bench " + sampleBenchFile)
	h.contains("esc/q back")
}
