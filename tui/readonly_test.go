package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/launch"
	"github.com/dirtywork/dirtywork/tui/review"
)

const watchRefusal = "read-only session: watch role"

func readOnly(o *Options) { o.ReadOnly = "watch role" }

// changingCalls are the store and launcher calls that change a run or
// start one: a read-only session makes none of them.
var changingCalls = []string{"Accept", "Merge", "Verdict", "PlanClean", "Clean", "Stop", "Launch", "Resume"}

func assertNoChange(t *testing.T, h *harness) {
	t.Helper()
	for _, c := range h.store.Calls() {
		if slices.Contains(changingCalls, c.Method) {
			t.Fatalf("read-only session called %s(%s)", c.Method, c.Slug)
		}
	}
}

func assertRefused(t *testing.T, h *harness, what string) {
	t.Helper()
	if h.m.status != watchRefusal || !h.m.statusErr {
		t.Fatalf("%s: status = %q (error %v), want %q", what, h.m.status, h.m.statusErr, watchRefusal)
	}
	if !strings.Contains(h.screen(), watchRefusal) {
		t.Fatalf("%s: the refusal is not on screen:\n%s", what, h.screen())
	}
	assertNoChange(t, h)
}

func TestReadOnlyRefusesReviewActions(t *testing.T) {
	// Each key on a run it applies to (a disabled key does nothing anyway):
	// resume on a run out of turns, stop on a live one.
	for _, tc := range []struct{ name, slug, key string }{
		{"accept", "rename-api-0103", "a"},
		{"merge", "rename-api-0103", "m"},
		{"reject", "rename-api-0103", "r"},
		{"reject with feedback", "rename-api-0103", "R"},
		{"resume with feedback", "docs-typo-0104", "u"},
		{"clean", "rename-api-0103", "c"},
		{"stop", "fix-total-0101", "s"},
		{"editor", "rename-api-0103", "e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSample(t, 120, 40, readOnly)
			h.openReviewOf(tc.slug)
			h.key(tc.key)
			assertRefused(t, h, tc.name)
			if h.m.screen != screenReview || h.m.review == nil {
				t.Fatalf("%s left the review (screen %s)", tc.name, h.m.screen)
			}
			if md := h.m.review.Modal(); md != "" {
				t.Fatalf("%s opened the %q dialog", tc.name, md)
			}
			// A confirming key after it confirms nothing.
			h.key("y")
			assertNoChange(t, h)
		})
	}
}

func TestReadOnlyRefusesDashboardActions(t *testing.T) {
	for _, tc := range []struct{ name, slug, key string }{
		{"launch", "rename-api-0103", "L"},
		{"stop a running run", "fix-total-0101", "s"},
		{"editor", "rename-api-0103", "e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSample(t, 120, 40, readOnly)
			h.m.list.SelectKey(tc.slug)
			h.key(tc.key)
			assertRefused(t, h, tc.name)
			if h.m.screen != screenDashboard || h.m.form != nil || h.m.ask.Open() {
				t.Fatalf("%s opened something: screen %s, form %v, question %v", tc.name, h.m.screen, h.m.form != nil, h.m.ask.Open())
			}
			h.key("y")
			assertNoChange(t, h)
		})
	}
}

// What reaches the root other than by a key is refused too: a submitted
// launch form, an editor request, and the queue given at start.
func TestReadOnlyRefusesLaunchesAndEditorRequests(t *testing.T) {
	spec := backend.LaunchSpec{Repo: "/src/shop", Task: "add a flag", Model: "devstral", Sandbox: "none"}
	h := newSample(t, 120, 40, readOnly, func(o *Options) { o.Queue = []backend.LaunchSpec{spec} })
	if len(h.m.queue) != 0 {
		t.Fatalf("read-only session queued %d launches", len(h.m.queue))
	}
	h.send(launch.SubmitMsg{Spec: spec})
	assertRefused(t, h, "submitted launch")
	if len(h.m.queue) != 0 {
		t.Fatal("a submitted launch was queued")
	}
	h.m.status = ""
	h.send(review.EditorMsg{Dir: "/src/shop/.worktrees/dw-rename-api-0103"})
	assertRefused(t, h, "editor request")
}

func TestReadOnlyStillNavigatesAndReads(t *testing.T) {
	h := newSample(t, 120, 40, readOnly)
	h.contains("rename Invoice.sum")
	// The list moves.
	h.m.list.SelectKey("rename-api-0103")
	h.key("j")
	if it, ok := h.m.list.Selected(); !ok || it.Key == "rename-api-0103" {
		t.Fatalf("j did not move the cursor: %+v", it)
	}
	// The review opens, shows the diff, and its view keys work.
	h.openReview("rename-api-0103")
	h.contains("invoice.py")
	h.contains("Renamed sum to total everywhere.")
	h.key("space")
	if inc := h.m.review.Included(); len(inc) == 0 || inc[0] {
		t.Fatalf("space did not leave the file out of the view's selection: %v", inc)
	}
	h.key("t")
	if h.m.screen != screenTranscript {
		t.Fatalf("t in the review opened %s", h.m.screen)
	}
	h.key("esc")
	if h.m.screen != screenDashboard {
		t.Fatalf("esc from the transcript went to %s", h.m.screen)
	}
	h.key("S")
	h.contains("Review statistics")
	h.key("esc", "?")
	if !h.m.fullHelp {
		t.Fatal("? did not open the help")
	}
	h.key("?", "q")
	if !h.quit {
		t.Fatal("q did not quit the read-only session")
	}
	if h.m.status == watchRefusal {
		t.Fatal("reading keys were refused")
	}
	assertNoChange(t, h)
}

func TestNoEditorRefusesTheEditorOnly(t *testing.T) {
	const line = "no editor over SSH"
	h := newSample(t, 120, 40, func(o *Options) { o.NoEditor = line })
	h.openReview("rename-api-0103")
	h.key("e")
	if h.m.status != line {
		t.Fatalf("status = %q, want %q", h.m.status, line)
	}
	h.key("r")
	if c := lastCall(t, h.store, "Verdict"); c.Slug != "rename-api-0103" {
		t.Fatalf("a session with no editor could not reject: %+v", c)
	}
}

// openReviewOf opens the review of slug whatever its state (the list opens
// a live run's transcript instead).
func (h *harness) openReviewOf(slug string) {
	h.t.Helper()
	e := h.m.runs[slug]
	if e == nil {
		h.t.Fatalf("%s not loaded", slug)
	}
	h.wait = 10 * time.Second
	next, cmd := h.m.openReview(e.run)
	h.m = next.(Model)
	h.run(cmd)
	h.wait = 0
	if h.m.screen != screenReview || h.m.review == nil || !h.m.review.Loaded() {
		h.t.Fatalf("review of %s not open (screen %s)", slug, h.m.screen)
	}
}
