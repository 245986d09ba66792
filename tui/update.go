package tui

import (
	"os/exec"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/benchview"
	"github.com/dirtywork/dirtywork/tui/feed"
	"github.com/dirtywork/dirtywork/tui/launch"
	"github.com/dirtywork/dirtywork/tui/review"
	"github.com/dirtywork/dirtywork/tui/runinfo"
	"github.com/dirtywork/dirtywork/tui/stats"
	"github.com/dirtywork/dirtywork/tui/theme"
	"github.com/dirtywork/dirtywork/tui/transcriptview"
)

// editorDoneMsg reports the editor's exit.
type editorDoneMsg struct{ err error }

// Update routes a message: data to its owner, keys to the focused screen.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.BackgroundColorMsg:
		if m.opts.Color == ColorAuto {
			mode := theme.Dark
			if !msg.IsDark() {
				mode = theme.Light
			}
			*m.styles = *theme.New(mode)
			m.help.Styles = m.styles.Help
		}
		return m, nil
	case tickMsg:
		m.now = time.Time(msg)
		return m, m.tickCmd()
	case runsPreviewMsg:
		return m.handlePreview(msg)
	case runsLoadedMsg:
		return m.handleLoaded(msg)
	case watchStartedMsg:
		m.watching = msg.err == nil
		if msg.err != nil {
			m.setStatus("cannot watch the runs root: "+termsafe.Line(msg.err.Error()), true)
		}
		return m, nil
	case feed.BatchMsg:
		return m.handleBatch(msg)
	case followedMsg:
		if msg.err != nil {
			delete(m.followed, msg.slug)
			m.setStatus("cannot follow "+termsafe.Line(msg.slug)+": "+termsafe.Line(msg.err.Error()), true)
		}
		return m, nil
	case launchedMsg:
		return m.handleLaunched(msg)
	case editorDoneMsg:
		if msg.err != nil {
			m.setStatus("editor: "+msg.err.Error(), true)
		}
		return m, nil

	case review.LoadedMsg, review.ForecastMsg, review.HighlightedMsg, review.PlanMsg:
		if m.review == nil {
			return m, nil
		}
		if lm, ok := msg.(review.LoadedMsg); ok {
			m.logf("review of %s loaded in %s (%d files)", lm.Slug, lm.Took, len(lm.Files))
		}
		rv, cmd := m.review.Update(msg)
		m.review = &rv
		return m, cmd
	case transcriptview.FullEntryMsg:
		if m.transcript != nil {
			tv, cmd := m.transcript.Update(msg)
			m.transcript = &tv
			return m, cmd
		}
		return m, nil
	case review.DoneMsg:
		return m.handleDone(msg)
	case review.CloseMsg:
		m.leaveReview()
		return m.settle(nil)
	case transcriptview.CloseMsg, stats.CloseMsg:
		return m.closeScreen()
	case review.NextMsg:
		if m.reviewFrom == screenBench && m.bench != nil {
			return m.nextBenchReview()
		}
		return m.openNextReview()
	case benchview.Msg:
		if m.bench == nil {
			return m, nil
		}
		b, cmd := m.bench.Update(msg)
		m.bench = &b
		return m, cmd
	case benchview.CloseMsg:
		return m.closeBench()
	case benchview.ReviewMsg:
		return m.openBenchReview(msg.Slug)
	case review.EditorMsg:
		return m.openEditor(msg.Dir)
	case review.TranscriptMsg:
		return m.openTranscript(msg.Slug)
	case launch.SubmitMsg:
		if m.opts.ReadOnly != "" {
			// The form never opens read-only; refused here as well so no
			// path to a launch is left.
			m.form, m.draft, m.screen = nil, nil, screenDashboard
			m.setStatus(m.readOnlyRefusal(), true)
			return m, nil
		}
		m.form = nil
		m.draft = nil
		m.screen = screenDashboard
		q := m.enqueue(msg.Spec)
		m.setStatus("queued: "+termsafe.Line(firstLine(msg.Spec.Task)), false)
		m2, cmd := m.settle(nil)
		m2.list.SelectKey(queueKey(q))
		return m2, cmd
	case launch.CancelMsg:
		m.form = nil
		m.screen = screenDashboard
		return m, nil
	case launch.ModelsMsg, launch.CompletionsMsg:
		if m.form == nil {
			return m, nil
		}
		f, cmd := m.form.Update(msg)
		m.form = &f
		return m, cmd
	case tea.KeyPressMsg:
		return m.handleKey(msg)
	}
	return m.forwardToScreen(msg)
}

// forwardToScreen hands other messages (cursor blinks) to the open screen.
func (m Model) forwardToScreen(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch m.screen {
	case screenLaunch:
		if m.form != nil {
			f, c := m.form.Update(msg)
			m.form, cmd = &f, c
		}
	case screenReview:
		if m.review != nil {
			rv, c := m.review.Update(msg)
			m.review, cmd = &rv, c
		}
	case screenTranscript:
		if m.transcript != nil {
			tv, c := m.transcript.Update(msg)
			m.transcript, cmd = &tv, c
		}
	case screenDashboard:
		m.list, cmd = m.list.Update(msg)
	}
	return m, cmd
}

func queueKey(q *runinfo.Queued) string { return "queued:" + itoa(q.ID) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// capturing reports whether a text box has the keys (then only ctrl+c
// is global).
func (m Model) capturing() bool {
	switch m.screen {
	case screenLaunch:
		return true
	case screenReview:
		return m.review != nil && m.review.Capturing()
	case screenTranscript:
		return m.transcript != nil && m.transcript.Capturing()
	case screenDashboard:
		return m.list.Filtering()
	}
	return false
}

func (m Model) handleKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	// In a text box ctrl+c closes the box and keeps its text; it never
	// quits and drops what was typed.
	if k.String() == "ctrl+c" && m.capturing() {
		m.quitArmed = false
		return m.closeInput()
	}
	// q quits from the dashboard alone (every other screen takes it as
	// back); ctrl+c quits from anywhere else.
	quitting := key.Matches(k, m.keys.Common.Quit)
	if quitting && k.String() == "ctrl+c" {
		return m.quit()
	}
	if m.ask.Open() && m.screen == screenDashboard {
		return m.answerStop(k)
	}
	if quitting && m.screen == screenDashboard && !m.capturing() {
		return m.quit()
	}
	m.quitArmed = false
	if !m.capturing() && key.Matches(k, m.keys.Common.Help) && m.screen != screenLaunch {
		m.fullHelp = !m.fullHelp
		m.helpTop = 0
		m.layout()
		return m, nil
	}
	if m.fullHelp && !m.capturing() && m.scrollHelp(k) {
		return m, nil
	}
	if m.refuseReadOnly(k) {
		return m, nil
	}
	switch m.screen {
	case screenReview:
		if m.review == nil {
			return m.closeScreen()
		}
		rv, cmd := m.review.Update(k)
		asked := rv.Take()
		m.review = &rv
		return m.follow(asked, cmd)
	case screenTranscript:
		tv, cmd := m.transcript.Update(k)
		asked := tv.Take()
		m.transcript = &tv
		return m.follow(asked, cmd)
	case screenStats:
		st, cmd := m.stats.Update(k)
		asked := st.Take()
		m.stats = st
		return m.follow(asked, cmd)
	case screenLaunch:
		f, cmd := m.form.Update(k)
		asked := f.Take()
		m.form = &f
		return m.follow(asked, cmd)
	case screenBench:
		if m.bench == nil {
			return m.closeScreen()
		}
		b, cmd := m.bench.Update(k)
		asked := b.Take()
		m.bench = &b
		return m.follow(asked, cmd)
	}
	return m.dashboardKey(k)
}

// closeInput closes the text box that has the keys without acting on it;
// what was typed is there when the box opens again.
func (m Model) closeInput() (tea.Model, tea.Cmd) {
	switch m.screen {
	case screenLaunch:
		// The form itself is kept: the next launch key reopens it with
		// every field as it was.
		m.draft = m.form
		m.form = nil
		m.screen = screenDashboard
		m.setStatus("launch form closed; "+m.keys.Dashboard.Launch.Help().Key+" opens it again as it was", false)
		m.layout()
		return m, nil
	case screenReview:
		if m.review != nil {
			m.review.CloseInput()
		}
	case screenTranscript:
		if m.transcript != nil {
			m.transcript.CloseInput()
		}
	case screenDashboard:
		// Enter leaves the filter box with its text in place (and applied):
		// the next / opens the box on it.
		var cmd tea.Cmd
		m.list, cmd = m.list.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
		return m, cmd
	}
	return m, nil
}

// answerStop takes the answer to the dashboard's stop question.
func (m Model) answerStop(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch m.ask.Answer(k) {
	case review.Yes:
		slug := m.stopSlug
		m.stopSlug = ""
		m.setStatus("stopping "+termsafe.Line(slug)+"…", false)
		return m, review.StopCmd(m.opts.Store, slug)
	case review.No:
		m.stopSlug = ""
		m.setStatus("", false)
	}
	return m, nil
}

// follow acts on what a screen's key asked for (see package intent) in this
// same update, so the next key already reaches the screen it leads to.
func (m Model) follow(asked tea.Msg, cmd tea.Cmd) (tea.Model, tea.Cmd) {
	if asked == nil {
		return m, cmd
	}
	next, more := m.Update(asked)
	return next, tea.Batch(cmd, more)
}

// quit leaves at once unless launches are queued: they start only while
// mission control runs, so the first press says so and the second quits.
func (m Model) quit() (tea.Model, tea.Cmd) {
	waiting := 0
	for _, q := range m.queue {
		if !q.Launching && q.Err == "" {
			waiting++
		}
	}
	if waiting > 0 && !m.quitArmed {
		m.quitArmed = true
		m.setStatus(itoa(waiting)+" queued launches will not start if you quit; press "+m.keys.Common.Quit.Help().Key+" again to quit", true)
		return m, nil
	}
	return m, tea.Quit
}

func (m Model) dashboardKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	d, r := &m.keys.Dashboard, &m.keys.Runs
	if m.list.Filtering() {
		var cmd tea.Cmd
		m.list, cmd = m.list.Update(k)
		return m, cmd
	}
	switch {
	case key.Matches(k, d.Launch):
		return m.openForm()
	case key.Matches(k, d.Stats):
		m.screen = screenStats
		m.stats.SetRuns(m.runList())
		m.layout()
		return m, nil
	case key.Matches(k, d.Bench):
		cmd := m.startBench("")
		return m, cmd
	case key.Matches(k, d.NextReview):
		return m.openNextReview()
	case key.Matches(k, d.FocusNext):
		m.cycleFocus()
		return m, nil
	case key.Matches(k, d.Zoom):
		// The focused pane, or the list (then with every column), takes
		// the whole area.
		m.zoom = !m.zoom
		m.layout()
		return m, nil
	case key.Matches(k, d.Pane1, d.Pane2, d.Pane3, d.Pane4):
		for i, b := range []key.Binding{d.Pane1, d.Pane2, d.Pane3, d.Pane4} {
			if key.Matches(k, b) {
				m.setFocus(i)
			}
		}
		return m, nil
	case k.String() == "esc":
		if m.zoom {
			m.zoom = false
			m.layout()
		} else if m.focusPane >= 0 {
			m.setFocus(-1)
		} else {
			m.list.ClearFilter()
		}
		return m, nil
	}
	it, ok := m.selected()
	switch {
	case key.Matches(k, r.Open):
		if !ok {
			return m, nil
		}
		return m.openItem(it)
	case key.Matches(k, r.Transcript):
		if !ok || it.Queued != nil {
			return m, nil
		}
		return m.openTranscript(it.Key)
	case key.Matches(k, r.Stop):
		if !ok || !it.Run.Live() {
			m.setStatus("only a running run can be stopped", true)
			return m, nil
		}
		m.stopSlug = it.Key
		m.ask.Ask(review.StopLine(it.Run), "stop")
		return m, nil
	case key.Matches(k, r.Editor):
		if !ok || it.Run.Worktree == "" {
			return m, nil
		}
		return m.openEditor(it.Run.Worktree)
	case key.Matches(k, r.Dismiss):
		if ok && it.Queued != nil && !it.Queued.Launching {
			m.dropQueued(it.Queued.ID)
			m.refreshList()
		}
		return m, nil
	}
	if m.focusPane < 0 {
		var cmd tea.Cmd
		m.list, cmd = m.list.Update(k)
		return m, cmd
	}
	return m, nil
}

func (m *Model) dropQueued(id int) {
	for i, q := range m.queue {
		if q.ID == id {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			return
		}
	}
}

// selected is the item the run keys act on: the focused pane's, else the
// list's cursor row.
func (m Model) selected() (runinfo.Item, bool) {
	if m.focusPane >= 0 {
		if it := m.item(m.panes[m.focusPane]); it != nil {
			return *it, true
		}
		return runinfo.Item{}, false
	}
	return m.list.Selected()
}

func (m *Model) setFocus(p int) {
	m.focusPane = p
	m.list.SetFocused(p < 0)
	for i := range m.paneViews {
		m.paneViews[i].SetFocused(i == p)
	}
	m.layout()
}

func (m *Model) cycleFocus() {
	next := m.focusPane + 1
	if next >= paneCount {
		next = -1
	}
	m.setFocus(next)
}

func (m Model) openItem(it runinfo.Item) (tea.Model, tea.Cmd) {
	switch {
	case it.Queued != nil:
		m.setStatus("queued: it starts when a slot is free ("+m.keys.Runs.Dismiss.Help().Key+" drops it)", false)
		return m, nil
	case it.Run.Live():
		return m.openTranscript(it.Key)
	}
	return m.openReview(it.Run)
}

func (m Model) openReview(r backend.Run) (tea.Model, tea.Cmd) {
	rv := review.New(m.styles, m.keys, m.opts.Store, m.opts.Launcher, r, m.opts.Now)
	m.review = &rv
	m.screen = screenReview
	m.layout()
	return m, review.LoadCmd(m.opts.Store, r.Slug)
}

func (m Model) openNextReview() (tea.Model, tea.Cmd) {
	except := ""
	if m.review != nil {
		except = m.review.Slug()
	}
	r, ok := m.nextReview(except)
	if !ok {
		m.setStatus("no run is waiting for review", false)
		if m.screen == screenReview {
			return m.closeScreen()
		}
		return m, nil
	}
	return m.openReview(r)
}

func (m Model) openTranscript(slug string) (tea.Model, tea.Cmd) {
	e := m.runs[slug]
	if e == nil {
		return m, nil
	}
	tv := transcriptview.New(m.styles, &m.keys.Transcript, slug, e.run.Transcript, e.state)
	m.transcript = &tv
	m.screen = screenTranscript
	m.layout()
	m2, cmd := m.settle(nil)
	if e2 := m2.runs[slug]; e2 != nil {
		m2.transcript.SetState(e2.state)
	}
	return m2, cmd
}

func (m Model) closeScreen() (tea.Model, tea.Cmd) {
	m.screen = screenDashboard
	m.review = nil
	m.transcript = nil
	m.layout()
	return m.settle(nil)
}

func (m Model) openForm() (tea.Model, tea.Cmd) {
	f := launch.New(m.styles, &m.keys.Form, m.opts.Launch)
	if m.draft != nil {
		f, m.draft = *m.draft, nil
	}
	m.form = &f
	m.screen = screenLaunch
	m.layout()
	var cmd tea.Cmd
	if m.opts.Launcher != nil {
		cmd = launch.ModelsCmd(m.opts.Launcher, m.opts.Launch.BaseURL)
	}
	return m, tea.Batch(cmd, m.form.Focus())
}

// openFormWith reopens the form on a refused launch.
func (m *Model) openFormWith(spec backend.LaunchSpec, err error) {
	f := launch.New(m.styles, &m.keys.Form, m.opts.Launch)
	f.Fill(spec)
	f.SetRefusal(err)
	// The form takes the screen: a stop question open on the dashboard
	// would answer keys typed into it.
	m.ask.Close()
	m.stopSlug = ""
	m.form = &f
	m.screen = screenLaunch
	m.layout()
}

// handleDone takes a finished review action.
func (m Model) handleDone(msg review.DoneMsg) (tea.Model, tea.Cmd) {
	if msg.Err != nil {
		m.setStatus(msg.Action+" failed: "+termsafe.Line(msg.Err.Error()), true)
	} else {
		text := msg.Outcome.Message
		if text == "" {
			text = msg.Action + " done"
		}
		for _, w := range msg.Outcome.Warnings {
			text += " · warning: " + w
		}
		m.setStatus(termsafe.Line(text), len(msg.Outcome.Warnings) > 0)
		if e := m.runs[msg.Slug]; e != nil {
			m.listDirty = true
			switch msg.Action {
			case "accept", "merge":
				e.run.Verdict = transcript.VerdictAccept
			case "reject", "reject with feedback":
				e.run.Verdict = transcript.VerdictReject
			case "clean":
				e.run.Verdict = transcript.VerdictCleanup
			}
		}
	}
	if m.review != nil && m.review.Slug() == msg.Slug {
		rv, _ := m.review.Update(msg)
		m.review = &rv
		if msg.Err == nil && msg.Action != "stop" {
			m.leaveReview()
		}
	}
	return m.settle(nil)
}

// editorCmd suspends the UI and opens dir in the editor.
func (m Model) editorCmd(dir string) tea.Cmd {
	argv := m.opts.Editor
	if len(argv) == 0 {
		argv = []string{"vi"}
	}
	c := exec.Command(argv[0], append(append([]string{}, argv[1:]...), dir)...) //nolint:gosec // the operator's own editor
	c.Dir = dir
	return tea.ExecProcess(c, func(err error) tea.Msg { return editorDoneMsg{err: err} })
}
