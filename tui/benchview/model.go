// Package benchview is mission control's bench screen: one results file of
// `dirtywork bench`, followed live as its sweep appends rows. It shows the
// model table (pass rate with a bar and its interval, pass^k, verdicts,
// false passes, the top failure class, seconds per case), the tasks ×
// models table with one mark per repeat, failure classes × models, and,
// while the sweep runs, its progress and the cases in flight. Enter opens
// a case: its acceptance output, time split, serving and failure
// evidence, and from there its diff in the review screen with the usual
// verdict keys. The statistics are bench's own (GroupRows, what
// `bench summarize` prints), with verdicts read live from the runs root.
//
// The file is read and followed off the UI loop (see follow); every text
// from the file, the sweep or the acceptance output is made inert.
package benchview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/intent"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// Runs is what the view asks of the runs root, which mission control
// keeps live: a run by its slug and, while its transcript is followed,
// its live state. ok is false for a run the root does not hold.
type Runs func(slug string) (run backend.Run, state *live.State, ok bool)

// Requests for the root (see package intent).
type (
	// CloseMsg leaves the bench view.
	CloseMsg struct{}
	// ReviewMsg opens the run Slug in the review screen.
	ReviewMsg struct{ Slug string }
)

// generations numbers every follow, across views, so messages of a
// follower started by an earlier opening are never taken for this one's.
var generations atomic.Int64

// Model is the bench view.
type Model struct {
	intent.Slot // a close or a review, for the root

	styles   *theme.Styles
	keys     *keys.Bench
	caseKeys *keys.BenchCase
	runs     Runs

	// path is the results file (once known); dir the bench root, where
	// the newest is looked for when no file was named.
	path, dir string
	gen       int
	cancel    context.CancelFunc
	ch        <-chan tea.Msg

	loaded   bool
	err      string
	took     time.Duration
	rows     []bench.Row
	problems []bench.LineError
	state    *bench.SweepState
	alive    bool

	t    table
	cur  cursor
	top  int // the first task shown in the grid
	open *caseView
	// note is a passing remark on the view's last line.
	note string

	width, height int
}

// New returns the view of the results file at path, or of the newest
// results file in dir when path is "". Start begins reading it.
func New(s *theme.Styles, km *keys.Map, runs Runs, path, dir string) Model {
	if runs == nil {
		runs = func(string) (backend.Run, *live.State, bool) { return backend.Run{}, nil, false }
	}
	return Model{styles: s, keys: &km.Bench, caseKeys: &km.BenchCase, runs: runs, path: path, dir: dir}
}

// Start reads the results file and follows it until ctx ends or Close.
func (m *Model) Start(ctx context.Context) tea.Cmd {
	m.Close()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, m.cancel = context.WithCancel(ctx)
	m.gen = int(generations.Add(1))
	gen, path, dir := m.gen, m.path, m.dir
	return func() tea.Msg {
		return followingMsg{gen: gen, ch: follow(ctx, gen, path, dir, pollEvery)}
	}
}

// Close stops following the file.
func (m *Model) Close() {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
}

// Path is the results file shown ("" until known).
func (m Model) Path() string { return m.path }

// Loaded reports whether the file has been read.
func (m Model) Loaded() bool { return m.loaded }

// Took is how long the first read and parse of the file took.
func (m Model) Took() time.Duration { return m.took }

// Rows counts the rows read.
func (m Model) Rows() int { return len(m.rows) }

// CaseOpen is the slug of the open case's run ("" when no case is open,
// or its row names none).
func (m Model) CaseOpen() (string, bool) {
	if m.open == nil {
		return "", false
	}
	return deref(m.rows[m.open.row].Slug), true
}

// SetSize sets the view's size.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.clampScroll()
}

// RunsChanged tells the view the runs root changed: verdicts given since
// are counted (the statistics are made again only when one did).
func (m *Model) RunsChanged() {
	if !m.loaded {
		return
	}
	for i := range m.rows {
		if m.verdictOf(i) != m.t.verdicts[i] {
			m.rebuild()
			return
		}
	}
}

// Update handles the follower's messages and the view's keys.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case followingMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.ch = msg.ch
		return m, waitCmd(m.ch)
	case rowsMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.apply(msg)
		return m, waitCmd(m.ch)
	case stateMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.state, m.alive = msg.state, msg.alive
		m.t.flights = flightsOf(m.state, m.alive)
		m.index()
		return m, waitCmd(m.ch)
	case watchMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.loaded = true
		m.err = msg.err.Error()
		return m, waitCmd(m.ch)
	case acceptanceMsg:
		if m.open != nil && m.open.row == msg.row && msg.gen == m.gen {
			m.open.output, m.open.outputErr, m.open.outputLoaded = msg.text, msg.err, true
		}
		return m, nil
	case tea.KeyPressMsg:
		m.note = ""
		if m.open != nil {
			return m.caseKey(msg)
		}
		return m.tableKey(msg)
	}
	return m, nil
}

// apply takes a read of the file.
func (m *Model) apply(msg rowsMsg) {
	first := !m.loaded
	m.loaded = true
	m.path = msg.path
	if msg.err != nil {
		m.err = msg.err.Error()
		return
	}
	m.err = ""
	if first {
		m.took = msg.took
	}
	if msg.u.Reset {
		m.rows, m.problems = nil, nil
		m.open = nil
	}
	m.rows = append(m.rows, msg.u.Rows...)
	m.problems = append(m.problems, msg.u.Problems...)
	m.rebuild()
}

func (m Model) tableKey(k tea.KeyPressMsg) (Model, tea.Cmd) {
	kb := m.keys
	switch {
	case key.Matches(k, kb.Back):
		m.Ask(CloseMsg{})
	case key.Matches(k, kb.Up):
		m.moveTask(-1)
	case key.Matches(k, kb.Down):
		m.moveTask(1)
	case key.Matches(k, kb.Left):
		m.moveMark(-1)
	case key.Matches(k, kb.Right):
		m.moveMark(1)
	case key.Matches(k, kb.Open):
		i, ok := m.t.rowAt(m.cur)
		if !ok {
			m.note = "no case scored here yet"
			return m, nil
		}
		return m, m.openCase(i)
	case key.Matches(k, kb.NextUnreviewed):
		return m, m.jumpNext("")
	}
	return m, nil
}

// JumpNext moves to the next passing case nobody has reviewed (after the
// cursor, skipping the run except) and opens it. It returns the case's
// slug, and false when there is none.
func (m *Model) JumpNext(except string) (string, tea.Cmd, bool) {
	i, ok := m.nextUnreviewed(except)
	if !ok {
		return "", nil, false
	}
	m.cur = m.t.cursorOf(i)
	m.clampScroll()
	return deref(m.rows[i].Slug), m.openCase(i), true
}

// jumpNext is JumpNext for the view's own key.
func (m *Model) jumpNext(except string) tea.Cmd {
	if _, cmd, ok := m.JumpNext(except); ok {
		return cmd
	}
	m.note = "no passing case is waiting for review"
	return nil
}

// nextUnreviewed is the first passing case without a verdict after the
// cursor, in the order of the tasks × models table.
func (m *Model) nextUnreviewed(except string) (int, bool) {
	order := m.t.order()
	if len(order) == 0 {
		return 0, false
	}
	start := 0
	if i, ok := m.t.rowAt(m.cur); ok {
		for j, r := range order {
			if r == i {
				start = j + 1
				break
			}
		}
	}
	for k := range order {
		i := order[(start+k)%len(order)]
		r := &m.rows[i]
		slug := deref(r.Slug)
		if r.Passed() && slug != "" && slug != except && m.verdictOf(i) == "" {
			return i, true
		}
	}
	return 0, false
}

// verdictOf is row i's verdict: its run's record now, or the row's own
// when the runs root does not hold its run.
func (m *Model) verdictOf(i int) string {
	r := &m.rows[i]
	if slug := deref(r.Slug); slug != "" {
		if run, _, ok := m.runs(slug); ok && run.Problem == "" {
			return string(run.Verdict)
		}
	}
	return deref(r.Verdict)
}

// runOf is the run of row i as the runs root holds it.
func (m *Model) runOf(i int) (backend.Run, *live.State, bool) {
	slug := deref(m.rows[i].Slug)
	if slug == "" {
		return backend.Run{}, nil, false
	}
	return m.runs(slug)
}

// lookup is the verdict lookup of the statistics: the runs root's
// records, as bench.LiveVerdicts reads them.
func (m *Model) lookup() bench.VerdictLookup {
	return func(slug string) (any, any, bool) {
		run, _, ok := m.runs(slug)
		if !ok || run.Problem != "" {
			return nil, nil, false
		}
		var verdict, secs any
		if run.Verdict != "" {
			verdict = string(run.Verdict)
		}
		if run.ReviewSeconds != nil {
			secs = jsonNumber(*run.ReviewSeconds)
		}
		return verdict, secs, true
	}
}

// openCase opens row i's case and reads its acceptance output.
func (m *Model) openCase(i int) tea.Cmd {
	m.open = &caseView{row: i}
	dir := deref(m.rows[i].RunDir)
	if run, _, ok := m.runOf(i); ok && run.RunDir != "" {
		dir = run.RunDir
	}
	if dir == "" {
		m.open.outputLoaded = true
		return nil
	}
	return acceptanceCmd(m.gen, i, filepath.Join(dir, bench.AcceptanceFile))
}

func (m Model) caseKey(k tea.KeyPressMsg) (Model, tea.Cmd) {
	kb := m.caseKeys
	switch {
	case key.Matches(k, kb.Back):
		m.open = nil
	case key.Matches(k, kb.Review):
		i := m.open.row
		slug := deref(m.rows[i].Slug)
		if _, _, ok := m.runOf(i); !ok {
			m.note = "this case's run is not in the runs root: there is no diff to review here"
			if slug == "" {
				m.note = "this case has no run: there is no diff to review"
			}
			return m, nil
		}
		m.Ask(ReviewMsg{Slug: slug})
	case key.Matches(k, kb.NextUnreviewed):
		return m, m.jumpNext(deref(m.rows[m.open.row].Slug))
	case key.Matches(k, kb.ScrollDown):
		m.open.scroll++
	case key.Matches(k, kb.ScrollUp):
		m.open.scroll--
	case key.Matches(k, kb.PageDown):
		m.open.scroll += max(1, m.height-caseHeaderLines)
	case key.Matches(k, kb.PageUp):
		m.open.scroll -= max(1, m.height-caseHeaderLines)
	}
	if m.open != nil {
		m.open.scroll = max(0, m.open.scroll)
	}
	return m, nil
}

// acceptanceMsg carries a case's acceptance output.
type acceptanceMsg struct {
	gen, row int
	text     string
	err      error
}

// acceptanceLimit is how much of an acceptance output is read: its end,
// where the verdict is.
const acceptanceLimit = 256 << 10

// acceptanceCmd reads a case's acceptance file.
func acceptanceCmd(gen, row int, path string) tea.Cmd {
	return func() tea.Msg {
		text, err := readTail(path, acceptanceLimit)
		return acceptanceMsg{gen: gen, row: row, text: text, err: err}
	}
}

// readTail reads the last limit bytes of the regular file at path.
func readTail(path string, limit int64) (string, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read-only
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	cut := ""
	if info.Size() > limit {
		if _, err := f.Seek(info.Size()-limit, io.SeekStart); err != nil {
			return "", err
		}
		cut = fmt.Sprintf("[… the first %d bytes are left out]\n", info.Size()-limit)
	}
	buf := make([]byte, min(limit, info.Size()))
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", err
	}
	return cut + string(buf[:n]), nil
}

// ShortHelp is the view's part of the help bar.
func (m Model) ShortHelp() []key.Binding {
	if m.open != nil {
		k := m.caseKeys
		return []key.Binding{k.Review, k.NextUnreviewed, k.ScrollDown, k.ScrollUp, k.Back}
	}
	k := m.keys
	return []key.Binding{k.Open, k.NextUnreviewed, k.Up, k.Down, k.Left, k.Right, k.Back}
}

// FullHelp is the view's part of the full help.
func (m Model) FullHelp() [][]key.Binding {
	if m.open != nil {
		k := m.caseKeys
		return [][]key.Binding{{k.Review, k.NextUnreviewed, k.Back}, {k.ScrollDown, k.ScrollUp, k.PageDown, k.PageUp}}
	}
	k := m.keys
	return [][]key.Binding{{k.Open, k.NextUnreviewed, k.Back}, {k.Up, k.Down, k.Left, k.Right}}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
