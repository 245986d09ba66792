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

// TestFullHelpScrollsWhenTooTall: a full help taller than half the screen
// shows a window with its position, moves with the list's keys (leaving
// the list where it is), and its last band holds ? and q.
func TestFullHelpScrollsWhenTooTall(t *testing.T) {
	h := newSample(t, 80, 16) // room for 8 help lines; the dashboard's has 10
	selected := func() string {
		it, _ := h.m.list.Selected()
		return it.Task()
	}
	before := selected()
	h.key("?")
	foot := func() string {
		t.Helper()
		lines := strings.Split(h.screen(), "\n")
		return ansi.Strip(lines[len(lines)-1])
	}
	want := func(pos string) {
		t.Helper()
		if f := foot(); !strings.Contains(f, "scroll the help") || !strings.HasSuffix(strings.TrimRight(f, " "), pos) {
			t.Fatalf("help foot %q, want it at %s", f, pos)
		}
	}
	want("7/10")
	if strings.Contains(ansi.Strip(h.screen()), "q/ctrl+c quit") {
		t.Fatal("the help's end shows before scrolling")
	}
	h.key("j")
	want("8/10")
	h.key("G")
	want("10/10")
	if s := ansi.Strip(h.screen()); !strings.Contains(s, "? ") || !strings.Contains(s, "q/ctrl+c quit") {
		t.Fatalf("the help's end lacks ? and q:\n%s", s)
	}
	h.key("k")
	want("9/10")
	h.key("g")
	want("7/10")
	h.key("ctrl+d")
	want("10/10")
	h.key("pgup")
	want("7/10")
	if got := selected(); got != before {
		t.Fatalf("scrolling the help moved the list: %v, was %v", got, before)
	}
	h.key("?")
	if f := foot(); strings.Contains(f, "scroll the help") {
		t.Fatalf("? did not close the help: %q", f)
	}
}
