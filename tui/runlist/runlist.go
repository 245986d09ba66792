// Package runlist is the runs list of the dashboard: every run under the
// runs root and every queued launch, grouped (needs review, running,
// queued, dead, finished) and newest first within a group, with a filter
// (`/`) over repo, model, status and text. It draws only the rows that fit,
// so ten thousand runs cost what twenty do.
//
// The filter's free words rank the rows they keep, best match on top (see
// filter.go); the ranked list drops the group headings, whose groups would
// interleave. The cursor follows the top row (the newest run, or the best
// match) until the user moves it; from then on it stays on the run the user
// chose, wherever rows arriving put it.
package runlist

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/runinfo"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// groupOrder is the order of the groups on screen.
var groupOrder = []backend.Phase{
	backend.PhaseReview, backend.PhaseRunning, backend.PhaseQueued, backend.PhaseDead, backend.PhaseFinished,
}

// Model is the runs list.
type Model struct {
	styles *theme.Styles
	keys   *keys.Runs

	items   []runinfo.Item        // sorted: group, then newest first
	visible []int                 // indices into items that pass the filter, in the order shown
	ranked  bool                  // visible is in the filter's rank order: no group headings
	cursor  int                   // index into visible
	groups  map[backend.Phase]int // visible rows per group
	offset  int                   // first visible row drawn (rows, not lines)
	// chosen says the user put the cursor on its run; until then it
	// follows the top row, however the rows arrive (the store lists a
	// large root in batches, in no useful order).
	chosen bool

	// scores is refilter's scratch space (kept to save an allocation
	// per rebuild of a long list).
	scores []int

	filter    textinput.Model
	filtering bool

	width, height int
	focused       bool
	zoomed        bool // the list has the whole body: it names its columns
	launchKey     string
}

// New returns an empty list.
func New(s *theme.Styles, k *keys.Runs) Model {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "repo:, model:, status: or any text"
	ti.CharLimit = 200
	ti.SetStyles(s.Input)
	return Model{styles: s, keys: k, filter: ti}
}

// SetSize sets the list's outer size.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.filter.SetWidth(max(1, w-2))
	m.clampOffset()
}

// SetFocused says whether keys go to the list.
func (m *Model) SetFocused(f bool) { m.focused = f }

// Filtering reports whether the filter box has the keys.
func (m Model) Filtering() bool { return m.filtering }

// SetZoomed says whether the list has the whole body (then it draws a
// header row naming its columns).
func (m *Model) SetZoomed(z bool) {
	m.zoomed = z
	m.clampOffset()
}

// SetItems replaces the rows with items, which it sorts in place and
// keeps. The cursor stays on the run the user chose; until the user
// chooses one it stays on the top row.
func (m *Model) SetItems(items []runinfo.Item) {
	sel, hadSel := m.Selected()
	sortItems(items)
	m.items = items
	m.refilter()
	if m.chosen && hadSel {
		m.selectKey(sel.Key)
		return
	}
	m.top()
}

// Len is the number of rows after filtering.
func (m Model) Len() int { return len(m.visible) }

// Items are all rows, sorted.
func (m Model) Items() []runinfo.Item { return m.items }

// Selected is the row under the cursor.
func (m Model) Selected() (runinfo.Item, bool) {
	if m.cursor < 0 || m.cursor >= len(m.visible) {
		return runinfo.Item{}, false
	}
	return m.items[m.visible[m.cursor]], true
}

// SelectKey moves the cursor to the row with key, which it then keeps as
// rows come and go; false if it is not shown.
func (m *Model) SelectKey(k string) bool {
	ok := m.selectKey(k)
	if ok {
		m.chosen = true
	}
	return ok
}

// top puts the cursor on the top row, which it follows until the user
// moves it.
func (m *Model) top() {
	m.cursor = 0
	m.chosen = false
	m.clampOffset()
}

func (m *Model) selectKey(k string) bool {
	for i, idx := range m.visible {
		if m.items[idx].Key == k {
			m.cursor = i
			m.clampOffset()
			return true
		}
	}
	m.cursor = min(m.cursor, max(0, len(m.visible)-1))
	m.clampOffset()
	return false
}

// sortItems orders rows by group, then newest first, in place. It sorts
// small keys, then moves each row once: ten thousand rows of about a
// kilobyte each (a run's whole record) are slow to move around, and
// slower still to copy into a new slice.
func sortItems(items []runinfo.Item) {
	rank := map[backend.Phase]int{}
	for i, p := range groupOrder {
		rank[p] = i
	}
	type sortKey struct {
		rank    int
		started int64
		queue   int
		key     string
		idx     int
	}
	keys := make([]sortKey, len(items))
	for i := range items {
		it := &items[i]
		k := sortKey{rank: rank[it.Phase()], started: it.Run.StartedAt().UnixNano(), key: it.Key, idx: i}
		if it.Queued != nil {
			k.queue = it.Queued.ID
		}
		keys[i] = k
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		if c := cmp.Compare(b.started, a.started); c != 0 {
			return c
		}
		if c := cmp.Compare(a.queue, b.queue); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	// Row keys[i].idx goes to i: follow each cycle of that permutation,
	// holding its first row aside.
	for start := range keys {
		if keys[start].idx < 0 || keys[start].idx == start {
			continue
		}
		held := items[start]
		i := start
		for keys[i].idx != start {
			from := keys[i].idx
			items[i] = items[from]
			keys[i].idx = -1
			i = from
		}
		items[i] = held
		keys[i].idx = -1
	}
}

// refilter recomputes the visible rows: with free words in the filter,
// best match first, ties in the list's order.
func (m *Model) refilter() {
	m.visible = m.visible[:0]
	m.ranked = false
	if v := m.filter.Value(); strings.TrimSpace(v) == "" {
		for i := range m.items {
			m.visible = append(m.visible, i)
		}
	} else {
		q := parseQuery(v)
		m.scores = m.scores[:0]
		for i, it := range m.items {
			if sc, ok := q.score(it); ok {
				m.visible = append(m.visible, i)
				m.scores = append(m.scores, sc)
			}
		}
		if q.ranks() {
			m.ranked = true
			rankRows(m.visible, m.scores)
		}
	}
	m.groups = map[backend.Phase]int{}
	for _, i := range m.visible {
		m.groups[m.items[i].Phase()]++
	}
	m.cursor = min(m.cursor, max(0, len(m.visible)-1))
	m.clampOffset()
}

// Update handles the list's keys.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	if m.filtering {
		if k, ok := msg.(tea.KeyPressMsg); ok {
			switch k.String() {
			case "enter":
				m.filtering = false
				m.filter.Blur()
				return m, nil
			case "esc":
				m.filtering = false
				m.filter.Blur()
				if m.filter.Value() != "" {
					m.clearFilter()
				}
				return m, nil
			}
		}
		var cmd tea.Cmd
		before := m.filter.Value()
		m.filter, cmd = m.filter.Update(msg)
		if m.filter.Value() != before {
			// A new query: the cursor goes to the best match.
			m.refilter()
			m.top()
		}
		return m, cmd
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return m, nil
	}
	switch {
	case key.Matches(k, m.keys.Up):
		m.move(-1)
	case key.Matches(k, m.keys.Down):
		m.move(1)
	case key.Matches(k, m.keys.Top):
		m.cursor = 0
		m.chosen = true
		m.clampOffset()
	case key.Matches(k, m.keys.Bottom):
		m.cursor = max(0, len(m.visible)-1)
		m.chosen = true
		m.clampOffset()
	case key.Matches(k, m.keys.HalfDown):
		m.move(max(1, m.rowsHeight()/2))
	case key.Matches(k, m.keys.HalfUp):
		m.move(-max(1, m.rowsHeight()/2))
	case key.Matches(k, m.keys.PageDown):
		m.move(max(1, m.rowsHeight()-1))
	case key.Matches(k, m.keys.PageUp):
		m.move(-max(1, m.rowsHeight()-1))
	case key.Matches(k, m.keys.Filter):
		m.filtering = true
		return m, m.filter.Focus()
	}
	return m, nil
}

// ClearFilter drops the filter (esc on the dashboard).
func (m *Model) ClearFilter() bool {
	if m.filter.Value() == "" {
		return false
	}
	m.clearFilter()
	return true
}

// clearFilter drops the filter, keeping the cursor on the run it was on:
// the filter was how the user found it. With none, the cursor goes back
// to the top.
func (m *Model) clearFilter() {
	sel, ok := m.Selected()
	m.filter.SetValue("")
	m.refilter()
	if ok && m.SelectKey(sel.Key) {
		return
	}
	m.top()
}

// FilterText is the filter's text.
func (m Model) FilterText() string { return m.filter.Value() }

func (m *Model) move(d int) {
	m.cursor = max(0, min(len(m.visible)-1, m.cursor+d))
	m.chosen = true
	m.clampOffset()
}

// rowsHeight is the number of lines for rows (and group headings).
func (m Model) rowsHeight() int {
	h := m.height - 1 // the title line
	if m.filtering || m.filter.Value() != "" {
		h--
	}
	if m.zoomed {
		h-- // the column names
	}
	return max(0, h)
}

// clampOffset keeps the cursor row on screen.
func (m *Model) clampOffset() {
	h := m.rowsHeight()
	if h <= 0 || len(m.visible) == 0 {
		m.offset = 0
		return
	}
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	// Walk back from the cursor to the first row that still fits with it
	// (headings take lines too): never more than a screen of rows, however
	// long the list.
	lowest := m.cursor
	lines := 1 // the cursor row
	if !m.ranked {
		lines++ // and its heading, at worst
	}
	for lowest > m.offset {
		add := 1
		if !m.ranked && m.phaseAt(lowest) != m.phaseAt(lowest-1) {
			add++ // lowest starts a group: its heading
		}
		if lines+add > h {
			break
		}
		lines += add
		lowest--
	}
	if m.offset < lowest {
		m.offset = lowest
	}
	m.offset = max(0, min(m.offset, len(m.visible)-1))
}

func (m Model) phaseAt(i int) backend.Phase { return m.items[m.visible[i]].Phase() }

// View draws the list at its size.
func (m Model) View(now time.Time) string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	s := m.styles
	lines := make([]string, 0, m.height)
	title := fmt.Sprintf("Runs %d", len(m.items))
	if len(m.visible) != len(m.items) {
		title = fmt.Sprintf("Runs %d of %d", len(m.visible), len(m.items))
	}
	// Where the cursor stands, as every view that scrolls says it.
	pos := ""
	if len(m.visible) > 0 {
		pos = s.Muted.Render(fit.Position(m.cursor, len(m.visible)))
	}
	lines = append(lines, fit.Spread(s.Title.Render(title), pos, m.width))
	if m.filtering || m.filter.Value() != "" {
		lines = append(lines, fit.Line(m.filter.View(), m.width))
	}
	if m.zoomed {
		lines = append(lines, m.columnNames())
	}
	h := m.rowsHeight()
	if len(m.visible) == 0 {
		msg := "no runs yet — press " + m.launchHint() + " to launch one"
		if m.filter.Value() != "" {
			msg = "no run matches the filter"
		}
		lines = append(lines, fit.Line(s.Muted.Render(msg), m.width))
	}
	for i := m.offset; i < len(m.visible) && len(lines)-(m.height-h) < h; i++ {
		it := m.items[m.visible[i]]
		if !m.ranked && (i == m.offset || it.Phase() != m.items[m.visible[i-1]].Phase()) {
			lines = append(lines, fit.Line(s.Group.Render(m.heading(it.Phase())), m.width))
			if len(lines)-(m.height-h) >= h {
				break
			}
		}
		lines = append(lines, m.row(it, i == m.cursor, now))
	}
	return fit.Lines(lines, m.width, m.height)
}

// launchHint names the launch key (the list does not own it).
func (m Model) launchHint() string {
	if m.launchKey == "" {
		return "the launch key"
	}
	return m.launchKey
}

// SetLaunchKey names the launch key for the empty list's hint.
func (m *Model) SetLaunchKey(k string) { m.launchKey = k }

// heading is a group's heading with its size.
func (m Model) heading(p backend.Phase) string {
	return fmt.Sprintf("%s (%d)", p, m.groups[p])
}

// row draws one run on one line, dropping columns that do not fit.
func (m Model) row(it runinfo.Item, selected bool, now time.Time) string {
	s := m.styles
	w := m.width
	cursor := "  "
	if selected {
		cursor = theme.GlyphCursor + " "
	}
	status := fit.Line(it.StatusText(), 11)
	fixed := []string{it.Elapsed(now)}
	wide := w >= 70
	if wide {
		fixed = []string{it.Turns(), it.Tokens(), it.Elapsed(now), it.Fill()}
	}
	right := strings.Join(padAll(fixed, []int{7, 6, 7, 4}[:len(fixed)]), " ")
	if !wide {
		right = fit.Line(fixed[0], 7)
	}
	left := cursor + it.Glyph(s) + " " + it.StatusStyle(s).Render(status) + " "
	restW := w - fit.Width(left) - fit.Width(right) - 1
	var middle string
	if restW > 0 {
		var act string
		if w >= 150 {
			act = fit.Line(it.Sandbox(), 6) + " " + it.Activity(now)
		}
		middle = fit.Line(middleColumns(w, restW, it.Repo(), it.Task(), it.Model(), act), restW)
	}
	line := fit.Line(left+middle+" "+s.Muted.Render(right), w)
	if selected {
		st := s.SelectedDim
		if m.focused {
			st = s.Selected
		}
		// Re-render the plain text in the selection style, so the whole
		// row reads as one band.
		return st.Render(fit.Line(cursor+glyphPlain(it, s)+" "+status+" "+middle+" "+right, w))
	}
	return line
}

// middleColumns lays out the columns between the status and the figures
// in restW cells of a list w wide: the repo, the task, the model and (when
// wide) the sandbox and what the run is doing, as many as fit.
func middleColumns(w, restW int, repo, task, model, act string) string {
	switch {
	case w >= 150:
		actW := max(20, restW/3)
		return fit.Line(repo, 12) + " " + fit.Line(task, max(8, restW-12-1-18-1-actW-1)) + " " + fit.Line(model, 18) + " " + fit.Line(act, actW)
	case w >= 100:
		return fit.Line(repo, 12) + " " + fit.Line(task, max(8, restW-12-1-18-1)) + " " + fit.Line(model, 18)
	case repo != "" && restW > 30:
		return fit.Line(repo, 10) + " " + task
	}
	return task
}

// columnNames is the zoomed list's header row: the name of each column
// the rows show at this width, over it. The names of the figures on the
// right are muted, as the figures are.
func (m Model) columnNames() string {
	s := m.styles
	w := m.width
	right := fit.Line("elapsed", 7)
	if w >= 70 {
		right = strings.Join(padAll([]string{"turns", "tokens", "elapsed", "ctx"}, []int{7, 6, 7, 4}), " ")
	}
	left := "    " + fit.Line("status", 11) + " " // under the cursor and the glyph: nothing
	restW := w - fit.Width(left) - fit.Width(right) - 1
	var middle string
	if restW > 0 {
		middle = fit.Line(middleColumns(w, restW, "repo", "task", "model", fit.Line("where", 6)+" activity"), restW)
	}
	return fit.Line(s.Bold.Render(left+middle)+" "+s.Muted.Render(right), w)
}

// rankRows orders rows by score, best first; rows that score the same
// keep their order (the list's: group, then newest first).
func rankRows(rows, scores []int) {
	type ranked struct{ row, score int }
	rs := make([]ranked, len(rows))
	for i := range rows {
		rs[i] = ranked{rows[i], scores[i]}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return cmp.Compare(b.score, a.score) })
	for i, r := range rs {
		rows[i] = r.row
	}
}

// glyphPlain is the glyph without its colour (for the selected row).
func glyphPlain(it runinfo.Item, s *theme.Styles) string {
	g := it.Glyph(s)
	return stripStyle(g)
}

func padAll(vals []string, widths []int) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = fit.Line(v, widths[i])
	}
	return out
}

// ShortHelp is the list's part of the help bar.
func (m Model) ShortHelp() []key.Binding {
	if m.filtering {
		return []key.Binding{
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		}
	}
	return []key.Binding{m.keys.Open, m.keys.Transcript, m.keys.Filter, m.keys.Stop}
}

// FullHelp is the list's part of the full help.
func (m Model) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{
		{k.Up, k.Down, k.Top, k.Bottom, k.HalfDown, k.HalfUp, k.PageDown, k.PageUp},
		{k.Open, k.Transcript, k.Filter, k.Stop, k.Editor, k.Dismiss},
	}
}
