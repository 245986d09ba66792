package runlist

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// viewRuns are a few runs of both groups, for the view goldens.
func viewRuns() []spec {
	return []spec{
		{slug: slug("fix bug 6", 33333), task: "fix bug 6 in the parser", ago: 1},
		{slug: slug("fix bug 13", 12), task: "fix bug 13 in the parser", ago: 2, verdict: transcript.VerdictAccept},
		{slug: slug("fix bug 3", 14), task: "fix bug 3 in the parser", ago: 30},
		{slug: slug("tidy readme", 15), task: "tidy the readme", ago: 4, verdict: transcript.VerdictReject},
		{slug: slug("add export json", 16), task: "make export accept --json", ago: 5},
	}
}

// The views the list's own goldens cover: zoomed (a header row names the
// columns the width shows) and filtered by words (ranked, without group
// headings), at three widths, in colour and without.
func TestViewGolden(t *testing.T) {
	views := []struct {
		name  string
		setup func(t *testing.T, m Model) Model
	}{
		{"zoomed", func(t *testing.T, m Model) Model { m.SetZoomed(true); return m }},
		{"zoomed-filtered", func(t *testing.T, m Model) Model {
			m.SetZoomed(true)
			return typeText(t, press(t, m, "/"), "bug 3")
		}},
		{"filtered", func(t *testing.T, m Model) Model { return typeText(t, press(t, m, "/"), "bug 3") }},
	}
	for _, v := range views {
		for _, w := range []int{60, 110, 200} {
			for _, mode := range []theme.Mode{theme.Dark, theme.NoColor} {
				t.Run(fmt.Sprintf("%s/%d/%s", v.name, w, mode), func(t *testing.T) {
					km := keys.Default()
					m := New(theme.New(mode), &km.Runs)
					m.SetSize(w, 10)
					m.SetFocused(true)
					m.SetItems(items(viewRuns()...))
					m = v.setup(t, m)
					out := m.View(t0)
					lines := strings.Split(out, "\n")
					if len(lines) != 10 {
						t.Fatalf("%d lines, want 10", len(lines))
					}
					for i, l := range lines {
						if got := ansi.StringWidth(l); got != w {
							t.Fatalf("line %d is %d cells, want %d: %q", i+1, got, w, ansi.Strip(l))
						}
					}
					golden.RequireEqual(t, out)
				})
			}
		}
	}
}

// The header row names the columns over the columns: each name starts
// where its column's text starts in the rows.
func TestColumnNamesStandOverTheirColumns(t *testing.T) {
	t.Parallel()
	for _, w := range []int{60, 80, 110, 160, 200} {
		m := newList(t, w, 10)
		m.SetItems(items(viewRuns()...))
		m.SetZoomed(true)
		lines := strings.Split(ansi.Strip(m.View(t0)), "\n")
		header, row := lines[1], lines[3] // title, header, heading, the first row
		if !strings.Contains(row, "fix bug 6") {
			t.Fatalf("width %d: the first row is %q", w, row)
		}
		cols := map[string]string{"status": "completed", "task": "fix bug 6", "elapsed": "3m00s"}
		if w >= 100 {
			cols["repo"], cols["model"] = "shop", "qwen/qwen3-coder"
		}
		if w >= 70 {
			cols["turns"] = "7"
		}
		for name, val := range cols {
			hi, ri := cellIndex(header, name), cellIndex(row, val)
			if hi < 0 || hi != ri {
				t.Errorf("width %d: %q at cell %d, its value %q at cell %d\n%s\n%s", w, name, hi, val, ri, header, row)
			}
		}
	}
}

// cellIndex is the cell where sub starts in s, -1 when absent.
func cellIndex(s, sub string) int {
	i := strings.Index(s, sub)
	if i < 0 {
		return -1
	}
	return ansi.StringWidth(s[:i])
}

// The cursor row stays on screen at the bottom of a long list, whether
// the rows are grouped or ranked, with the column names or without: the
// scrolling counts headings only where they are drawn, and the header row.
func TestCursorRowStaysOnScreen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		zoomed bool
		query  string
	}{
		{"grouped", false, ""},
		{"grouped zoomed", true, ""},
		{"ranked", false, "bug"},
		{"ranked zoomed", true, "bug"},
		{"field terms zoomed", true, "is:review"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newList(t, 100, 12)
			m.SetItems(items(manyRuns(100)...))
			m.SetZoomed(tc.zoomed)
			if tc.query != "" {
				m = press(t, typeText(t, press(t, m, "/"), tc.query), "enter")
			}
			for _, keys := range [][]string{{"G"}, {"k", "k", "k"}, {"g"}, {"j", "j", "j", "j", "j", "j", "j", "j", "j", "j", "j"}} {
				m = press(t, m, keys...)
				it, _ := m.Selected()
				out := ansi.Strip(m.View(t0))
				cursor := ""
				for l := range strings.SplitSeq(out, "\n") {
					if strings.HasPrefix(l, theme.GlyphCursor) {
						cursor = l
					}
				}
				if !strings.Contains(cursor, it.Task()+" ") {
					t.Fatalf("after %v the cursor row (%s) is not on screen:\n%s", keys, it.Task(), out)
				}
				if n := strings.Count(out, "\n") + 1; n != 12 {
					t.Fatalf("%d lines", n)
				}
			}
		})
	}
}
