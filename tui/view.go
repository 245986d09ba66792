package tui

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/review"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// View draws the whole screen.
func (m Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	running, review, _ := m.counts()
	v.WindowTitle = fmt.Sprintf("dirtywork · %d running · %d to review", running, review)
	return v
}

// Render is the screen's content: exactly height lines of exactly width
// cells.
func (m Model) Render() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	w := m.width
	lines := []string{m.titleLine()}
	if m.opts.Banner != "" {
		lines = append(lines, fit.Line(m.styles.Banner.Render(termsafe.Line(m.opts.Banner)), w))
	}
	bw, bh := m.bodySize()
	var body string
	switch m.screen {
	case screenReview:
		if m.review != nil {
			body = m.review.View()
		}
	case screenTranscript:
		if m.transcript != nil {
			body = m.transcript.View()
		}
	case screenStats:
		body = m.stats.View()
	case screenBench:
		if m.bench != nil {
			body = m.bench.View(m.now)
		}
	case screenLaunch:
		if m.form != nil {
			body = center(m.form.View(), bw, bh)
		}
	default:
		body = m.dashboard()
	}
	bodyLines := strings.Split(fit.Block(body, bw, bh), "\n")
	if m.ask.Open() {
		bodyLines = strings.Split(fit.Block(strings.Join(review.Overlay(bodyLines, m.ask.Box(m.styles, bw), bw, bh), "\n"), bw, bh), "\n")
	}
	lines = append(lines, bodyLines...)
	lines = append(lines, m.statusLine())
	lines = append(lines, m.helpView()...)
	return fit.Lines(lines, w, m.height)
}

func (m Model) titleLine() string {
	s := m.styles
	running, review, queued := m.counts()
	sep := s.Muted.Render(" " + theme.GlyphSep + " ")
	parts := []string{
		s.Info.Render(fmt.Sprintf("%s %d running", theme.GlyphRunning, running)),
		s.Review.Render(fmt.Sprintf("%s %d to review", theme.GlyphReview, review)),
		s.Muted.Render(fmt.Sprintf("%s %d queued", theme.GlyphQueued, queued)),
		s.Muted.Render(fmt.Sprintf("max %d", m.opts.MaxParallel)),
	}
	left := s.Header.Render("dirtywork mission control")
	right := strings.Join(parts, sep)
	gap := m.width - fit.Width(left) - fit.Width(right)
	if gap < 2 {
		return fit.Line(left+"  "+right, m.width)
	}
	return left + strings.Repeat(" ", gap) + right
}

func (m Model) statusLine() string {
	s := m.styles
	switch {
	case !m.loaded && m.previewTotal > 0:
		return fit.Line(s.Muted.Render(fmt.Sprintf("the %d most recent runs; reading all %d…", len(m.runs), m.previewTotal)), m.width)
	case !m.loaded:
		return fit.Line(s.Muted.Render("reading the runs root…"), m.width)
	case m.status == "":
		return fit.Line("", m.width)
	case m.statusErr:
		return fit.Line(s.Error.Render(theme.GlyphWarn+" ")+s.Warn.Render(m.status), m.width)
	}
	return fit.Line(s.StatusBar.Render(m.status), m.width)
}

func (m Model) helpView() []string {
	if m.fullHelp {
		lines := m.fullHelpLines()
		limit := m.helpLimit()
		if len(lines) <= limit {
			return lines
		}
		// Too tall: a window on it, and a line saying where it is.
		top := min(max(0, m.helpTop), len(lines)-(limit-1))
		shown := slices.Clone(lines[top : top+limit-1])
		note := m.styles.Muted.Render(m.keys.Runs.Down.Help().Key + "/" + m.keys.Runs.Up.Help().Key + " scroll the help")
		where := m.styles.Muted.Render(fit.Position(top+limit-2, len(lines)))
		return append(shown, fit.Spread(note, where, m.width))
	}
	return []string{fit.Line(m.help.ShortHelpView(m.fitShortHelp(m.shortHelp())), m.width)}
}

// fitShortHelp drops entries from the right of the help bar until it
// fits the width, but never the help key nor the one that quits or goes
// back (q): on a narrow terminal those are the ones a person must find.
func (m Model) fitShortHelp(bs []key.Binding) []key.Binding {
	c := m.keys.Common
	kept := map[string]bool{}
	for _, k := range c.Help.Keys() {
		kept[k] = true
	}
	for _, k := range c.Quit.Keys() {
		if k != "ctrl+c" { // ctrl+c quits everywhere; q is the key to show
			kept[k] = true
		}
	}
	keep := func(b key.Binding) bool {
		return slices.ContainsFunc(b.Keys(), func(k string) bool { return kept[k] })
	}
	out := slices.DeleteFunc(slices.Clone(bs), func(b key.Binding) bool { return !b.Enabled() })
	if !slices.ContainsFunc(out, keep) {
		return out // nothing to save: the bar's own cut (…) says there is more
	}
	wide := m.help
	wide.SetWidth(0)
	for fit.Width(wide.ShortHelpView(out)) > m.width {
		last := -1
		for i := len(out) - 1; i >= 0 && last < 0; i-- {
			if !keep(out[i]) {
				last = i
			}
		}
		if last < 0 {
			break // what is left must stay; the bar cuts it at the edge
		}
		out = slices.Delete(out, last, last+1)
	}
	return out
}

// dashboard draws the list and the panes: each block is fitted to its
// rectangle once, and each row of the screen is the blocks' lines side by
// side (the rectangles tile the area, so no line is measured twice).
func (m Model) dashboard() string {
	bw, bh := m.bodySize()
	list, panes, showList := m.dashboardRects()
	type block struct {
		r     rect
		lines []string
	}
	var blocks []block
	if showList && list.w > 0 && list.h > 0 {
		blocks = append(blocks, block{list, strings.Split(fit.Block(m.list.View(m.now), list.w, list.h), "\n")})
	}
	for i, r := range panes {
		if r.w <= 0 || r.h <= 0 {
			continue
		}
		blocks = append(blocks, block{r, strings.Split(m.paneView(i, r), "\n")})
	}
	rows := make([]string, bh)
	for y := range rows {
		var b strings.Builder
		x := 0
		for {
			// The next block on this row, left to right.
			next := -1
			for i, bl := range blocks {
				if y >= bl.r.y && y < bl.r.y+bl.r.h && bl.r.x >= x && (next < 0 || bl.r.x < blocks[next].r.x) {
					next = i
				}
			}
			if next < 0 {
				break
			}
			bl := blocks[next]
			b.WriteString(strings.Repeat(" ", bl.r.x-x))
			b.WriteString(bl.lines[y-bl.r.y])
			x = bl.r.x + bl.r.w
		}
		if x < bw {
			b.WriteString(strings.Repeat(" ", bw-x))
		}
		rows[y] = b.String()
	}
	return strings.Join(rows, "\n")
}

// paneView draws pane i, or reuses its last drawing when nothing it
// shows has changed.
func (m Model) paneView(i int, r rect) string {
	it := m.item(m.panes[i])
	k := paneKey{slug: m.panes[i], w: r.w, h: r.h, focused: m.focusPane == i, second: m.now.Unix(), styles: m.styles, mode: m.styles.Mode}
	var run backend.Run
	if it != nil {
		run, k.state = it.Run, it.State
		if it.State != nil {
			k.version = it.State.Version
		}
	}
	c := &m.paneCache[i]
	if c.text != "" && c.key == k && reflect.DeepEqual(c.run, run) {
		return c.text
	}
	c.key, c.run = k, run
	c.text = fit.Block(m.paneViews[i].View(it, m.now), r.w, r.h)
	return c.text
}

// center places block in the middle of a w×h area.
func center(block string, w, h int) string {
	lines := strings.Split(block, "\n")
	bw := fit.Width(block)
	top := max(0, (h-len(lines))/2)
	left := max(0, (w-bw)/2)
	out := make([]string, 0, h)
	for range top {
		out = append(out, "")
	}
	for _, l := range lines {
		out = append(out, strings.Repeat(" ", left)+l)
	}
	return fit.Lines(out, w, h)
}
