package tui

import (
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/tui/backend"
)

// noCall fails if the store was called with any of methods.
func noCall(t *testing.T, h *harness, methods ...string) {
	t.Helper()
	for _, c := range h.store.Calls() {
		for _, m := range methods {
			if c.Method == m {
				t.Fatalf("unexpected %s call: %+v", m, c)
			}
		}
	}
}

// q goes back from the diff, the transcript and the stats; it quits from
// the dashboard alone, and the help bar says so on each screen.
func TestQGoesBackOffTheDashboard(t *testing.T) {
	screens := map[string]func(h *harness){
		"review": func(h *harness) { h.openReview("rename-api-0103") },
		"transcript": func(h *harness) {
			h.m.list.SelectKey("fix-total-0101")
			h.key("t")
		},
		"stats": func(h *harness) { h.key("S") },
	}
	for name, open := range screens {
		t.Run(name, func(t *testing.T) {
			h := newSample(t, 160, 40)
			open(h)
			if h.m.screen.String() != name {
				t.Fatalf("screen = %s, want %s", h.m.screen, name)
			}
			help := plain(h.m.helpView()[0])
			if !strings.Contains(help, "esc/q back") || strings.Contains(help, "q/ctrl+c quit") || !strings.Contains(help, "ctrl+c quit") {
				t.Fatalf("help bar of the %s: %q", name, help)
			}
			h.key("q")
			if h.quit || h.m.screen != screenDashboard {
				t.Fatalf("q on the %s: quit %v, screen %s", name, h.quit, h.m.screen)
			}
			if help := plain(h.m.helpView()[0]); !strings.Contains(help, "q/ctrl+c quit") {
				t.Fatalf("dashboard help bar: %q", help)
			}
			h.key("q")
			if !h.quit {
				t.Fatal("q on the dashboard did not quit")
			}
		})
	}
}

// q leaves the transcript even from an expanded event (esc collapses it).
func TestQLeavesAnExpandedTranscript(t *testing.T) {
	h := newSample(t, 120, 40)
	h.entries("fix-total-0101", liveEntries("t")...)
	h.m.list.SelectKey("fix-total-0101")
	h.key("t", "enter")
	if !h.m.transcript.Expanded() {
		t.Fatal("enter did not expand the event")
	}
	h.key("esc")
	if h.m.screen != screenTranscript || h.m.transcript.Expanded() {
		t.Fatalf("esc: screen %s, expanded %v", h.m.screen, h.m.transcript != nil && h.m.transcript.Expanded())
	}
	h.key("enter", "q")
	if h.m.screen != screenDashboard || h.quit {
		t.Fatalf("q from an expanded event: screen %s, quit %v", h.m.screen, h.quit)
	}
}

// ctrl+c outside a text box still quits, from any screen.
func TestCtrlCOutsideATextBoxQuits(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("ctrl+c")
	if !h.quit {
		t.Fatal("ctrl+c in the review did not quit")
	}
}

// q typed into a text box is text, not back.
func TestQInAFeedbackBoxIsText(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("R", "q")
	if h.m.screen != screenReview || h.m.review.FeedbackText() != "q" {
		t.Fatalf("screen %s, feedback %q", h.m.screen, h.m.review.FeedbackText())
	}
}

func TestCtrlCInTheLaunchFormKeepsTheDraft(t *testing.T) {
	h := newSample(t, 120, 40)
	h.key("L")
	h.typeText("a task worth keeping")
	h.key("ctrl+c")
	if h.quit || h.m.screen != screenDashboard || h.m.form != nil {
		t.Fatalf("ctrl+c in the form: quit %v, screen %s", h.quit, h.m.screen)
	}
	noCall(t, h, "Launch")
	if len(h.m.queue) != 0 {
		t.Fatalf("ctrl+c queued %d launches", len(h.m.queue))
	}
	h.key("L")
	if h.m.screen != screenLaunch {
		t.Fatalf("screen = %s", h.m.screen)
	}
	h.contains("a task worth keeping")
	// Esc drops the draft as before: the next form is a new one.
	h.key("esc", "L")
	if strings.Contains(plain(h.screen()), "a task worth keeping") {
		t.Fatal("the draft outlived an esc")
	}
}

func TestCtrlCInTheFilterKeepsItsText(t *testing.T) {
	h := newSample(t, 120, 40)
	h.key("/")
	h.typeText("shop")
	h.key("ctrl+c")
	if h.quit || h.m.list.Filtering() {
		t.Fatalf("ctrl+c in the filter: quit %v, filtering %v", h.quit, h.m.list.Filtering())
	}
	if got := h.m.list.FilterText(); got != "shop" {
		t.Fatalf("filter text after ctrl+c = %q", got)
	}
	h.key("/")
	if !h.m.list.Filtering() || h.m.list.FilterText() != "shop" {
		t.Fatalf("reopened filter: filtering %v, text %q", h.m.list.Filtering(), h.m.list.FilterText())
	}
}

func TestCtrlCInTheFeedbackBoxKeepsItsText(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("R")
	h.typeText("keep the alias")
	h.key("ctrl+c")
	if h.quit || h.m.screen != screenReview || h.m.review.Modal() != "" {
		t.Fatalf("ctrl+c in the feedback box: quit %v, screen %s, modal %q", h.quit, h.m.screen, h.m.review.Modal())
	}
	noCall(t, h, "Verdict", "Resume")
	h.key("R")
	if h.m.review.Modal() != "feedback" || h.m.review.FeedbackText() != "keep the alias" {
		t.Fatalf("reopened box: modal %q, text %q", h.m.review.Modal(), h.m.review.FeedbackText())
	}
}

func TestCtrlCInTheTranscriptSearchKeepsItsText(t *testing.T) {
	h := newSample(t, 120, 40)
	h.entries("fix-total-0101", liveEntries("t")...)
	h.m.list.SelectKey("fix-total-0101")
	h.key("t", "/")
	h.typeText("invoice")
	h.key("ctrl+c")
	if h.quit || h.m.screen != screenTranscript || h.m.transcript.Capturing() {
		t.Fatalf("ctrl+c in the search box: quit %v, screen %s", h.quit, h.m.screen)
	}
	h.key("/")
	if !h.m.transcript.Capturing() || h.m.transcript.Typed() != "invoice" {
		t.Fatalf("reopened search: capturing %v, text %q", h.m.transcript.Capturing(), h.m.transcript.Typed())
	}
}

func TestStopFromTheListAsksFirst(t *testing.T) {
	h := newSample(t, 120, 40)
	h.m.list.SelectKey("fix-total-0101")
	h.key("s")
	if !h.m.ask.Open() {
		t.Fatal("s did not ask")
	}
	h.contains("Stop fix-total-0101")
	h.contains("y/enter stop")
	// Keys other than yes and no are ignored: the question stays.
	h.key("x", "q", "j")
	if !h.m.ask.Open() || h.quit {
		t.Fatalf("another key closed the question (quit %v)", h.quit)
	}
	h.key("n")
	if h.m.ask.Open() {
		t.Fatal("n did not close the question")
	}
	noCall(t, h, "Stop")
	h.key("s", "esc")
	noCall(t, h, "Stop")
	h.key("s", "enter")
	if c := lastCall(t, h.store, "Stop"); c.Slug != "fix-total-0101" {
		t.Fatalf("stop = %+v", c)
	}
}

func TestStopFromAPaneAsksFirst(t *testing.T) {
	h := newSample(t, 120, 40)
	h.key("1")
	slug := h.m.panes[0]
	if e := h.m.runs[slug]; e == nil || !e.run.Live() {
		t.Fatalf("pane 1 holds %q, not a live run", slug)
	}
	h.key("s")
	h.contains("Stop " + slug)
	h.key("n")
	noCall(t, h, "Stop")
	h.key("s", "y")
	if c := lastCall(t, h.store, "Stop"); c.Slug != slug {
		t.Fatalf("stop = %+v, want %s", c, slug)
	}
}

func TestMergeAsksWithTheForecast(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("m")
	if h.m.review.Modal() != "confirm-merge" {
		t.Fatalf("modal = %q", h.m.review.Modal())
	}
	line := h.m.review.ConfirmText()
	for _, want := range []string{"Merge rename-api-0103 into main", "checked out at /src/shop", "2 files", "main moved 2 commits since the run began"} {
		if !strings.Contains(line, want) {
			t.Errorf("merge question lacks %q: %q", want, line)
		}
	}
	h.key("n")
	noCall(t, h, "Merge")
	if h.m.review.Modal() != "" || h.m.screen != screenReview {
		t.Fatalf("after n: modal %q, screen %s", h.m.review.Modal(), h.m.screen)
	}
	h.key("m", "y")
	lastCall(t, h.store, "Merge")
}

// A merge the forecast knows is blocked says so at the key, naming the
// branch, and asks nothing.
func TestBlockedMergeSaysWhyAtTheKey(t *testing.T) {
	h := newSample(t, 120, 40)
	h.store.SetReview("docs-typo-0104", backend.Review{Patch: samplePatch, MergeInto: "main", MergeBlockers: []string{"main is checked out at /src/docs with uncommitted changes (1 paths); commit or stash them first"}})
	h.openReview("docs-typo-0104")
	h.key("m")
	if h.m.review.Modal() != "alert" || !strings.Contains(h.m.review.AlertText(), "merge into main is not possible") ||
		!strings.Contains(h.m.review.AlertText(), "uncommitted changes") {
		t.Fatalf("modal %q: %q", h.m.review.Modal(), h.m.review.AlertText())
	}
	h.key("y")
	noCall(t, h, "Merge")
}

func TestCleanAsksWhatItWillDo(t *testing.T) {
	h := newSample(t, 120, 40)
	h.store.SetPlan("rename-api-0103", backend.CleanPlan{
		Actions: []string{"remove-worktree: /src/shop/.worktrees/dw-rename-api-0103", "keep-transcript: /r/rename-api-0103"},
		Parked:  []string{"refs/dirtywork/parked/rename-api-0103"},
	})
	h.openReview("rename-api-0103")
	h.key("c")
	line := h.m.review.ConfirmText()
	for _, want := range []string{"Clean rename-api-0103", "records verdict cleanup", "remove-worktree: /src/shop/.worktrees/dw-rename-api-0103", "keep-transcript: /r/rename-api-0103", "refs/dirtywork/parked/rename-api-0103"} {
		if !strings.Contains(line, want) {
			t.Errorf("clean question lacks %q: %q", want, line)
		}
	}
	h.key("esc")
	noCall(t, h, "Clean", "Verdict")
	h.key("c", "enter")
	lastCall(t, h.store, "Clean")
}

func TestRejectWithResumeAsksFirst(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("R")
	h.typeText("keep the old name")
	h.key("ctrl+s")
	if h.m.review.Modal() != "confirm-resume" {
		t.Fatalf("modal = %q", h.m.review.Modal())
	}
	if line := h.m.review.ConfirmText(); !strings.Contains(line, "Reject rename-api-0103 and resume it") || !strings.Contains(line, "keep the old name") {
		t.Fatalf("question = %q", line)
	}
	h.key("n")
	noCall(t, h, "Verdict", "Resume")
	// The feedback is still there for the next try.
	h.key("R")
	if h.m.review.FeedbackText() != "keep the old name" {
		t.Fatalf("feedback after a cancelled question = %q", h.m.review.FeedbackText())
	}
	h.key("ctrl+s", "y")
	if r := lastCall(t, h.store, "Resume"); r.Note != "keep the old name" {
		t.Fatalf("resume = %+v", r)
	}
}
