// Package transcriptview is the focused transcript of one run, live or
// finished: the events as a list, the selected one in full below it. It
// moves through events with the keys every list has (j/k, g/G, half
// pages, pages) and says where it stands, expands a tool result, shows an
// edit's own change, searches (/, round the ends, counting the matches),
// and follows new events until you step away (F returns to following).
package transcriptview

import (
	"encoding/json"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/intent"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// CloseMsg asks the root to leave the transcript.
type CloseMsg struct{}

// FullEntryMsg carries a trimmed entry read whole from the transcript.
type FullEntryMsg struct {
	Slug  string
	Line  int
	Entry live.Entry
	Err   error
}

// Model is the transcript view of one run.
type Model struct {
	intent.Slot // a close, for the root

	styles *theme.Styles
	keys   *keys.Transcript
	slug   string
	path   string      // the transcript, to read trimmed entries whole
	state  *live.State // owned by the root; read only here
	// whole holds trimmed entries read back whole, by line; asked those
	// being read.
	whole map[int]live.Entry
	asked map[int]bool

	cursor   int
	follow   bool
	expanded bool
	detailAt int // first line of the detail shown (scroll)

	search    textinput.Model
	searching bool
	query     string
	// keepTyped: the box was closed with ctrl+c, so the next open shows
	// what was typed rather than the last search.
	keepTyped bool

	width, height int
}

// New returns the transcript view of slug, following.
func New(s *theme.Styles, k *keys.Transcript, slug, path string, state *live.State) Model {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "search the transcript"
	ti.SetStyles(s.Input)
	m := Model{
		styles: s, keys: k, slug: slug, path: path, state: state, follow: true, search: ti,
		whole: map[int]live.Entry{}, asked: map[int]bool{},
	}
	m.Sync()
	return m
}

// Slug is the run shown.
func (m Model) Slug() string { return m.slug }

// SetState points the view at a new state (after a reset).
func (m *Model) SetState(st *live.State) {
	m.state = st
	m.whole = map[int]live.Entry{}
	m.asked = map[int]bool{}
	m.Sync()
}

// WholeCmd reads the selected entry whole when only its preview is in
// memory (off the UI loop); nil when there is nothing to read.
func (m *Model) WholeCmd() tea.Cmd {
	es := m.entries()
	if m.cursor >= len(es) {
		return nil
	}
	e := es[m.cursor]
	if !e.Trimmed || e.Line <= 0 || m.asked[e.Line] || m.path == "" {
		return nil
	}
	m.asked[e.Line] = true
	path, line, slug := m.path, e.Line, m.slug
	return func() tea.Msg {
		full, err := live.ReadEntry(path, line)
		return FullEntryMsg{Slug: slug, Line: line, Entry: full, Err: err}
	}
}

// shown is entry i as the detail shows it: whole when it has been read.
func (m Model) shown(i int) live.Entry {
	e := m.entries()[i]
	if w, ok := m.whole[e.Line]; ok && e.Trimmed {
		return w
	}
	return e
}

// Following reports whether the view sticks to the newest event.
func (m Model) Following() bool { return m.follow }

// Cursor is the selected event's index.
func (m Model) Cursor() int { return m.cursor }

// Expanded reports whether the selected event fills the view.
func (m Model) Expanded() bool { return m.expanded }

// Capturing reports whether the search box has the keys.
func (m Model) Capturing() bool { return m.searching }

// CloseInput closes the search box without searching (ctrl+c); what was
// typed is there when the box opens again.
func (m *Model) CloseInput() {
	if !m.searching {
		return
	}
	m.searching = false
	m.search.Blur()
	m.keepTyped = true
}

// Typed is what the search box holds.
func (m Model) Typed() string { return m.search.Value() }

// SetSize sets the view's size.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.search.SetWidth(max(1, w-2))
}

func (m Model) entries() []live.Entry {
	if m.state == nil {
		return nil
	}
	return m.state.Entries
}

// Sync keeps the cursor valid and on the newest event while following;
// the root calls it when entries arrive.
func (m *Model) Sync() {
	n := len(m.entries())
	if m.follow {
		m.cursor = max(0, n-1)
		m.detailAt = 0
	}
	m.cursor = max(0, min(m.cursor, n-1))
}

// Update handles the view's messages.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	if fm, ok := msg.(FullEntryMsg); ok {
		if fm.Slug == m.slug && fm.Err == nil {
			m.whole[fm.Line] = fm.Entry
		}
		return m, nil
	}
	m2, cmd := m.update(msg)
	return m2, tea.Batch(cmd, m2.WholeCmd())
}

func (m Model) update(msg tea.Msg) (Model, tea.Cmd) {
	if m.searching {
		if k, ok := msg.(tea.KeyPressMsg); ok {
			switch k.String() {
			case "enter":
				m.searching = false
				m.query = strings.TrimSpace(m.search.Value())
				m.search.Blur()
				m.jumpMatch(1, true)
				return m, nil
			case "esc":
				m.searching = false
				m.search.Blur()
				return m, nil
			}
		}
		var cmd tea.Cmd
		m.search, cmd = m.search.Update(msg)
		return m, cmd
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return m, nil
	}
	kb := m.keys
	n := len(m.entries())
	switch {
	case key.Matches(k, kb.Back):
		// Esc steps out of an expanded event first; q always leaves, as
		// it does on every screen off the dashboard.
		if m.expanded && k.String() == "esc" {
			m.expanded = false
			return m, nil
		}
		m.Ask(CloseMsg{})
		return m, nil
	case m.expanded && key.Matches(k, kb.Up, kb.Down, kb.First, kb.Last):
		// Expanded, the event is the text that moves by the line and to
		// its ends; h and l still step between events.
		switch {
		case key.Matches(k, kb.Up):
			m.detailAt--
		case key.Matches(k, kb.Down):
			m.detailAt++
		case key.Matches(k, kb.First):
			m.detailAt = 0
		default:
			m.detailAt = m.detailLen()
		}
		m.clampDetail()
	case key.Matches(k, kb.Prev), key.Matches(k, kb.Up):
		m.step(-1)
	case key.Matches(k, kb.Next), key.Matches(k, kb.Down):
		m.step(1)
	case key.Matches(k, kb.First):
		m.follow = false
		m.cursor = 0
		m.detailAt = 0
	case key.Matches(k, kb.Last):
		m.cursor = max(0, n-1)
		m.detailAt = 0
	case m.expanded && key.Matches(k, kb.HalfDown, kb.PageDown):
		// Expanded, the event fills the view and is what scrolls.
		page := max(1, m.height-1)
		if key.Matches(k, kb.HalfDown) {
			page = max(1, page/2)
		}
		m.detailAt += page
		m.clampDetail()
	case m.expanded && key.Matches(k, kb.HalfUp, kb.PageUp):
		page := max(1, m.height-1)
		if key.Matches(k, kb.HalfUp) {
			page = max(1, page/2)
		}
		m.detailAt -= page
		m.clampDetail()
	case key.Matches(k, kb.HalfDown):
		m.step(max(1, m.listHeight()/2))
	case key.Matches(k, kb.HalfUp):
		m.step(-max(1, m.listHeight()/2))
	case key.Matches(k, kb.PageDown):
		m.step(m.listHeight())
	case key.Matches(k, kb.PageUp):
		m.step(-m.listHeight())
	case key.Matches(k, kb.Follow):
		m.follow = true
		m.expanded = false
		m.Sync()
	case key.Matches(k, kb.Expand):
		m.expanded = !m.expanded
		m.detailAt = 0
	case key.Matches(k, kb.Search):
		m.searching = true
		if !m.keepTyped {
			m.search.SetValue(m.query)
		}
		m.keepTyped = false
		return m, m.search.Focus()
	case key.Matches(k, kb.NextMatch):
		m.jumpMatch(1, false)
	case key.Matches(k, kb.PrevMatch):
		m.jumpMatch(-1, false)
	}
	return m, nil
}

// detailLen is the number of lines of the selected event as the view
// draws it.
func (m Model) detailLen() int {
	es := m.entries()
	if len(es) == 0 {
		return 0
	}
	return len(m.detail(m.shown(m.cursor), m.width))
}

// expandedHeight is how many lines of an expanded event are on screen:
// all but the title and the search box.
func (m Model) expandedHeight() int {
	top := 1
	if m.searching {
		top++
	}
	return max(1, m.height-top)
}

// clampDetail keeps an expanded event's scroll between its top and the
// place where its last line is the screen's last.
func (m *Model) clampDetail() {
	m.detailAt = max(0, min(m.detailAt, m.detailLen()-m.expandedHeight()))
}

func (m *Model) step(d int) {
	n := len(m.entries())
	m.follow = false
	m.cursor = max(0, min(n-1, m.cursor+d))
	m.detailAt = 0
}

// listHeight is how many events the list shows: half the area under
// the title (and the search box), as View draws it; a page of events.
func (m Model) listHeight() int {
	top := 1
	if m.searching {
		top++
	}
	return max(1, min((m.height-top)/2, len(m.entries())))
}

// jumpMatch moves to the next (dir 1) or previous match of the query,
// going round past either end; from includes the current event.
func (m *Model) jumpMatch(dir int, from bool) {
	if m.query == "" {
		return
	}
	es := m.entries()
	n := len(es)
	q := strings.ToLower(m.query)
	start := m.cursor
	if !from {
		start += dir
	}
	for k := range n {
		i := ((start+k*dir)%n + n) % n
		if matches(es[i], q) {
			m.follow = false
			m.cursor = i
			m.detailAt = 0
			return
		}
	}
}

// Matches says where the search stands: the matches of the query and,
// when the selected event is one, which of them it is (1-based; 0 when
// it is not one). No query, no matches.
func (m Model) Matches() (at, total int) {
	if m.query == "" {
		return 0, 0
	}
	q := strings.ToLower(m.query)
	for i, e := range m.entries() {
		if matches(e, q) {
			total++
			if i == m.cursor {
				at = total
			}
		}
	}
	return at, total
}

func matches(e live.Entry, q string) bool {
	if strings.Contains(strings.ToLower(live.Describe(e)), q) || strings.Contains(strings.ToLower(e.Text), q) {
		return true
	}
	if strings.Contains(strings.ToLower(e.Args), q) {
		return true
	}
	for _, c := range e.Calls {
		if strings.Contains(strings.ToLower(c.Args), q) {
			return true
		}
	}
	return false
}

// View draws the transcript.
func (m Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	s, w := m.styles, m.width
	es := m.entries()
	title := s.Title.Render("Transcript") + " " + termsafe.Line(m.slug)
	if m.follow {
		title += s.Muted.Render(" · following")
	}
	if m.query != "" {
		title += s.Muted.Render(" · search: ") + termsafe.Line(m.query) + s.Muted.Render(" · "+m.matchNote())
	}
	// The selected event's lines, drawn once for the title and the body.
	var detail []string
	if len(es) > 0 {
		detail = m.detail(m.shown(m.cursor), w)
	}
	where := fit.Position(m.cursor, len(es))
	if n := len(detail); m.expanded && n > 0 {
		// The event's own position too: the last of its lines on screen.
		where += " " + theme.GlyphSep + " line " + fit.Position(min(n, m.detailAt+m.expandedHeight())-1, n)
	}
	lines := []string{fit.Spread(title, s.Muted.Render(where), w)}
	if m.searching {
		lines = append(lines, fit.Line(m.search.View(), w))
	}
	avail := m.height - len(lines)
	if len(es) == 0 {
		lines = append(lines, s.Muted.Render("no events yet"))
		return fit.Lines(lines, w, m.height)
	}
	listH := avail / 2
	if m.expanded {
		listH = 0
	}
	listH = min(listH, len(es))
	if listH > 0 {
		start := max(0, m.cursor-listH/2)
		start = min(start, max(0, len(es)-listH))
		for i := start; i < start+listH && i < len(es); i++ {
			lines = append(lines, m.listLine(es[i], i == m.cursor))
		}
		lines = append(lines, s.Muted.Render(strings.Repeat("─", w)))
	}
	detailH := m.height - len(lines)
	at := min(m.detailAt, max(0, len(detail)-detailH))
	lines = append(lines, detail[at:]...)
	return fit.Lines(lines, w, m.height)
}

// matchNote is the search's count for the title: "match 3/17" on a
// match, "17 matches" off one, "no match" for none.
func (m Model) matchNote() string {
	at, total := m.Matches()
	switch {
	case total == 0:
		return "no match"
	case at > 0:
		return "match " + fit.Position(at-1, total)
	case total == 1:
		return "1 match"
	}
	return fmt.Sprintf("%d matches", total)
}

func (m Model) listLine(e live.Entry, selected bool) string {
	s, w := m.styles, m.width
	stamp := "        "
	if !e.TS.IsZero() {
		stamp = e.TS.UTC().Format("15:04:05")
	}
	text := termsafe.Line(live.Describe(e))
	if selected {
		return s.Selected.Render(fit.Line(theme.GlyphCursor+" "+stamp+" "+text, w))
	}
	st := s.Text
	switch e.Kind {
	case live.KindGuardrail, live.KindNudge, live.KindSandboxReset:
		st = s.Warn
	case live.KindProblem:
		st = s.Error
	case live.KindModelRequest:
		st = s.Muted
	}
	return fit.Line("  "+s.Muted.Render(stamp)+" "+st.Render(text), w)
}

// detail renders one event in full: all worker text made inert, wrapped.
func (m Model) detail(e live.Entry, w int) []string {
	s := m.styles
	var out []string
	add := func(st func(...string) string, text string) {
		for para := range strings.SplitSeq(fit.Tabs(termsafe.String(text)), "\n") {
			for _, l := range fit.Wrap(para, w) {
				out = append(out, st(fit.Cut(l, w)))
			}
		}
	}
	head := s.Bold.Render(e.Kind.String())
	if e.Line > 0 {
		head += s.Muted.Render(fmt.Sprintf(" · line %d", e.Line))
	}
	if !e.TS.IsZero() {
		head += s.Muted.Render(" · " + e.TS.UTC().Format("2006-01-02 15:04:05.000"))
	}
	out = append(out, head)
	switch e.Kind {
	case live.KindAssistant:
		if strings.TrimSpace(e.Text) != "" {
			add(s.Text.Render, e.Text)
		}
		for _, c := range e.Calls {
			out = append(out, "", s.Key.Render("→ "+termsafe.Line(c.Name)))
			out = append(out, m.callArgs(c.Name, c.Args, w)...)
		}
		if e.Usage.PromptTokens+e.Usage.CompletionTokens > 0 {
			out = append(out, "", s.Muted.Render(fmt.Sprintf("tokens: %d prompt, %d completion", e.Usage.PromptTokens, e.Usage.CompletionTokens)))
		}
	case live.KindToolResult:
		out = append(out, s.Key.Render(termsafe.Line(e.Tool))+" "+s.Muted.Render("["+live.Outcome(e)+"]"))
		out = append(out, m.callArgs(e.Tool, m.fullArgs(e), w)...)
		out = append(out, "", s.Muted.Render("result:"))
		result := e.Text
		if !m.expanded {
			result = firstLines(result, 6)
		}
		add(s.Text.Render, result)
		if !m.expanded && strings.Count(e.Text, "\n") >= 6 {
			out = append(out, s.Muted.Render(fmt.Sprintf("… %s to see all of it", m.keys.Expand.Help().Key)))
		}
	case live.KindGuardrail:
		add(s.Warn.Render, e.Text)
		out = append(out, s.Muted.Render("command:"))
		add(s.Text.Render, e.Args)
	case live.KindSetup:
		out = append(out, s.Muted.Render("command: ")+termsafe.Line(e.Args))
		add(s.Text.Render, e.Text)
	default:
		add(s.Text.Render, live.Describe(e))
		if e.Text != "" && e.Kind == live.KindRunEnd {
			out = append(out, "")
			add(s.Text.Render, e.Text)
		}
	}
	return out
}

// fullArgs prefers the arguments of the assistant call that asked for
// this tool result: the result keeps only 500 chars, the call 2000.
func (m Model) fullArgs(e live.Entry) string {
	es := m.entries()
	head := strings.TrimSuffix(e.Args, "…")
	head = head[:min(len(head), 40)]
	for i := m.cursor - 1; i >= 0 && i >= m.cursor-20; i-- {
		if es[i].Kind != live.KindAssistant {
			continue
		}
		for _, c := range es[i].Calls {
			if c.Name == e.Tool && strings.HasPrefix(c.Args, head) {
				return c.Args
			}
		}
		break
	}
	return e.Args
}

// callArgs shows a call's arguments; an edit is shown as its own change.
func (m Model) callArgs(tool, args string, w int) []string {
	s := m.styles
	var a map[string]any
	if json.Unmarshal([]byte(args), &a) != nil {
		return wrapLines(s.Muted.Render, termsafe.String(args), w)
	}
	str := func(k string) (string, bool) { v, ok := a[k].(string); return v, ok }
	var out []string
	if p, ok := str("path"); ok {
		out = append(out, s.Muted.Render("path: ")+termsafe.Line(p))
	}
	oldS, hasOld := str("old_string")
	newS, hasNew := str("new_string")
	switch {
	case hasOld || hasNew:
		out = append(out, s.Muted.Render("the change:"))
		out = append(out, changeLines(s, oldS, "-", s.DiffDel.Render, w)...)
		out = append(out, changeLines(s, newS, "+", s.DiffAdd.Render, w)...)
	case tool == "insert_after":
		anchor, _ := str("anchor")
		text, _ := str("text")
		out = append(out, s.Muted.Render("after:"))
		out = append(out, changeLines(s, anchor, " ", s.Muted.Render, w)...)
		out = append(out, changeLines(s, text, "+", s.DiffAdd.Render, w)...)
	case tool == "write_file":
		content, _ := str("content")
		out = append(out, s.Muted.Render("content:"))
		out = append(out, changeLines(s, content, "+", s.DiffAdd.Render, w)...)
	default:
		for k, v := range a {
			if k == "path" {
				continue
			}
			text, ok := v.(string)
			if !ok {
				b, _ := json.Marshal(v)
				text = string(b)
			}
			out = append(out, wrapLines(func(x ...string) string { return strings.Join(x, "") },
				s.Muted.Render(termsafe.Line(k)+": ")+termsafe.String(text), w)...)
		}
	}
	return out
}

func changeLines(s *theme.Styles, text, mark string, st func(...string) string, w int) []string {
	var out []string
	for l := range strings.SplitSeq(fit.Tabs(termsafe.String(text)), "\n") {
		out = append(out, st(fit.Cut(mark+" "+l, w)))
	}
	return out
}

func wrapLines(st func(...string) string, text string, w int) []string {
	var out []string
	for para := range strings.SplitSeq(fit.Tabs(text), "\n") {
		for _, l := range fit.Wrap(para, w) {
			out = append(out, st(fit.Cut(l, w)))
		}
	}
	return out
}

func firstLines(s string, n int) string {
	parts := strings.SplitN(s, "\n", n+1)
	if len(parts) > n {
		parts = parts[:n]
	}
	return strings.Join(parts, "\n")
}

// ShortHelp is the view's part of the help bar.
func (m Model) ShortHelp() []key.Binding {
	if m.searching {
		return []key.Binding{
			key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "search")),
			key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
		}
	}
	k := m.keys
	return []key.Binding{k.Prev, k.Next, k.Expand, k.Search, k.NextMatch, k.Follow, k.Back}
}

// FullHelp is the view's part of the full help.
func (m Model) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{
		{k.Up, k.Down, k.Prev, k.Next, k.First, k.Last},
		{k.HalfDown, k.HalfUp, k.PageDown, k.PageUp, k.Expand},
		{k.Search, k.NextMatch, k.PrevMatch, k.Follow, k.Back},
	}
}
