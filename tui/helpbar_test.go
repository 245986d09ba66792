package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestNarrowHelpBarKeepsHelpAndQuit: at 80 columns the help bar cuts
// other entries first, so ? (help) and q (quit, or back) stay in sight on
// every screen that has them.
func TestNarrowHelpBarKeepsHelpAndQuit(t *testing.T) {
	want := map[string]string{
		"dashboard":  "q/ctrl+c quit",
		"review":     "esc/q back",
		"transcript": "esc/q back",
		"stats":      "esc/q back",
		"bench":      "esc/q back",
		"bench-case": "esc/q back",
	}
	for _, sc := range goldenScreens {
		q, ok := want[sc.name]
		if !ok {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			h := newSample(t, 80, 24)
			sc.setup(h)
			lines := strings.Split(h.screen(), "\n")
			bar := ansi.Strip(lines[len(lines)-1])
			if !strings.Contains(bar, "? help") || !strings.Contains(bar, q) {
				t.Fatalf("help bar %q lacks ? help or %s", bar, q)
			}
			if ansi.StringWidth(bar) > 80 {
				t.Fatalf("help bar is %d wide", ansi.StringWidth(bar))
			}
		})
	}
}
