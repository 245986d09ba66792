package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/tui/fit"
)

// sideBySide is the width from which the runs list stands beside the
// panes rather than above them.
const sideBySide = 120

// chrome is the number of lines around the body: the title (plus the
// banner), the status line and the help bar (or the full help).
func (m Model) chrome() (top, bottom int) {
	top = 1
	if m.opts.Banner != "" {
		top++
	}
	bottom = 1 + m.helpHeight()
	return top, bottom
}

func (m Model) helpHeight() int {
	if !m.fullHelp {
		return 1
	}
	return max(1, len(m.helpView()))
}

// bodySize is the size of the area between the chrome.
func (m Model) bodySize() (int, int) {
	top, bottom := m.chrome()
	return m.width, max(0, m.height-top-bottom)
}

// dashboardRects computes the list's and the panes' areas.
type rect struct{ x, y, w, h int }

func (m Model) dashboardRects() (list rect, panes [paneCount]rect, showList bool) {
	w, h := m.bodySize()
	area := rect{0, 0, w, h}
	showList = !m.zoom
	if m.zoom && m.focusPane < 0 {
		return area, panes, true
	}
	if m.zoom {
		for i := range panes {
			if i == m.focusPane {
				panes[i] = area
			}
		}
		return list, panes, false
	}
	paneArea := area
	if w >= sideBySide {
		lw := max(44, w*2/5)
		list = rect{0, 0, lw, h}
		paneArea = rect{lw + 1, 0, w - lw - 1, h}
	} else {
		lh := max(5, h/3)
		if h-lh < 10 {
			lh = max(3, h-10)
		}
		list = rect{0, 0, w, lh}
		paneArea = rect{0, lh, w, h - lh}
	}
	pw, ph := paneArea.w/2, paneArea.h/2
	for i := range panes {
		col, row := i%2, i/2
		x := paneArea.x + col*pw
		y := paneArea.y + row*ph
		cw, rh := pw, ph
		if col == 1 {
			cw = paneArea.w - pw
		}
		if row == 1 {
			rh = paneArea.h - ph
		}
		panes[i] = rect{x, y, cw, rh}
	}
	return list, panes, showList
}

// layout pushes sizes down after a resize or a change of screen.
func (m *Model) layout() {
	m.help.SetWidth(m.width)
	w, h := m.bodySize()
	list, panes, _ := m.dashboardRects()
	m.list.SetZoomed(m.zoom && m.focusPane < 0)
	m.list.SetSize(list.w, list.h)
	for i := range m.paneViews {
		m.paneViews[i].SetSize(panes[i].w, panes[i].h)
	}
	if m.review != nil {
		m.review.SetSize(w, h)
	}
	if m.transcript != nil {
		m.transcript.SetSize(w, h)
	}
	if m.form != nil {
		m.form.SetSize(w, h)
	}
	m.stats.SetSize(w, h)
	if m.bench != nil {
		m.bench.SetSize(w, h)
	}
}

// ctrlCQuit is how to quit where q goes back (every screen but the
// dashboard).
var ctrlCQuit = key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit"))

// helpBindings are the keys that work now, for the help bar.
func (m Model) shortHelp() []key.Binding {
	c := m.keys.Common
	switch m.screen {
	case screenReview:
		if m.review != nil {
			return append(m.review.ShortHelp(), c.Help, ctrlCQuit)
		}
	case screenTranscript:
		if m.transcript != nil {
			return append(m.transcript.ShortHelp(), c.Help, ctrlCQuit)
		}
	case screenStats:
		return append(m.stats.ShortHelp(), c.Help, ctrlCQuit)
	case screenBench:
		if m.bench != nil {
			return append(m.bench.ShortHelp(), c.Help)
		}
	case screenLaunch:
		if m.form != nil {
			return m.form.ShortHelp()
		}
	}
	d := m.keys.Dashboard
	if m.ask.Open() {
		return append(m.ask.ShortHelp(), ctrlCQuit)
	}
	if m.list.Filtering() {
		return m.list.ShortHelp()
	}
	out := m.list.ShortHelp()
	return append(out, d.NextReview, d.Launch, d.FocusNext, d.Zoom, d.Stats, d.Bench, c.Help, c.Quit)
}

func (m Model) fullHelpGroups() [][]key.Binding {
	c := m.keys.Common
	common := []key.Binding{c.Help, ctrlCQuit}
	switch m.screen {
	case screenReview:
		if m.review != nil {
			return append(m.review.FullHelp(), common)
		}
	case screenTranscript:
		if m.transcript != nil {
			return append(m.transcript.FullHelp(), common)
		}
	case screenStats:
		return append(m.stats.FullHelp(), common)
	case screenBench:
		if m.bench != nil {
			return append(m.bench.FullHelp(), []key.Binding{c.Help, ctrlCQuit})
		}
	case screenLaunch:
		if m.form != nil {
			return m.form.FullHelp()
		}
	}
	d := m.keys.Dashboard
	common = []key.Binding{c.Help, c.Quit}
	return append(m.list.FullHelp(),
		[]key.Binding{d.NextReview, d.Launch, d.Stats, d.Bench, d.FocusNext, d.Zoom},
		[]key.Binding{d.Pane1, d.Pane2, d.Pane3, d.Pane4},
		common)
}

// fullHelpLines is the full help laid out for the width: its columns side
// by side while they fit, the rest in bands below, so no column is cut
// off at the right (the one with ? and q comes last).
func (m Model) fullHelpLines() []string {
	wide := m.help
	wide.SetWidth(0)
	var out []string
	var band [][]key.Binding
	for _, g := range m.fullHelpGroups() {
		next := append(slices.Clone(band), g)
		if len(band) > 0 && fit.Width(wide.FullHelpView(next)) > m.width {
			out = append(out, strings.Split(wide.FullHelpView(band), "\n")...)
			next = [][]key.Binding{g}
		}
		band = next
	}
	if len(band) > 0 {
		out = append(out, strings.Split(wide.FullHelpView(band), "\n")...)
	}
	return out
}

// helpLimit is the most lines the full help takes: half the screen, so
// the screen it explains stays in sight.
func (m Model) helpLimit() int { return max(3, m.height/2) }

// scrollHelp moves a full help taller than its room with the list's keys;
// it reports whether k was one of them.
func (m *Model) scrollHelp(k tea.KeyPressMsg) bool {
	n, limit := len(m.fullHelpLines()), m.helpLimit()
	if n <= limit {
		return false
	}
	r, page := m.keys.Runs, limit-1
	maxTop := n - page
	switch {
	case key.Matches(k, r.Up):
		m.helpTop--
	case key.Matches(k, r.Down):
		m.helpTop++
	case key.Matches(k, r.Top):
		m.helpTop = 0
	case key.Matches(k, r.Bottom):
		m.helpTop = maxTop
	case key.Matches(k, r.HalfDown):
		m.helpTop += max(1, page/2)
	case key.Matches(k, r.HalfUp):
		m.helpTop -= max(1, page/2)
	case key.Matches(k, r.PageDown):
		m.helpTop += page
	case key.Matches(k, r.PageUp):
		m.helpTop -= page
	default:
		return false
	}
	m.helpTop = max(0, min(m.helpTop, maxTop))
	return true
}
