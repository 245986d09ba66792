package benchview

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// goldenViews put the sample into each of the view's states.
var goldenViews = []struct {
	name  string
	setup func(m Model) Model
}{
	// The finished sweep: the model table, tasks × models, failure
	// classes; the cursor on a false pass.
	{"table", func(m Model) Model {
		m, _ = press(m, "l", "l", "l")
		return m
	}},
	// A sweep in progress: the progress line and the cases in flight,
	// marked in the table too.
	{"progress", func(m Model) Model {
		st := &bench.SweepState{Stamp: "20261202T130000Z", Started: t0.Add(-40 * time.Minute), Total: 56, InFlight: []bench.Flight{
			{Model: "gpt-oss-20b", Task: "shell-format", Repeat: 3, Started: t0.Add(-130 * time.Second), Slug: "live-0001"},
			{Model: "qwen/qwen3-coder", Task: "py-off-by-one", Repeat: 3, Started: t0.Add(-20 * time.Second)},
		}}
		m, _ = m.Update(stateMsg{state: st, alive: true})
		return m
	}},
	// A sweep whose process is gone before it finished.
	{"stopped", func(m Model) Model {
		st := &bench.SweepState{Stamp: "20261202T130000Z", Started: t0.Add(-40 * time.Minute), Total: 56}
		m, _ = m.Update(stateMsg{state: st, alive: false})
		return m
	}},
	// One case: acceptance output, time split, serving, failure evidence.
	{"case", func(m Model) Model {
		m, _ = press(m, "j", "l", "l", "l", "enter")
		m, _ = m.Update(acceptanceMsg{row: m.open.row, text: "acceptance: fail\nexit status 1\n\n" +
			"$ node cli.js --json\n\tError: unknown flag --json\n    at parse (cli.js:12:11)\n"})
		return m
	}},
}

var goldenSizes = [][2]int{{80, 24}, {140, 40}}

func TestGolden(t *testing.T) {
	for _, v := range goldenViews {
		for _, sz := range goldenSizes {
			for _, mode := range []theme.Mode{theme.Dark, theme.Light, theme.NoColor} {
				t.Run(fmt.Sprintf("%s/%dx%d/%s", v.name, sz[0], sz[1], mode), func(t *testing.T) {
					rows, runs := sampleRows()
					runs["live-0001"] = liveRun("live-0001")
					m := v.setup(sampleModel(t, sz[0], sz[1], mode, rows, runs))
					out := m.View(t0)
					assertSize(t, out, sz[0], sz[1])
					if mode == theme.NoColor && strings.Contains(out, "\x1b[3") {
						t.Fatal("NO_COLOR screen has a colour sequence")
					}
					golden.RequireEqual(t, out)
				})
			}
		}
	}
}

// Every width and height keeps every line inside the view.
func TestResizeReflows(t *testing.T) {
	t.Parallel()
	for _, v := range goldenViews {
		rows, runs := sampleRows()
		m := v.setup(sampleModel(t, 120, 40, theme.Dark, rows, runs))
		for _, sz := range [][2]int{{40, 10}, {60, 16}, {79, 23}, {100, 30}, {119, 35}, {160, 50}, {240, 70}} {
			m.SetSize(sz[0], sz[1])
			assertSize(t, m.View(t0), sz[0], sz[1])
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
