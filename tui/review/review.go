// Package review is the diff review of one finished run: a header (status,
// summary, verify result, warnings), the changed files with their +/−
// counts (each can be left out of an accept), the selected file's hunks
// with syntax colour, and the verdict keys. Every verdict goes through the
// backend Store, with the time from the diff being shown to the key.
package review

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/diff"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/highlight"
	"github.com/dirtywork/dirtywork/tui/intent"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// actionTimeout bounds one store action (accept, merge, clean …).
const actionTimeout = 2 * time.Minute

// LoadedMsg carries a run's review, parsed off the UI loop.
type LoadedMsg struct {
	Slug   string
	Review backend.Review
	Files  []diff.File
	Err    error
	// Took is how long loading and parsing took.
	Took time.Duration
}

// HighlightedMsg carries a chunk of one file's lines with syntax colour.
type HighlightedMsg struct {
	Slug  string
	File  int
	Chunk int
	Lines []string
}

// chunkLines is how many diff lines are coloured at a time: only the
// chunks on screen are, so a ten-thousand-line file costs what a screen
// does.
const chunkLines = 256

type chunkKey struct{ file, chunk int }

// PlanMsg carries what a clean would do, for the confirmation.
type PlanMsg struct {
	Slug string
	Plan backend.CleanPlan
	Err  error
}

// DoneMsg reports a finished verdict action.
type DoneMsg struct {
	Slug    string
	Action  string // accept, merge, reject, reject+feedback, clean, stop
	Outcome backend.Outcome
	Err     error
	// Resumed is the run a reject with feedback started.
	Resumed *backend.Launched
}

// Request messages ask the root to do what the review does not own.
type (
	// CloseMsg returns to the dashboard.
	CloseMsg struct{}
	// NextMsg opens the next run waiting for review.
	NextMsg struct{}
	// EditorMsg opens dir in $EDITOR.
	EditorMsg struct{ Dir string }
	// TranscriptMsg opens slug's transcript.
	TranscriptMsg struct{ Slug string }
)

// ForecastMsg carries the merge forecast of slug's review, which comes
// after the diff (it tries the merge).
type ForecastMsg struct {
	Slug     string
	Forecast backend.Forecast
}

// LoadCmd builds the Cmd that loads slug's review: the diff, read and
// parsed. The merge forecast is asked for once the diff is on screen
// (see LoadedMsg): run side by side, the two fight over the machine's
// cores (both are many short git processes) and the diff came later.
func LoadCmd(store backend.Store, slug string) tea.Cmd {
	return func() tea.Msg {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		rv, err := store.Review(ctx, slug)
		msg := LoadedMsg{Slug: slug, Review: rv, Err: err}
		if err == nil {
			msg.Files = diff.Parse(rv.Patch)
		}
		msg.Took = time.Since(start)
		return msg
	}
}

// forecastCmd asks for the merge forecast; one that cannot be had is a
// blocker (merge will not go ahead, and the review says why).
func forecastCmd(store backend.Store, slug string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		fc, err := store.Forecast(ctx, slug)
		if err != nil {
			fc = backend.Forecast{Blockers: []string{"the merge forecast failed: " + err.Error()}}
		}
		return ForecastMsg{Slug: slug, Forecast: fc}
	}
}

type modal int

const (
	modalNone modal = iota
	modalFeedback
	modalConfirm
	modalAlert
	modalBusy
)

// pending is the action an open confirmation asks about.
type pending int

const (
	pendingNone pending = iota
	pendingStop
	pendingMerge
	pendingClean
	pendingResume
)

func (p pending) String() string {
	switch p {
	case pendingStop:
		return "stop"
	case pendingMerge:
		return "merge"
	case pendingClean:
		return "clean"
	case pendingResume:
		return "resume"
	}
	return ""
}

// Model is the review screen of one run.
type Model struct {
	intent.Slot // close, next review, transcript or editor, for the root

	styles   *theme.Styles
	keys     *keys.Review
	form     *keys.Form
	store    backend.Store
	launcher backend.Launcher
	hl       *highlight.Highlighter
	now      func() time.Time

	run    backend.Run
	loaded bool
	// forecast is the merge forecast once it arrived (nil until then);
	// held is a verdict key pressed before it, acted on when it comes.
	forecast *backend.Forecast
	held     *tea.KeyPressMsg
	loadErr  error
	review   backend.Review
	files    []diff.File
	include  []bool
	file     int
	scroll   int
	colored  map[chunkKey][]string
	asked    map[chunkKey]bool
	// shownAt is when the diff was first on screen; review time runs
	// from here to the verdict key.
	shownAt time.Time

	modal    modal
	alert    []string
	plan     backend.CleanPlan
	pendSecs float64 // review seconds captured at the key of a two-step verdict
	// pendFiles are the files a merge accepts first (nil: the whole
	// change, or a run accepted already).
	pendFiles []string
	// ask is the confirmation of a consequential action, pend the action
	// it asks about.
	ask  Confirm
	pend pending
	// sendText is the feedback a confirmed reject with resume sends.
	sendText string
	feedback textarea.Model
	// resumeOnly is set while the feedback box resumes without a verdict.
	resumeOnly bool
	// keepFeedback: the box was closed with ctrl+c, so the next open shows
	// what was typed.
	keepFeedback bool
	busy         string

	width, height int
}

// New returns the review of run; call LoadCmd to fill it.
func New(s *theme.Styles, km *keys.Map, store backend.Store, launcher backend.Launcher, run backend.Run, now func() time.Time) Model {
	ta := textarea.New()
	ta.Placeholder = "What should the next run do differently?"
	ta.ShowLineNumbers = false
	ta.CharLimit = 64000
	ta.SetStyles(s.Area)
	m := Model{
		styles: s, keys: &km.Review, form: &km.Form,
		store: store, launcher: launcher, hl: highlight.New(s.Syntax), now: now,
		run: run, colored: map[chunkKey][]string{}, asked: map[chunkKey]bool{}, feedback: ta,
		ask: NewConfirm(&km.Confirm),
	}
	m.syncKeys()
	return m
}

// Slug is the reviewed run.
func (m Model) Slug() string { return m.run.Slug }

// Loaded reports whether the diff is on screen.
func (m Model) Loaded() bool { return m.loaded }

// ShownAt is when the diff was first shown (zero before).
func (m Model) ShownAt() time.Time { return m.shownAt }

// Files are the parsed files.
func (m Model) Files() []diff.File { return m.files }

// Included reports which files an accept would commit.
func (m Model) Included() []bool { return m.include }

// Busy is the action in flight, if any.
func (m Model) Busy() string { return m.busy }

// Modal names the open dialog ("" when none).
func (m Model) Modal() string {
	switch m.modal {
	case modalFeedback:
		return "feedback"
	case modalConfirm:
		return "confirm-" + m.pend.String()
	case modalAlert:
		return "alert"
	case modalBusy:
		return "busy"
	}
	return ""
}

// AlertText is the open alert's text.
func (m Model) AlertText() string { return strings.Join(m.alert, "\n") }

// ConfirmText is the open confirmation's line.
func (m Model) ConfirmText() string { return m.ask.Line() }

// FeedbackText is what the feedback box holds.
func (m Model) FeedbackText() string { return m.feedback.Value() }

// SetRun updates the reviewed run's record (the root sees changes first).
func (m *Model) SetRun(r backend.Run) {
	m.run = r
	m.syncKeys()
}

// Capturing reports whether a text box has the keys.
func (m Model) Capturing() bool { return m.modal == modalFeedback }

// CloseInput closes the feedback box without sending it (ctrl+c); what
// was typed is there when the box opens again.
func (m *Model) CloseInput() {
	if m.modal != modalFeedback {
		return
	}
	m.modal = modalNone
	m.feedback.Blur()
	m.keepFeedback = true
}

// SetSize sets the screen size.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = w, h
	m.feedback.SetWidth(max(10, min(w-8, 90)))
	m.feedback.SetHeight(max(3, min(h-10, 10)))
}

// Resumable reports a run that stopped short of its task, whose next
// action is to go on: stopped, dead (its process gone before it recorded
// an end), out of turns or time, stalled or stuck; never one cleaned.
func Resumable(r backend.Run) bool {
	if r.Verdict == transcript.VerdictCleanup {
		return false // its worktree is gone
	}
	if r.Phase() == backend.PhaseDead {
		return true
	}
	switch r.Status {
	case transcript.StatusInterrupted, transcript.StatusMaxTurns, transcript.StatusTimeout, transcript.StatusStalled, transcript.StatusStuck:
		return true
	}
	return false
}

// syncKeys enables the keys that can act now, so the help bar never
// offers one that does nothing.
func (m *Model) syncKeys() {
	live := m.run.Live()
	m.keys.Stop.SetEnabled(live)
	for _, b := range []*key.Binding{&m.keys.Accept, &m.keys.Merge, &m.keys.Reject, &m.keys.RejectFeedback, &m.keys.Clean} {
		b.SetEnabled(!live)
	}
	m.keys.Resume.SetEnabled(Resumable(m.run))
	hasFiles := len(m.files) > 0
	for _, b := range []*key.Binding{
		&m.keys.ToggleFile, &m.keys.NextFile, &m.keys.PrevFile, &m.keys.NextHunk, &m.keys.PrevHunk,
		&m.keys.Down, &m.keys.Up, &m.keys.Top, &m.keys.Bottom, &m.keys.HalfDown, &m.keys.HalfUp, &m.keys.PageDown, &m.keys.PageUp,
	} {
		b.SetEnabled(hasFiles)
	}
	m.keys.Editor.SetEnabled(m.run.Worktree != "")
}

// Update handles messages for the review.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case LoadedMsg:
		if msg.Slug != m.run.Slug {
			return m, nil
		}
		m.loaded = true
		m.loadErr = msg.Err
		m.review = msg.Review
		if m.forecast != nil { // it came first
			m.forecast.Apply(&m.review)
		}
		m.files = msg.Files
		// Build and generated files (caches, dependency trees, compiled
		// files) start left out of the accept: a reviewer puts one back
		// with the toggle key; nobody means to commit __pycache__.
		m.include = make([]bool, len(msg.Files))
		for i, f := range msg.Files {
			m.include[i] = !diff.Generated(f.Path)
		}
		m.shownAt = m.now()
		m.syncKeys()
		if msg.Err == nil && m.forecast == nil && m.store != nil {
			return m, tea.Batch(m.colorCmd(), forecastCmd(m.store, m.run.Slug))
		}
		return m, m.colorCmd()
	case ForecastMsg:
		if msg.Slug != m.run.Slug {
			return m, nil
		}
		fc := msg.Forecast
		m.forecast = &fc
		if m.loaded {
			fc.Apply(&m.review)
		}
		if m.held != nil {
			k := *m.held
			m.held, m.busy, m.modal = nil, "", modalNone
			return m.Update(k)
		}
		return m, nil
	case HighlightedMsg:
		if msg.Slug == m.run.Slug {
			m.colored[chunkKey{msg.File, msg.Chunk}] = msg.Lines
		}
		return m, nil
	case PlanMsg:
		if msg.Slug != m.run.Slug {
			return m, nil
		}
		m.busy = ""
		if msg.Err != nil {
			m.modal = modalAlert
			m.alert = []string{"cannot plan the clean: " + termsafe.Line(msg.Err.Error())}
			return m, nil
		}
		m.plan = msg.Plan
		m.askFirst(pendingClean, m.cleanLine(), "clean")
		return m, nil
	case DoneMsg:
		if msg.Slug != m.run.Slug {
			return m, nil
		}
		m.busy = ""
		m.modal = modalNone
		if msg.Err != nil {
			m.modal = modalAlert
			m.alert = errorLines(msg.Action, msg.Err)
		}
		return m, nil
	case tea.KeyPressMsg:
		m2, cmd := m.key(msg)
		return m2, tea.Batch(cmd, m2.colorCmd())
	}
	if m.modal == modalFeedback {
		var cmd tea.Cmd
		m.feedback, cmd = m.feedback.Update(msg)
		return m, cmd
	}
	return m, nil
}

func errorLines(action string, err error) []string {
	lines := []string{action + " failed:"}
	for l := range strings.SplitSeq(termsafe.String(err.Error()), "\n") {
		lines = append(lines, "  "+l)
	}
	return lines
}

func (m Model) key(k tea.KeyPressMsg) (Model, tea.Cmd) {
	switch m.modal {
	case modalBusy:
		return m, nil
	case modalAlert:
		m.modal = modalNone
		return m, nil
	case modalConfirm:
		return m.confirmKey(k)
	case modalFeedback:
		return m.feedbackKey(k)
	}
	kb := m.keys
	if !m.loaded && !key.Matches(k, kb.Back, kb.NextReview) {
		return m, nil
	}
	if m.busy != "" && !key.Matches(k, kb.Back) {
		return m, nil
	}
	// A verdict key waits for the merge forecast, which is still trying
	// the merge in the run's repository: an accept or a clean beside it
	// would race it there. The key is acted on when the forecast comes.
	if m.forecast == nil && m.loadErr == nil && m.store != nil && key.Matches(k, kb.Accept, kb.Merge, kb.Reject, kb.RejectFeedback, kb.Resume, kb.Clean) {
		held := k
		m.held = &held
		m.busy, m.modal = "waiting for the merge forecast", modalBusy
		return m, nil
	}
	if next, cmd, ok := m.actionKey(k); ok {
		return next, cmd
	}
	return m.moveKey(k)
}

// askFirst asks before the pending action p: line says what will happen.
func (m *Model) askFirst(p pending, line, verb string) {
	m.pend = p
	m.modal = modalConfirm
	m.ask.Ask(line, verb)
}

// confirmKey answers the open confirmation: yes starts the pending
// action, no drops it (nothing is called), any other key is ignored.
func (m Model) confirmKey(k tea.KeyPressMsg) (Model, tea.Cmd) {
	switch m.ask.Answer(k) {
	case Ignored:
		return m, nil
	case No:
		m.modal, m.pend = modalNone, pendingNone
		return m, nil
	}
	p := m.pend
	m.modal, m.pend = modalBusy, pendingNone
	switch p {
	case pendingStop:
		m.modal = modalNone // a stop keeps the review open and usable
		m.busy = "stop"
		return m, m.stopCmd()
	case pendingMerge:
		m.busy = "merge"
		return m, m.mergeCmd(m.pendFiles, m.pendSecs)
	case pendingClean:
		m.busy = "clean"
		return m, m.cleanCmd(m.pendSecs)
	case pendingResume:
		if m.resumeOnly {
			m.busy = "resume"
			return m, m.resumeCmd(m.sendText)
		}
		m.busy = "reject with feedback"
		return m, m.rejectFeedbackCmd(m.sendText, m.pendSecs)
	}
	m.modal = modalNone
	return m, nil
}

// feedbackKey edits, submits or cancels the reject-with-feedback box.
func (m Model) feedbackKey(k tea.KeyPressMsg) (Model, tea.Cmd) {
	switch {
	case key.Matches(k, m.form.Cancel):
		m.modal = modalNone
		m.feedback.Blur()
		return m, nil
	case key.Matches(k, m.form.Submit):
		text := strings.TrimSpace(m.feedback.Value())
		if text == "" {
			return m, nil
		}
		m.feedback.Blur()
		// Cancelling the question keeps the text for the next open.
		m.keepFeedback = true
		m.sendText = text
		if m.resumeOnly {
			m.askFirst(pendingResume, m.continueLine(text), "resume")
			return m, nil
		}
		m.askFirst(pendingResume, m.resumeLine(text), "reject and resume")
		return m, nil
	}
	var cmd tea.Cmd
	m.feedback, cmd = m.feedback.Update(k)
	return m, cmd
}

// actionKey handles the keys that leave the review or act on the run;
// ok is false for any other key.
func (m Model) actionKey(k tea.KeyPressMsg) (Model, tea.Cmd, bool) {
	kb := m.keys
	switch {
	case key.Matches(k, kb.Back):
		m.Ask(CloseMsg{})
	case key.Matches(k, kb.NextReview):
		m.Ask(NextMsg{})
	case key.Matches(k, kb.Transcript):
		m.Ask(TranscriptMsg{Slug: m.run.Slug})
	case key.Matches(k, kb.Editor):
		m.Ask(EditorMsg{Dir: m.run.Worktree})
	case key.Matches(k, kb.Stop):
		m.askFirst(pendingStop, StopLine(m.run), "stop")
		return m, nil, true
	case key.Matches(k, kb.Accept):
		files, ok := m.selectedFiles()
		if !ok {
			m.modal = modalAlert
			m.alert = []string{"every file is left out: toggle one back in with " + kb.ToggleFile.Help().Key + ", or reject"}
			return m, nil, true
		}
		m.busy = "accept"
		return m, m.acceptCmd(files, m.reviewSeconds()), true
	case key.Matches(k, kb.Merge):
		return m.mergeKey()
	case key.Matches(k, kb.Reject):
		m.busy = "reject"
		return m, m.verdictCmd(transcript.VerdictReject, m.reviewSeconds()), true
	case key.Matches(k, kb.RejectFeedback, kb.Resume):
		m.pendSecs = m.reviewSeconds()
		m.resumeOnly = key.Matches(k, kb.Resume)
		m.modal = modalFeedback
		if !m.keepFeedback {
			m.feedback.Reset()
		}
		m.keepFeedback = false
		return m, m.feedback.Focus(), true
	case key.Matches(k, kb.Clean):
		m.pendSecs = m.reviewSeconds()
		m.busy = "planning clean"
		return m, m.planCmd(), true
	default:
		return m, nil, false
	}
	return m, nil, true
}

// mergeKey asks before merging the whole change, or says at once why it
// cannot (the forecast knows its blockers before the key).
func (m Model) mergeKey() (Model, tea.Cmd, bool) {
	kb := m.keys
	if !m.review.MergeReady {
		m.modal = modalAlert
		m.alert = append([]string{"merge into " + termsafe.Line(m.mergeInto()) + " is not possible:"}, bullet(m.review.MergeBlockers, "the store gave no reason")...)
		return m, nil, true
	}
	// A run not yet accepted is accepted with the files left in (the
	// generated ones start left out), then merged: the merge takes what
	// the accept committed. An accepted run merges its accepted commit.
	files, any := m.selectedFiles()
	if !any && !m.accepted() {
		m.modal = modalAlert
		m.alert = []string{"no file is in the accept; put one back with " + kb.ToggleFile.Help().Key}
		return m, nil, true
	}
	if m.accepted() {
		files = nil
	}
	m.pendSecs = m.reviewSeconds()
	m.pendFiles = files
	m.askFirst(pendingMerge, m.mergeLine(), "merge")
	return m, nil, true
}

// accepted reports a run accepted with a commit (a merge takes that).
func (m Model) accepted() bool {
	return m.run.Verdict == transcript.VerdictAccept && m.run.AcceptedCommit != ""
}

// moveKey moves through the files, hunks and lines of the diff, and
// toggles the file under the cursor.
func (m Model) moveKey(k tea.KeyPressMsg) (Model, tea.Cmd) {
	kb := m.keys
	switch {
	case key.Matches(k, kb.ToggleFile):
		if m.file < len(m.include) {
			m.include[m.file] = !m.include[m.file]
		}
	case key.Matches(k, kb.NextFile):
		return m.selectFile(m.file + 1)
	case key.Matches(k, kb.PrevFile):
		return m.selectFile(m.file - 1)
	case key.Matches(k, kb.NextHunk):
		m.jumpHunk(1)
	case key.Matches(k, kb.PrevHunk):
		m.jumpHunk(-1)
	case key.Matches(k, kb.Down):
		m.scrollBy(1)
	case key.Matches(k, kb.Up):
		m.scrollBy(-1)
	case key.Matches(k, kb.Top):
		m.scroll = 0
	case key.Matches(k, kb.Bottom):
		m.scrollBy(m.fileLines())
	case key.Matches(k, kb.HalfDown):
		m.scrollBy(max(1, m.diffHeight()/2))
	case key.Matches(k, kb.HalfUp):
		m.scrollBy(-max(1, m.diffHeight()/2))
	case key.Matches(k, kb.PageDown):
		m.scrollBy(m.diffHeight())
	case key.Matches(k, kb.PageUp):
		m.scrollBy(-m.diffHeight())
	}
	return m, nil
}

func bullet(lines []string, empty string) []string {
	if len(lines) == 0 {
		return []string{"  " + empty}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "  • " + termsafe.Line(l)
	}
	return out
}

// reviewSeconds is the time since the diff was shown, in seconds with
// millisecond precision.
func (m Model) reviewSeconds() float64 {
	if m.shownAt.IsZero() {
		return 0
	}
	d := m.now().Sub(m.shownAt)
	return float64(d.Milliseconds()) / 1000
}

func (m Model) allIncluded() bool {
	for _, in := range m.include {
		if !in {
			return false
		}
	}
	return true
}

// selectedFiles is nil when every file is in (accept all), the chosen
// paths otherwise; ok is false when none is.
func (m Model) selectedFiles() ([]string, bool) {
	if m.allIncluded() {
		return nil, true
	}
	var out []string
	for i, in := range m.include {
		if in {
			out = append(out, m.files[i].Path)
			if f := m.files[i]; f.Status == "renamed" && f.OldPath != "" {
				out = append(out, f.OldPath)
			}
		}
	}
	return out, len(out) > 0
}

func (m Model) selectFile(i int) (Model, tea.Cmd) {
	if len(m.files) == 0 {
		return m, nil
	}
	i = max(0, min(len(m.files)-1, i))
	if i == m.file {
		return m, nil
	}
	m.file = i
	m.scroll = 0
	return m, nil
}

func (m *Model) jumpHunk(dir int) {
	if m.file >= len(m.files) {
		return
	}
	hunks := m.files[m.file].Hunks
	if dir > 0 {
		for _, h := range hunks {
			if h > m.scroll {
				m.scroll = h
				m.clampScroll()
				return
			}
		}
		return
	}
	for i := len(hunks) - 1; i >= 0; i-- {
		if hunks[i] < m.scroll {
			m.scroll = hunks[i]
			return
		}
	}
	m.scroll = 0
}

func (m *Model) scrollBy(n int) {
	m.scroll += n
	m.clampScroll()
}

func (m *Model) clampScroll() {
	m.scroll = max(0, min(m.scroll, m.fileLines()-m.diffHeight()))
}

// fileLines is the number of lines of the selected file's diff.
func (m Model) fileLines() int {
	if m.file < len(m.files) {
		return len(m.files[m.file].Lines)
	}
	return 0
}

// colorCmd colours the chunks of the selected file that are on screen
// and not yet coloured (or asked for), off the UI loop.
func (m *Model) colorCmd() tea.Cmd {
	if m.hl == nil || !m.loaded || m.file >= len(m.files) || m.files[m.file].Binary {
		return nil
	}
	var cmds []tea.Cmd
	first := m.scroll / chunkLines
	last := (m.scroll + m.diffHeight()) / chunkLines
	for c := first; c <= last; c++ {
		k := chunkKey{m.file, c}
		if m.asked[k] || c*chunkLines >= len(m.files[m.file].Lines) {
			continue
		}
		m.asked[k] = true
		cmds = append(cmds, m.highlightCmd(m.file, c))
	}
	return tea.Batch(cmds...)
}

// highlightCmd colours chunk c of file i.
func (m Model) highlightCmd(i, c int) tea.Cmd {
	f := m.files[i]
	lo, hi := c*chunkLines, min(len(f.Lines), (c+1)*chunkLines)
	lines := f.Lines[lo:hi]
	hl, slug, path := m.hl, m.run.Slug, f.Path
	return func() tea.Msg {
		plain := make([]string, len(lines))
		for j, l := range lines {
			if l.Kind == diff.Add || l.Kind == diff.Del || l.Kind == diff.Context {
				plain[j] = safeCode(l.Text)
			}
		}
		return HighlightedMsg{Slug: slug, File: i, Chunk: c, Lines: hl.Lines(path, plain)}
	}
}

// safeCode is a diff line's text made inert, tabs expanded.
func safeCode(s string) string { return fit.Tabs(termsafe.Line(s)) }

// The action Cmds capture everything they need when built.

func (m Model) acceptCmd(files []string, secs float64) tea.Cmd {
	store, slug := m.store, m.run.Slug
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		out, err := store.Accept(ctx, slug, backend.AcceptOptions{Files: files, ReviewSeconds: secs})
		return DoneMsg{Slug: slug, Action: "accept", Outcome: out, Err: err}
	}
}

// mergeCmd merges; with files, it accepts those first (so the merge
// takes only them).
func (m Model) mergeCmd(files []string, secs float64) tea.Cmd {
	store, slug := m.store, m.run.Slug
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		if files != nil {
			if out, err := store.Accept(ctx, slug, backend.AcceptOptions{Files: files, ReviewSeconds: secs}); err != nil {
				return DoneMsg{Slug: slug, Action: "merge", Outcome: out, Err: fmt.Errorf("accept before the merge: %w", err)}
			}
		}
		out, err := store.Merge(ctx, slug, secs)
		return DoneMsg{Slug: slug, Action: "merge", Outcome: out, Err: err}
	}
}

func (m Model) verdictCmd(verdict transcript.Verdict, secs float64) tea.Cmd {
	store, slug := m.store, m.run.Slug
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		err := store.Verdict(ctx, slug, verdict, "", secs)
		return DoneMsg{Slug: slug, Action: string(verdict), Outcome: backend.Outcome{Message: "recorded verdict '" + string(verdict) + "'"}, Err: err}
	}
}

func (m Model) rejectFeedbackCmd(feedback string, secs float64) tea.Cmd {
	store, launcher, run, slug := m.store, m.launcher, m.run, m.run.Slug
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		if err := store.Verdict(ctx, slug, transcript.VerdictReject, feedback, secs); err != nil {
			return DoneMsg{Slug: slug, Action: "reject with feedback", Err: err}
		}
		l, err := launcher.Resume(ctx, run, feedback)
		if err != nil {
			return DoneMsg{Slug: slug, Action: "reject with feedback", Err: fmt.Errorf("verdict recorded, but the resume did not start: %w", err)}
		}
		return DoneMsg{
			Slug: slug, Action: "reject with feedback", Resumed: &l,
			Outcome: backend.Outcome{Message: "rejected; resumed as " + l.Slug},
		}
	}
}

// resumeCmd resumes the run with feedback, recording no verdict: the
// run stopped short, it was not judged.
func (m Model) resumeCmd(feedback string) tea.Cmd {
	launcher, run, slug := m.launcher, m.run, m.run.Slug
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		if launcher == nil {
			return DoneMsg{Slug: slug, Action: "resume", Err: backend.ErrNotSupported}
		}
		l, err := launcher.Resume(ctx, run, feedback)
		if err != nil {
			return DoneMsg{Slug: slug, Action: "resume", Err: err}
		}
		return DoneMsg{Slug: slug, Action: "resume", Resumed: &l, Outcome: backend.Outcome{Message: "resumed as " + l.Slug}}
	}
}

func (m Model) planCmd() tea.Cmd {
	store, slug := m.store, m.run.Slug
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		p, err := store.PlanClean(ctx, slug)
		return PlanMsg{Slug: slug, Plan: p, Err: err}
	}
}

func (m Model) cleanCmd(secs float64) tea.Cmd {
	store, slug := m.store, m.run.Slug
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		out, err := store.Clean(ctx, slug, secs)
		return DoneMsg{Slug: slug, Action: "clean", Outcome: out, Err: err}
	}
}

func (m Model) stopCmd() tea.Cmd {
	return StopCmd(m.store, m.run.Slug)
}

// StopCmd interrupts a live run (also used from the dashboard).
func StopCmd(store backend.Store, slug string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := store.Stop(ctx, slug)
		return DoneMsg{Slug: slug, Action: "stop", Outcome: backend.Outcome{Message: "asked '" + slug + "' to stop"}, Err: err}
	}
}

// ShortHelp is the review's part of the help bar.
func (m Model) ShortHelp() []key.Binding {
	switch m.modal {
	case modalConfirm:
		return m.ask.ShortHelp()
	case modalFeedback:
		return []key.Binding{m.form.Submit, m.form.Cancel}
	case modalAlert:
		return []key.Binding{key.NewBinding(key.WithKeys("any"), key.WithHelp("any key", "close"))}
	}
	k := m.keys
	return []key.Binding{k.Resume, k.Accept, k.Merge, k.Reject, k.RejectFeedback, k.Clean, k.ToggleFile, k.NextFile, k.NextHunk, k.Back}
}

// FullHelp is the review's part of the full help.
func (m Model) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{
		{k.Accept, k.Merge, k.Reject, k.RejectFeedback, k.Resume, k.Clean},
		{k.ToggleFile, k.NextFile, k.PrevFile, k.NextHunk, k.PrevHunk},
		{k.Down, k.Up, k.Top, k.Bottom, k.HalfDown, k.HalfUp, k.PageDown, k.PageUp},
		{k.Stop, k.Editor, k.Transcript, k.NextReview, k.Back},
	}
}
