package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EFocusedPaneShowsTheStreamedText: while a run's reply streams,
// the focused pane shows its last words as they arrive.
func TestE2EFocusedPaneShowsTheStreamedText(t *testing.T) {
	// One reply streamed slowly (30 pieces, 400 ms apart: about 12 s),
	// then a finish the test never needs.
	e := newE2E(t, `{"turns":[
		{"chunk_delay_ms": 400, "text": "Reading the pager first. The window function slices one short of the page size, so the last item of every page is lost; changing the bound to n fixes it and the tests should pass afterwards. Then the pager itself will be checked once more."},
		{"finish":"done"}
	]}`)
	ann, stderr, code := e.detach()
	if code != 0 || ann == nil {
		t.Fatalf("run --detach: exit %d, %v\n%s", code, ann, stderr)
	}
	p := startTUI(t, 160, 40, []string{"DIRTYWORK_HOME=" + e.home, "TMPDIR=" + filepath.Dir(e.home)}, "tui", "--notify", "none")
	p.waitText("running (1)", 30*time.Second)
	p.keys("1") // focus the run's pane
	screen, _ := p.waitFor("the streamed words in the focused pane", 60*time.Second, func(s string) bool {
		if !strings.Contains(s, "› …") {
			return false
		}
		for _, words := range []string{"pager first", "window function", "page size", "last item", "bound to n", "tests should", "checked once"} {
			if strings.Contains(s, words) {
				return true
			}
		}
		return false
	})
	if !strings.Contains(screen, "streaming") {
		t.Fatalf("the pane shows streamed words but not that it streams:\n%s", screen)
	}
}
