// Package stats aggregates review statistics over runs, per model, per
// repository and overall: runs, completion rate, accept / reject / cleanup
// counts, accept rate, median review seconds, median turns and tokens.
// Aggregate is pure; Model draws it.
package stats

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/intent"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// Row is the statistics of one group of runs.
type Row struct {
	Name      string
	Runs      int // every run, running ones included
	Finished  int // runs that ended
	Completed int
	Accept    int
	Reject    int
	Cleanup   int
	// MedianReview, MedianTurns and MedianTokens are -1 when no run had
	// the number.
	MedianReview float64
	MedianTurns  float64
	MedianTokens float64
}

// CompletionRate is completed over finished runs (-1 with none).
func (r Row) CompletionRate() float64 { return ratio(r.Completed, r.Finished) }

// Verdicts counts the recorded verdicts.
func (r Row) Verdicts() int { return r.Accept + r.Reject + r.Cleanup }

// AcceptRate is accepts over verdicts (-1 with none).
func (r Row) AcceptRate() float64 { return ratio(r.Accept, r.Verdicts()) }

func ratio(a, b int) float64 {
	if b == 0 {
		return -1
	}
	return float64(a) / float64(b)
}

// Grouping says how rows are grouped.
type Grouping int

// Groupings.
const (
	ByModel Grouping = iota
	ByRepo
)

// Aggregate computes the overall row and one row per group, the groups
// sorted by run count (most first), then name. Runs whose run.json could
// not be read are left out: nothing of them is known (see Unreadable).
func Aggregate(runs []backend.Run, g Grouping) (overall Row, rows []Row) {
	groups := map[string][]backend.Run{}
	readable := make([]backend.Run, 0, len(runs))
	for _, r := range runs {
		if r.Problem != "" {
			continue
		}
		readable = append(readable, r)
		name := r.Model
		if g == ByRepo {
			name = filepath.Base(r.Repo)
			if r.Repo == "" {
				name = ""
			}
		}
		if name == "" {
			name = "(unknown)"
		}
		groups[name] = append(groups[name], r)
	}
	overall = aggregate("overall", readable)
	for name, rs := range groups {
		rows = append(rows, aggregate(name, rs))
	}
	slices.SortFunc(rows, func(a, b Row) int {
		if c := cmp.Compare(b.Runs, a.Runs); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return overall, rows
}

func aggregate(name string, runs []backend.Run) Row {
	r := Row{Name: name}
	var review, turns, tokens []float64
	for _, run := range runs {
		r.Runs++
		if run.Status != transcript.StatusRunning && run.Status != "" {
			r.Finished++
			if n := run.TurnCount(); n >= 0 {
				turns = append(turns, float64(n))
			}
			tokens = append(tokens, float64(run.TokenCount()))
		}
		if run.Status == transcript.StatusCompleted {
			r.Completed++
		}
		switch run.Verdict {
		case transcript.VerdictAccept:
			r.Accept++
		case transcript.VerdictReject:
			r.Reject++
		case transcript.VerdictCleanup:
			r.Cleanup++
		}
		if run.Verdict != "" && run.ReviewSeconds != nil {
			review = append(review, *run.ReviewSeconds)
		}
	}
	r.MedianReview = median(review)
	r.MedianTurns = median(turns)
	r.MedianTokens = median(tokens)
	return r
}

// Unreadable are the runs whose run.json could not be read, which
// Aggregate leaves out, in the order given.
func Unreadable(runs []backend.Run) []backend.Run {
	var out []backend.Run
	for _, r := range runs {
		if r.Problem != "" {
			out = append(out, r)
		}
	}
	return out
}

// median of xs, -1 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// CloseMsg asks the root to leave the stats.
type CloseMsg struct{}

// Model is the statistics view.
type Model struct {
	intent.Slot // a close, for the root

	styles   *theme.Styles
	keys     *keys.Stats
	grouping Grouping
	runs     []backend.Run
	width    int
	height   int
	// cursor is the selected group row; top the first one shown, kept
	// so the table does not jump while the cursor stays in sight.
	cursor, top int
}

// New returns the view over runs.
func New(s *theme.Styles, k *keys.Stats, runs []backend.Run) Model {
	return Model{styles: s, keys: k, runs: runs}
}

// SetRuns replaces the runs counted.
func (m *Model) SetRuns(runs []backend.Run) {
	m.runs = runs
	m.clamp()
}

// SetSize sets the view's size.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.clamp()
}

// Cursor is the selected group row's index.
func (m Model) Cursor() int { return m.cursor }

// rowCount is how many group rows the table has.
func (m Model) rowCount() int {
	_, rows := Aggregate(m.runs, m.grouping)
	return len(rows)
}

// head is how many lines stand above the group rows: the title, the
// unreadable runs' line, a blank, the column titles and the overall row.
func (m Model) head() int {
	if len(Unreadable(m.runs)) > 0 {
		return 5
	}
	return 4
}

// visible is how many group rows fit under the head.
func (m Model) visible() int { return max(1, m.height-m.head()) }

// move puts the cursor d rows on, within the rows.
func (m *Model) move(d int) {
	m.cursor += d
	m.clamp()
}

// clamp keeps the cursor on a row and in sight.
func (m *Model) clamp() {
	n, vis := m.rowCount(), m.visible()
	m.cursor = max(0, min(m.cursor, n-1))
	m.top = max(0, min(m.top, n-vis))
	if m.cursor < m.top {
		m.top = m.cursor
	}
	if m.cursor >= m.top+vis {
		m.top = m.cursor - vis + 1
	}
}

// Grouping is the current grouping.
func (m Model) Grouping() Grouping { return m.grouping }

// Update handles the view's keys.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return m, nil
	}
	kb := m.keys
	half := max(1, m.visible()/2)
	switch {
	case key.Matches(k, kb.Up):
		m.move(-1)
	case key.Matches(k, kb.Down):
		m.move(1)
	case key.Matches(k, kb.Top):
		m.move(-m.cursor)
	case key.Matches(k, kb.Bottom):
		m.move(m.rowCount())
	case key.Matches(k, kb.HalfDown):
		m.move(half)
	case key.Matches(k, kb.HalfUp):
		m.move(-half)
	case key.Matches(k, kb.PageDown):
		m.move(m.visible())
	case key.Matches(k, kb.PageUp):
		m.move(-m.visible())
	case key.Matches(k, kb.Group):
		m.grouping = (m.grouping + 1) % 2
		m.cursor, m.top = 0, 0
		m.clamp()
	case key.Matches(k, kb.Back):
		m.Ask(CloseMsg{})
		return m, nil
	}
	return m, nil
}

var columns = []struct {
	title string
	width int
}{
	{"runs", 6},
	{"done%", 6},
	{"accept", 7},
	{"reject", 7},
	{"cleanup", 8},
	{"acc%", 5},
	{"review s", 9},
	{"turns", 6},
	{"tokens", 8},
}

func pct(x float64) string {
	if x < 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", int(x*100+0.5))
}

func num(x float64) string {
	switch {
	case x < 0:
		return "-"
	case x >= 10000:
		return fmt.Sprintf("%.1fk", x/1000)
	case x == float64(int(x)):
		return fmt.Sprintf("%d", int(x))
	}
	return fmt.Sprintf("%.1f", x)
}

func cells(r Row) []string {
	return []string{
		fmt.Sprintf("%d", r.Runs), pct(r.CompletionRate()), fmt.Sprintf("%d", r.Accept),
		fmt.Sprintf("%d", r.Reject), fmt.Sprintf("%d", r.Cleanup), pct(r.AcceptRate()),
		num(r.MedianReview), num(r.MedianTurns), num(r.MedianTokens),
	}
}

// View draws the table; columns that do not fit are left out from the
// right.
func (m Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	s, w := m.styles, m.width
	overall, rows := Aggregate(m.runs, m.grouping)
	by := "model"
	if m.grouping == ByRepo {
		by = "repository"
	}
	lines := []string{
		fit.Spread(s.Title.Render("Review statistics")+s.Muted.Render(" · by "+by+" · medians over finished runs"),
			s.Muted.Render(fit.Position(m.cursor, len(rows))), w),
	}
	// Named first, where no number of rows can push them out of sight.
	if bad := Unreadable(m.runs); len(bad) > 0 {
		slugs := make([]string, len(bad))
		for i, r := range bad {
			slugs[i] = termsafe.Line(r.Slug)
		}
		lines = append(lines, fit.Line(s.Warn.Render(fmt.Sprintf("%d not counted, run.json unreadable: %s", len(bad), strings.Join(slugs, ", "))), w))
	}
	lines = append(lines, "")
	nameW := max(10, min(40, w/3))
	fitCols := 0
	used := nameW
	for _, c := range columns {
		if used+c.width+1 > w {
			break
		}
		used += c.width + 1
		fitCols++
	}
	row := func(name string, vals []string, st func(...string) string) string {
		var b strings.Builder
		b.WriteString(fit.Line(name, nameW))
		for i := 0; i < fitCols; i++ {
			b.WriteString(" ")
			v := vals[i]
			b.WriteString(strings.Repeat(" ", max(0, columns[i].width-fit.Width(v))) + fit.Cut(v, columns[i].width))
		}
		return fit.Line(st(b.String()), w)
	}
	titles := make([]string, len(columns))
	for i, c := range columns {
		titles[i] = c.title
	}
	lines = append(lines, row(by, titles, s.Bold.Render))
	lines = append(lines, row("overall", cells(overall), s.Title.Render))
	// The group rows scroll under the head; the cursor's is marked.
	for i := m.top; i < len(rows) && len(lines) < m.height; i++ {
		st := s.Text.Render
		if i == m.cursor {
			st = s.Selected.Render
		}
		lines = append(lines, row(termsafe.Line(rows[i].Name), cells(rows[i]), st))
	}
	if len(m.runs) == 0 {
		lines = append(lines, "", s.Muted.Render("no runs yet"))
	}
	return fit.Lines(lines, w, m.height)
}

// ShortHelp is the view's part of the help bar.
func (m Model) ShortHelp() []key.Binding { return []key.Binding{m.keys.Group, m.keys.Back} }

// FullHelp is the view's part of the full help.
func (m Model) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{
		{k.Up, k.Down, k.Top, k.Bottom},
		{k.HalfDown, k.HalfUp, k.PageDown, k.PageUp},
		{k.Group, k.Back},
	}
}
