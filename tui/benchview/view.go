package benchview

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// barWidth is the width of a pass-rate bar.
const barWidth = 10

// maxMarks is the most repeats a cell shows one mark each; beyond, it
// shows counts.
const maxMarks = 12

// maxFlightLines is the most cases in flight listed one a line.
const maxFlightLines = 4

// View draws the view at the time now (elapsed times count to it).
func (m Model) View(now time.Time) string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	if m.open != nil {
		return m.renderCase()
	}
	s, w := m.styles, m.width
	if !m.loaded {
		return fit.Lines([]string{m.titleLine(), s.Muted.Render("reading the results file…")}, w, m.height)
	}
	lines := m.topLines(now)
	if len(m.rows) == 0 {
		if m.err == "" {
			lines = append(lines, s.Muted.Render("no case scored yet"))
		}
		return fit.Lines(m.withNote(lines), w, m.height)
	}
	bottom := m.bottomLines(now)
	lines = append(lines, m.grid(m.gridRowsFor(len(lines), len(bottom)))...)
	lines = append(lines, bottom...)
	return fit.Lines(m.withNote(lines), w, m.height)
}

// topLines are what stands above the tasks × models table: the title,
// the sweep's progress, the model table.
func (m Model) topLines(now time.Time) []string {
	s := m.styles
	lines := []string{m.titleLine()}
	if m.err != "" {
		lines = append(lines, s.Error.Render(theme.GlyphWarn+" ")+s.Warn.Render(termsafe.Line(m.err)))
		if len(m.rows) == 0 {
			return lines
		}
	}
	lines = append(lines, m.progressLines(now)...)
	if len(m.problems) > 0 {
		lines = append(lines, s.Warn.Render(theme.GlyphWarn+" "+problemText(m.problems)))
	}
	if len(m.rows) == 0 {
		return append(lines, "")
	}
	lines = append(lines, "")
	lines = append(lines, m.modelTable()...)
	return append(lines, "")
}

// bottomLines are what stands below it: the case under the cursor, and
// failure classes × models.
func (m Model) bottomLines(now time.Time) []string {
	return append([]string{m.detailLine(now), ""}, m.failureTable()...)
}

// gridRowsFor is how many tasks the grid shows between top and bottom
// lines: what they leave, at least two.
func (m Model) gridRowsFor(top, bottom int) int {
	rest := m.height - top - bottom - 1
	if m.note != "" {
		rest--
	}
	return max(2, rest)
}

// withNote puts the note on the last line.
func (m Model) withNote(lines []string) []string {
	if m.note == "" {
		return lines
	}
	lines = lines[:min(len(lines), m.height-1)]
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	return append(lines, m.styles.Warn.Render(m.note))
}

func (m Model) titleLine() string {
	s := m.styles
	name := "newest results file"
	if m.path != "" {
		name = termsafe.Line(filepath.Base(m.path))
	}
	meta := ""
	if m.loaded && len(m.rows) > 0 {
		models := map[string]bool{}
		for i := range m.rows {
			models[m.rows[i].Model] = true
		}
		meta = " · " + plural(len(m.rows), "row") + " · " + plural(len(models), "model")
		if len(models) != len(m.t.groups) {
			meta += " in " + plural(len(m.t.groups), "setup")
		}
		meta += " × " + plural(len(m.t.tasks), "task")
	}
	return fit.Line(s.Title.Render("Bench")+" "+name+s.Muted.Render(meta), m.width)
}

// plural is "1 row", "2 rows".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func problemText(ps []bench.LineError) string {
	nums := make([]string, 0, 3)
	for i, p := range ps {
		if i == 3 {
			nums = append(nums, "…")
			break
		}
		nums = append(nums, strconv.Itoa(p.Line))
	}
	word := "line"
	if len(ps) > 1 {
		word = "lines"
	}
	return fmt.Sprintf("%d %s not read as rows (%s %s): left out", len(ps), word, word, strings.Join(nums, ", "))
}

// progressLines say how far the sweep is, and list its cases in flight.
func (m Model) progressLines(now time.Time) []string {
	s, st := m.styles, m.state
	sep := s.Muted.Render(" " + theme.GlyphSep + " ")
	if st == nil {
		return []string{s.Muted.Render(fmt.Sprintf("%d cases scored, %d passed", m.t.scored, m.t.passed))}
	}
	counts := fmt.Sprintf("%d of %d cases scored", m.t.scored, st.Total) + sep + fmt.Sprintf("%d passed", m.t.passed)
	resume := s.Muted.Render("  dirtywork bench --resume " + termsafe.Line(m.path) + " scores the rest")
	switch {
	case m.alive:
		parts := []string{
			s.Info.Render(theme.GlyphRunning+" sweep running") + sep + counts,
			"elapsed " + elapsed(now.Sub(st.Started)),
		}
		if done := m.t.scored - st.Skipped; done > 0 && st.Total > m.t.scored {
			per := now.Sub(st.Started) / time.Duration(done)
			parts = append(parts, "eta "+elapsed(per*time.Duration(st.Total-m.t.scored)))
		}
		lines := []string{strings.Join(parts, sep)}
		return append(lines, m.flightLines(now)...)
	case st.Ended != nil && m.t.scored >= st.Total:
		return []string{s.OK.Render(theme.GlyphOK+" sweep finished") + sep + counts + sep + "took " + elapsed(st.Ended.Sub(st.Started))}
	case st.Ended != nil:
		return []string{s.Warn.Render(theme.GlyphWarn+" sweep ended early") + sep + counts, resume}
	}
	return []string{s.Error.Render(theme.GlyphDead+" sweep stopped") + s.Muted.Render(" (its process is gone)") + sep + counts, resume}
}

// flightLines list the cases in flight: model, task, repeat, the turn
// its run has reached and how long it has been going.
func (m Model) flightLines(now time.Time) []string {
	s := m.styles
	fl := slices.Clone(m.state.InFlight)
	var out []string
	for i, f := range fl {
		if i == maxFlightLines {
			out = append(out, s.Muted.Render(fmt.Sprintf("  … and %d more in flight", len(fl)-maxFlightLines)))
			break
		}
		parts := []string{termsafe.Line(f.Model), termsafe.Line(f.Task), fmt.Sprintf("repeat %d", f.Repeat)}
		if f.Slug != "" {
			if run, state, ok := m.runs(f.Slug); ok {
				if turn := turnOf(run.TurnCount(), state); turn > 0 {
					parts = append(parts, fmt.Sprintf("turn %d", turn))
				}
			}
		}
		parts = append(parts, elapsed(now.Sub(f.Started)))
		out = append(out, "  "+s.Info.Render(theme.GlyphRunning)+" "+strings.Join(parts, s.Muted.Render(" "+theme.GlyphSep+" ")))
	}
	return out
}

// turnOf is the turn a run has reached: its live state's, else its
// record's.
func turnOf(recorded int, st *live.State) int {
	if st != nil && st.Turn > 0 {
		return st.Turn
	}
	return recorded
}

// column is one column of the model table.
type column struct {
	title string
	width int
	left  bool
}

var modelColumns = []column{
	{"pass", 7, false},
	{"rate", barWidth + 5, true},
	{"interval", 8, false},
	{"pass^k", 8, false},
	{"verdicts", 8, false},
	{"false pass", 10, false},
	{"top failure", 12, true},
	{"s/case", 7, false},
	{"cases", 5, false},
}

// nameWidth is the width of the model column: its longest label where
// every column fits beside it, else a fifth of the width.
func (m Model) nameWidth() int {
	columns := 4
	for _, c := range modelColumns {
		columns += 1 + c.width
	}
	longest := 0
	for _, g := range m.t.groups {
		longest = max(longest, fit.Width(termsafe.Line(g.Label)))
	}
	return max(12, min(longest, max(m.width/5, m.width-columns)))
}

// modelTable is one line per model and serving setup; the columns that do
// not fit are left out from the right.
func (m Model) modelTable() []string {
	s, w := m.styles, m.width
	nameW := m.nameWidth()
	used := 4 + nameW
	n := 0
	for _, c := range modelColumns {
		if used+1+c.width > w {
			break
		}
		used += 1 + c.width
		n++
	}
	line := func(num, name string, cells []string, styled []string) string {
		var b strings.Builder
		b.WriteString(strings.Repeat(" ", max(0, 3-fit.Width(num))) + num + " ")
		b.WriteString(fit.Line(name, nameW))
		for i := range n {
			c := modelColumns[i]
			b.WriteString(" ")
			pad := strings.Repeat(" ", max(0, c.width-fit.Width(cells[i])))
			cell := fit.Cut(styled[i], c.width)
			if c.left {
				b.WriteString(cell + pad)
			} else {
				b.WriteString(pad + cell)
			}
		}
		return fit.Line(b.String(), w)
	}
	titles := make([]string, len(modelColumns))
	for i, c := range modelColumns {
		titles[i] = c.title
	}
	out := []string{s.Bold.Render(line("#", "model [serving]", titles, titles))}
	for gi, g := range m.t.groups {
		plain, styled := m.groupCells(gi, g)
		num, name := strconv.Itoa(gi+1), termsafe.Line(g.Label)
		if gi == m.cur.group {
			// The group of the case under the cursor.
			num, name = s.Key.Render(theme.GlyphCursor)+num, s.Bold.Render(name)
		}
		out = append(out, line(num, name, plain, styled))
	}
	legend := "rate: " + theme.GlyphBarSure + theme.GlyphBarLow + " passes, " + theme.GlyphBarLow + theme.GlyphBarHigh +
		" its 95% interval (tasks as clusters) · pass^k: all k repeats of a task pass · " +
		"server, sandbox and bench_error cases are the harness's, not counted"
	return append(out, s.Muted.Render(fit.Cut(legend, w)))
}

// groupCells are a group's cells, plain (for widths) and styled.
func (m Model) groupCells(gi int, g bench.RowGroup) (plain, styled []string) {
	s := m.styles
	add := func(p string, st lipgloss.Style) {
		plain = append(plain, p)
		styled = append(styled, st.Render(p))
	}
	add(fmt.Sprintf("%d/%d", g.Passes, g.N), s.Text)
	var iv *bench.Interval
	if g.TaskClustered != nil {
		iv = &g.TaskClustered.Interval
	}
	if g.PassRate == nil {
		add("-", s.Muted)
		add("-", s.Muted)
	} else {
		rate := *g.PassRate
		bar := m.bar(rate, iv)
		pct := fmt.Sprintf("%4s", percent(rate))
		plain = append(plain, strings.Repeat("x", barWidth)+" "+pct)
		styled = append(styled, bar+" "+s.Bold.Render(pct))
		if iv != nil {
			add(percentRange(iv.Lo, iv.Hi), s.Text)
		} else {
			add("-", s.Muted)
		}
	}
	if g.PassHatK != nil {
		add(fmt.Sprintf("%s k%d", percent(*g.PassHatK), g.K), s.Text)
	} else {
		add("-", s.Muted)
	}
	v := g.Verdicts
	if v.Verdicts == 0 {
		add("-", s.Muted)
		add("-", s.Muted)
	} else {
		p := fmt.Sprintf("%d%s %d%s", v.Accepts, theme.GlyphOK, v.Verdicts-v.Accepts, theme.GlyphFail)
		add(p, s.Text)
		st := s.Text
		if v.FalsePass > 0 {
			st = s.Warn
		}
		add(strconv.Itoa(v.FalsePass), st)
	}
	if c, n := topFailure(g.FailureClasses); c != "" {
		add(fmt.Sprintf("%s %d", termsafe.Line(c), n), s.Text)
	} else {
		add("-", s.Muted)
	}
	if wall := m.t.wall[gi]; wall != nil {
		add(strconv.FormatFloat(*wall, 'f', 1, 64), s.Text)
	} else {
		add("-", s.Muted)
	}
	add(strconv.Itoa(g.Runs), s.Text)
	return plain, styled
}

// bar draws a pass rate and its interval: passes surely up to the
// interval's low end, the interval below and above the rate, and beyond.
func (m Model) bar(rate float64, iv *bench.Interval) string {
	s := m.styles
	lo, hi := rate, rate
	if iv != nil {
		lo, hi = iv.Lo, iv.Hi
	}
	var b strings.Builder
	for i := range barWidth {
		x := (float64(i) + 0.5) / barWidth
		switch {
		case x < lo:
			b.WriteString(s.OK.Render(theme.GlyphBarSure))
		case x < rate:
			b.WriteString(s.OK.Render(theme.GlyphBarLow))
		case x < hi:
			b.WriteString(s.Muted.Render(theme.GlyphBarHigh))
		default:
			b.WriteString(s.Muted.Render(theme.GlyphBarEmpty))
		}
	}
	return b.String()
}

func percent(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }

func percentRange(lo, hi float64) string { return fmt.Sprintf("%.0f–%.0f%%", lo*100, hi*100) }

// grid is the tasks × models table, one mark per repeat: a header and
// at most rows tasks, the cursor's among them.
func (m Model) grid(rows int) []string {
	s, w := m.styles, m.width
	taskW, cellW := m.gridWidths()
	head := fit.Line("task", taskW)
	for gi := range m.t.groups {
		head += "  " + fmt.Sprintf("%-*s", cellW, strconv.Itoa(gi+1))
	}
	legend := "  " + strings.Join([]string{
		theme.GlyphPass + " pass", theme.GlyphFail + " fail", theme.GlyphWarn + " gamed",
		theme.GlyphHarness + " harness failure", theme.GlyphRunning + " in flight", theme.GlyphPending + " not yet",
	}, "  ")
	out := []string{fit.Line(s.Bold.Render(head)+s.Muted.Render(legend), w)}
	top := m.top
	if m.cur.task >= top+rows {
		top = m.cur.task - rows + 1
	}
	for ti := top; ti < len(m.t.tasks) && ti < top+rows; ti++ {
		line := fit.Line(termsafe.Line(m.t.tasks[ti]), taskW)
		if ti == m.cur.task {
			line = s.Bold.Render(line)
		}
		for gi := range m.t.groups {
			line += "  " + m.cell(ti, gi, cellW)
		}
		out = append(out, fit.Line(line, w))
	}
	return out
}

// gridWidths are the widths of the task column and of one group's cell.
func (m Model) gridWidths() (int, int) {
	taskW := 4
	for _, t := range m.t.tasks {
		taskW = max(taskW, fit.Width(termsafe.Line(t)))
	}
	taskW = min(taskW, max(8, m.width/3))
	cellW := m.t.repeats
	if cellW > maxMarks {
		cellW = len(fmt.Sprintf("%d%s/%d", m.t.repeats, theme.GlyphPass, m.t.repeats))
	}
	return taskW, max(cellW, len(strconv.Itoa(len(m.t.groups))))
}

// cell is one task's cases of one group.
func (m Model) cell(ti, gi, width int) string {
	s := m.styles
	here := ti == m.cur.task && gi == m.cur.group
	if m.t.repeats > maxMarks {
		passes, scored := 0, 0
		for _, i := range m.t.cells[cellKey{ti, gi}] {
			scored++
			if m.rows[i].Passed() {
				passes++
			}
		}
		text := fmt.Sprintf("%d%s/%d", passes, theme.GlyphPass, scored)
		text += strings.Repeat(" ", max(0, width-fit.Width(text)))
		if here {
			return s.Selected.Render(text)
		}
		return text
	}
	var b strings.Builder
	for rep := range m.t.repeats {
		c := cursor{task: ti, group: gi, repeat: rep}
		glyph, st := m.mark(c)
		if here && rep == m.cur.repeat {
			st = s.Selected
		}
		b.WriteString(st.Render(glyph))
	}
	b.WriteString(strings.Repeat(" ", max(0, width-m.t.repeats)))
	return b.String()
}

// mark is a case's glyph and style.
func (m Model) mark(c cursor) (string, lipgloss.Style) {
	s := m.styles
	i, ok := m.t.rowAt(c)
	if !ok {
		if _, flying := m.flightAt(c); flying {
			return theme.GlyphRunning, s.Info
		}
		return theme.GlyphPending, s.Muted
	}
	r := &m.rows[i]
	switch {
	case r.Passed() && m.t.verdicts[i] == "reject":
		return theme.GlyphPass, s.Warn // a false pass
	case r.Passed():
		return theme.GlyphPass, s.OK
	case r.Acceptance == bench.AcceptanceGamed || r.FailureClass == bench.FailureGamed:
		return theme.GlyphWarn, s.Warn
	case r.Infra():
		return theme.GlyphHarness, s.Muted
	}
	return theme.GlyphFail, s.Error
}

// detailLine says what the case under the cursor is.
func (m Model) detailLine(now time.Time) string {
	s, w := m.styles, m.width
	sep := s.Muted.Render(" " + theme.GlyphSep + " ")
	c := m.cur
	if len(m.t.groups) == 0 || len(m.t.tasks) == 0 {
		return ""
	}
	head := s.Key.Render(theme.GlyphCursor) + " " + termsafe.Line(m.t.groups[c.group].Model) + sep +
		termsafe.Line(m.t.tasks[c.task]) + sep + fmt.Sprintf("repeat %d", c.repeat)
	i, ok := m.t.rowAt(c)
	if !ok {
		if f, flying := m.flightAt(c); flying {
			return fit.Line(head+sep+s.Info.Render("in flight")+sep+elapsed(now.Sub(f.Started)), w)
		}
		return fit.Line(head+sep+s.Muted.Render("not scored yet"), w)
	}
	r := &m.rows[i]
	glyph, st := m.mark(c)
	parts := []string{head, st.Render(glyph + " " + termsafe.Line(r.Acceptance))}
	if v := m.t.verdicts[i]; v == "reject" && r.Passed() {
		parts = append(parts, s.Warn.Render("verdict reject: a false pass"))
	} else if v != "" {
		parts = append(parts, "verdict "+termsafe.Line(v))
	} else if r.Passed() {
		parts = append(parts, s.Review.Render("not reviewed"))
	}
	if r.WallS != nil {
		parts = append(parts, fmt.Sprintf("%.1f s", float64(*r.WallS)))
	}
	if r.FailureClass != "" {
		parts = append(parts, termsafe.Line(r.FailureClass)+": "+termsafe.Line(live.FirstLine(r.FailureEvidence)))
	}
	return fit.Line(strings.Join(parts, sep), w)
}

// failureTable is failure classes × models: how many cases of each group
// failed for each class.
func (m Model) failureTable() []string {
	s, w := m.styles, m.width
	taskW, cellW := m.gridWidths()
	taskW = max(taskW, fit.Width("failure class"))
	present := map[string]bool{}
	for _, g := range m.t.groups {
		for c, n := range g.FailureClasses {
			if n > 0 {
				present[c] = true
			}
		}
	}
	var classes []string
	for _, c := range bench.FailureClasses {
		if present[c] {
			classes = append(classes, c)
		}
	}
	var others []string
	for c := range present {
		if !slices.Contains(bench.FailureClasses, c) {
			others = append(others, c)
		}
	}
	slices.Sort(others)
	classes = append(classes, others...)
	if len(classes) == 0 {
		return []string{s.Muted.Render("no failures")}
	}
	head := fit.Line("failure class", taskW)
	for gi := range m.t.groups {
		head += "  " + fmt.Sprintf("%*s", cellW, strconv.Itoa(gi+1))
	}
	out := []string{fit.Line(s.Bold.Render(head), w)}
	for _, c := range classes {
		line := fit.Line(termsafe.Line(c), taskW)
		for _, g := range m.t.groups {
			n := g.FailureClasses[c]
			cell := fmt.Sprintf("%*s", cellW, theme.GlyphPending)
			if n > 0 {
				cell = fmt.Sprintf("%*d", cellW, n)
			}
			if n == 0 {
				cell = s.Muted.Render(cell)
			}
			line += "  " + cell
		}
		out = append(out, fit.Line(line, w))
	}
	return out
}

// clampScroll keeps the cursor's task inside the grid's window.
func (m *Model) clampScroll() {
	rows := m.gridRows()
	if m.cur.task < m.top {
		m.top = m.cur.task
	}
	if m.cur.task >= m.top+rows {
		m.top = m.cur.task - rows + 1
	}
	m.top = max(0, min(m.top, len(m.t.tasks)-rows))
}

// gridRows is how many tasks the grid shows, as View lays it out.
func (m Model) gridRows() int {
	return m.gridRowsFor(len(m.topLines(time.Time{})), len(m.bottomLines(time.Time{})))
}
