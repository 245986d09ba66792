package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/live"
)

var goldenSizes = [][2]int{{80, 24}, {120, 40}, {200, 60}}

var goldenModes = []struct {
	name  string
	color ColorMode
}{{"dark", ColorDark}, {"light", ColorLight}, {"nocolor", ColorNone}}

// goldenScreens put the sample into each screen.
var goldenScreens = []struct {
	name  string
	setup func(h *harness)
}{
	{"dashboard", func(h *harness) {}},
	{"review", func(h *harness) { h.openReview("rename-api-0103") }},
	{"transcript", func(h *harness) {
		h.m.list.SelectKey("fix-total-0101")
		h.key("t", "h")
	}},
	{"launch", func(h *harness) { h.key("L") }},
	{"stats", func(h *harness) { h.key("S") }},
	{"bench", func(h *harness) { h.openBench() }},
	{"bench-case", func(h *harness) {
		h.openBench()
		h.key("j", "l", "l") // qwen/qwen3-coder, shell-format, repeat 0
		h.openBenchCase()
	}},
	{"help", func(h *harness) { h.key("?") }},
	{"clean-confirm", func(h *harness) {
		h.store.SetPlan("rename-api-0103", backend.CleanPlan{
			Actions: []string{"commit the uncommitted changes onto dirtywork/rename-api-0103", "remove the worktree"},
			Parked:  []string{"refs/dirtywork/parked/rename-api-0103"},
		})
		h.openReview("rename-api-0103")
		h.key("c")
	}},
	{"stop-confirm", func(h *harness) {
		h.m.list.SelectKey("fix-total-0101")
		h.key("s")
	}},
	{"merge-confirm", func(h *harness) {
		h.openReview("rename-api-0103")
		h.key("m")
	}},
}

func TestGolden(t *testing.T) {
	for _, sc := range goldenScreens {
		for _, sz := range goldenSizes {
			for _, mode := range goldenModes {
				name := fmt.Sprintf("%s/%dx%d/%s", sc.name, sz[0], sz[1], mode.name)
				t.Run(name, func(t *testing.T) {
					h := newSample(t, sz[0], sz[1], func(o *Options) {
						o.Color = mode.color
						o.Banner = "demo: the model is scripted — no LLM is involved"
					})
					h.entries("fix-total-0101", append(liveEntries("total() returns only the tax; fix it"),
						live.Entry{Kind: live.KindProgress, Turn: 2, Tokens: 120, TokensPerS: 31.4})...)
					h.entries("add-export-0102", liveEntries("make export accept --json")[:4]...)
					h.clock = h.clock.Add(0)
					sc.setup(h)
					out := h.screen()
					assertSize(t, out, sz[0], sz[1])
					if mode.color == ColorNone && strings.Contains(out, "\x1b[3") {
						t.Fatalf("NO_COLOR screen has a colour sequence")
					}
					golden.RequireEqual(t, out)
				})
			}
		}
	}
}

// assertSize fails unless out is exactly h lines of exactly w cells.
func assertSize(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Fatalf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got != w {
			t.Fatalf("line %d is %d cells wide, want %d: %q", i+1, got, w, ansi.Strip(l))
		}
	}
}

// TestResizeReflows checks every width from narrow to wide keeps every
// line inside the screen on every screen.
func TestResizeReflows(t *testing.T) {
	for _, sc := range goldenScreens {
		t.Run(sc.name, func(t *testing.T) {
			h := newSample(t, 120, 40)
			h.entries("fix-total-0101", liveEntries("total() returns only the tax; fix it")...)
			sc.setup(h)
			for _, sz := range [][2]int{{60, 16}, {79, 23}, {100, 30}, {119, 35}, {120, 20}, {160, 50}, {240, 70}, {80, 24}} {
				h.send(teaSize(sz[0], sz[1]))
				assertSize(t, h.screen(), sz[0], sz[1])
			}
		})
	}
}

var _ = time.Second
