package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/review"
)

// A run that stopped short (out of turns, dead, stopped, stalled) offers
// resume with feedback from its review; it records no verdict. A run that
// finished does not offer it (reject with feedback is its way on).
func TestStoppedShortRunsOfferResume(t *testing.T) {
	for _, slug := range []string{"docs-typo-0104", "crashed-0099"} {
		t.Run(slug, func(t *testing.T) {
			h := newSample(t, 160, 40)
			h.store.SetReview(slug, backend.Review{Patch: samplePatch})
			h.openReview(slug)
			if !strings.Contains(ansi.Strip(h.screen()), "u resume with feedback") {
				t.Fatalf("the help bar does not offer resume:\n%s", ansi.Strip(h.screen()))
			}
			h.key("u")
			if h.m.review.Modal() != "feedback" {
				t.Fatalf("modal %q", h.m.review.Modal())
			}
			h.typeText("finish the last two files")
			h.key("ctrl+s")
			if !strings.Contains(ansi.Strip(h.screen()), "no verdict is recorded") {
				t.Fatalf("the question does not say what resume does:\n%s", ansi.Strip(h.screen()))
			}
			h.key("y")
			r := lastCall(t, h.store, "Resume")
			if r.Slug != slug || r.Note != "finish the last two files" {
				t.Fatalf("resume %+v", r)
			}
			for _, c := range h.store.Calls() {
				if c.Method == "Verdict" {
					t.Fatalf("a resume recorded a verdict: %+v", c)
				}
			}
			if !strings.Contains(h.m.status, "resumed as") {
				t.Fatalf("status %q", h.m.status)
			}
		})
	}
	h := newSample(t, 160, 40)
	h.openReview("rename-api-0103")
	if strings.Contains(ansi.Strip(h.screen()), "resume with feedback") {
		t.Fatal("a completed run offers resume")
	}
	h.key("u")
	if h.m.review.Modal() == "feedback" {
		t.Fatal("u opened the feedback box on a completed run")
	}
}

func TestResumable(t *testing.T) {
	for name, c := range map[string]struct {
		run  backend.Run
		want bool
	}{
		"interrupted":   {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusInterrupted}}, true},
		"max turns":     {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusMaxTurns}}, true},
		"dead":          {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning}}, true},
		"live":          {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning}, Alive: true}, false},
		"completed":     {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusCompleted}}, false},
		"cleaned stall": {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusStalled, Verdict: transcript.VerdictCleanup}}, false},
	} {
		if got := review.Resumable(c.run); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}
