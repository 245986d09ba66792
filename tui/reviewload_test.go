package tui

import (
	"strings"
	"testing"
)

// The review's diff is on screen while the merge forecast is still being
// made; merge waits for the forecast (and says so), then asks as usual.
func TestReviewShowsTheDiffBeforeTheForecast(t *testing.T) {
	h := newSample(t, 120, 40)
	hold := make(chan struct{})
	h.store.HoldForecast = hold
	if !h.m.list.SelectKey("rename-api-0103") {
		t.Fatal("no such run")
	}
	h.key("enter")
	h.until("the diff on screen", func() bool { return h.m.review != nil && h.m.review.Loaded() })
	screen := h.screen()
	if !strings.Contains(screen, "merge forecast…") {
		t.Fatalf("the review does not say the forecast is coming:\n%s", screen)
	}
	// A verdict key pressed now waits for the forecast (which is trying
	// the merge in the run's repository), then acts.
	h.key("m")
	if !strings.Contains(h.screen(), "waiting for the merge forecast") {
		t.Fatalf("merge before the forecast:\n%s", h.screen())
	}
	for _, c := range h.store.Calls() {
		if c.Method == "Merge" {
			t.Fatal("merged without a forecast")
		}
	}
	close(hold)
	h.until("the merge question", func() bool { return strings.Contains(h.screen(), "y/enter merge") })
	h.key("y")
	lastCall(t, h.store, "Merge")
}
