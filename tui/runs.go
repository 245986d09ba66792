package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/feed"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/runinfo"
)

// runsLoadedMsg carries the first listing of the runs root.
type runsLoadedMsg struct {
	runs []backend.Run
	err  error
	took time.Duration
}

// runsPreviewMsg carries the most recently active runs, read before the
// whole root so the first frame has them.
type runsPreviewMsg struct {
	runs  []backend.Run
	total int
	err   error
}

// previewRuns is how many runs the first frame reads ahead of the rest.
const previewRuns = 200

func (m Model) previewCmd() tea.Cmd {
	p, ok := m.opts.Store.(backend.Previewer)
	if !ok {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		runs, total, err := p.Recent(ctx, previewRuns)
		return runsPreviewMsg{runs: runs, total: total, err: err}
	}
}

// handlePreview shows the recent runs until the whole listing arrives.
func (m Model) handlePreview(msg runsPreviewMsg) (Model, tea.Cmd) {
	if m.loaded || msg.err != nil {
		return m, nil
	}
	for _, r := range msg.runs {
		if m.runs[r.Slug] == nil {
			m.runs[r.Slug] = &entry{run: r}
		}
	}
	m.previewTotal = msg.total
	m.listDirty = true
	m.refreshList()
	return m, nil
}

// watchStartedMsg says whether the runs root watch is in place.
type watchStartedMsg struct{ err error }

// followedMsg reports a Follow that failed.
type followedMsg struct {
	slug string
	err  error
}

// launchedMsg reports a launch handed to the launcher.
type launchedMsg struct {
	id       int
	spec     backend.LaunchSpec
	launched backend.Launched
	err      error
}

func (m Model) loadCmd() tea.Cmd {
	store := m.opts.Store
	return func() tea.Msg {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		runs, err := store.List(ctx)
		return runsLoadedMsg{runs: runs, err: err, took: time.Since(start)}
	}
}

func (m Model) watchCmd() tea.Cmd {
	store, fd, ctx := m.opts.Store, m.opts.Feed, m.opts.Context
	if fd == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return func() tea.Msg {
		// The watch lives as long as the program: its context ends with
		// the program's (the channel closes then).
		ch, err := store.Watch(ctx)
		if err != nil {
			return watchStartedMsg{err: err}
		}
		fd.Watch(ch)
		return watchStartedMsg{}
	}
}

func followCmd(fd Feed, slug, path string) tea.Cmd {
	if fd == nil {
		return nil
	}
	return func() tea.Msg {
		return followedMsg{slug: slug, err: fd.Follow(slug, path)}
	}
}

func unfollowCmd(fd Feed, slug string) tea.Cmd {
	if fd == nil {
		return nil
	}
	return func() tea.Msg {
		fd.Unfollow(slug)
		return nil
	}
}

func launchCmd(l backend.Launcher, id int, spec backend.LaunchSpec) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		got, err := l.Launch(ctx, spec)
		return launchedMsg{id: id, spec: spec, launched: got, err: err}
	}
}

// handleLoaded takes the first listing.
func (m Model) handleLoaded(msg runsLoadedMsg) (Model, tea.Cmd) {
	m.loaded = true
	m.previewTotal = 0
	if msg.err != nil {
		m.loadErr = msg.err.Error()
		m.setStatus("cannot list the runs: "+termsafe.Line(msg.err.Error()), true)
	}
	m.logf("listed %d runs in %s", len(msg.runs), msg.took)
	m.listDirty = true
	for _, r := range msg.runs {
		e := m.runs[r.Slug]
		if e == nil {
			e = &entry{}
			m.runs[r.Slug] = e
		}
		e.run = r
		e.placeholder = false
	}
	m.assignPanes()
	m.fillIdlePanes()
	return m.settle(nil)
}

// handleBatch applies what the feed collected.
func (m Model) handleBatch(b feed.BatchMsg) (Model, tea.Cmd) {
	var cmds []tea.Cmd
	for _, c := range b.Changes {
		cmds = append(cmds, m.applyChange(c))
	}
	if len(b.Changes) > 0 {
		m.listDirty = true
	}
	if b.WatchErr != nil {
		m.setStatus("watching the runs root failed: "+termsafe.Line(b.WatchErr.Error()), true)
	}
	for _, slug := range b.Order {
		if !m.followed[slug] {
			continue // unfollowed meanwhile: these are stale
		}
		e := m.runs[slug]
		if e == nil {
			continue
		}
		for _, ent := range b.Entries[slug] {
			if ent.Kind == live.KindReset {
				e.state = &live.State{}
				m.listDirty = true
				if m.transcript != nil && m.transcript.Slug() == slug {
					m.transcript.SetState(e.state)
				}
				continue
			}
			if e.state == nil {
				e.state = &live.State{}
				m.listDirty = true
			}
			e.state.Apply(ent)
			if ent.Terminal() && e.placeholder {
				// The run ended before the store reported it: its record
				// is final now.
				e.run.Status = transcript.Status(ent.Status)
				e.run.Alive = false
				e.placeholder = false
				m.launching = max(0, m.launching-1)
				m.listDirty = true
			}
		}
		if m.transcript != nil && m.transcript.Slug() == slug {
			m.transcript.Sync()
			cmds = append(cmds, m.transcript.WholeCmd())
		}
	}
	m2, cmd := m.settle(cmds)
	return m2, cmd
}

// applyChange records one change of the runs root and returns what it
// calls for (a notification).
func (m *Model) applyChange(c backend.Change) tea.Cmd {
	slug := c.Run.Slug
	if c.Removed {
		delete(m.runs, slug)
		return nil
	}
	e := m.runs[slug]
	if e == nil {
		e = &entry{}
		m.runs[slug] = e
	}
	was := e.run
	wasKnown := was.Slug != ""
	if e.placeholder {
		e.placeholder = false
		m.launching = max(0, m.launching-1)
	}
	e.run = c.Run
	if m.review != nil && m.review.Slug() == slug {
		m.review.SetRun(c.Run)
	}
	switch {
	case wasKnown && was.Live() && !c.Run.Live():
		return m.notify(c.Run)
	case !wasKnown && m.loaded && c.Run.Phase() == backend.PhaseReview && c.Run.EndedAt().After(m.startedAt):
		// A run that began and ended while we were not looking (started
		// elsewhere, and quick): it needs review all the same.
		return m.notify(c.Run)
	}
	return nil
}

// notify announces a run that ended.
func (m *Model) notify(r backend.Run) tea.Cmd {
	what := "ended " + string(r.Status)
	if r.Phase() == backend.PhaseReview {
		what += ", needs review"
	}
	if r.Phase() == backend.PhaseDead {
		what = "died"
	}
	text := fmt.Sprintf("dirtywork: %s %s", termsafe.Line(r.Slug), what)
	m.setStatus(text, false)
	var cmds []tea.Cmd
	if m.opts.Notify.Bell {
		cmds = append(cmds, tea.Raw("\a"))
	}
	if m.opts.Notify.OSC9 {
		cmds = append(cmds, tea.Raw(ansi.Notify(text)))
	}
	return tea.Batch(cmds...)
}

// settle brings panes, follows, the queue and the list up to date after
// runs changed.
func (m Model) settle(cmds []tea.Cmd) (Model, tea.Cmd) {
	m.assignPanes()
	cmds = append(cmds, m.syncFollows()...)
	cmds = append(cmds, m.startQueued()...)
	if m.listDirty {
		if m.bench != nil {
			// A verdict may have been given: the bench counts it.
			m.bench.RunsChanged()
		}
		m.refreshList()
	}
	if m.stats.Grouping() >= 0 && m.screen == screenStats {
		m.stats.SetRuns(m.runList())
	}
	return m, tea.Batch(cmds...)
}

// liveCount is the number of runs holding a slot: alive in the root, or
// launched by us and not yet seen there.
func (m Model) liveCount() int {
	n := m.launching
	for _, e := range m.runs {
		if e.run.Live() && !e.placeholder {
			n++
		}
	}
	return n
}

// startQueued launches queued runs while slots are free.
func (m *Model) startQueued() []tea.Cmd {
	if !m.loaded || m.opts.Launcher == nil {
		return nil
	}
	var cmds []tea.Cmd
	for _, q := range m.queue {
		if m.liveCount() >= m.opts.MaxParallel {
			break
		}
		if q.Launching || q.Err != "" {
			continue
		}
		q.Launching = true
		m.launching++
		m.listDirty = true
		cmds = append(cmds, launchCmd(m.opts.Launcher, q.ID, q.Spec))
	}
	return cmds
}

func (m *Model) enqueue(spec backend.LaunchSpec) *runinfo.Queued {
	m.nextID++
	q := &runinfo.Queued{ID: m.nextID, Spec: spec, At: m.opts.Now()}
	m.queue = append(m.queue, q)
	m.listDirty = true
	return q
}

// handleLaunched takes the launcher's answer.
func (m Model) handleLaunched(msg launchedMsg) (Model, tea.Cmd) {
	i := slices.IndexFunc(m.queue, func(q *runinfo.Queued) bool { return q.ID == msg.id })
	if i < 0 {
		return m, nil
	}
	q := m.queue[i]
	m.listDirty = true
	if msg.err != nil {
		m.launching = max(0, m.launching-1)
		q.Launching = false
		q.Err = msg.err.Error()
		var refused *backend.RefusedError
		if errors.As(msg.err, &refused) {
			m.setStatus("launch refused: "+termsafe.Line(refused.Error()), true)
		} else {
			m.setStatus("launch failed: "+termsafe.Line(msg.err.Error()), true)
		}
		if m.screen == screenDashboard {
			m.openFormWith(q.Spec, msg.err)
		}
		m.queue = slices.Delete(m.queue, i, i+1)
		return m.settle(nil)
	}
	m.queue = slices.Delete(m.queue, i, i+1)
	l := msg.launched
	if e := m.runs[l.Slug]; e != nil {
		// The store reported it first: its slot is counted there.
		m.launching = max(0, m.launching-1)
	} else {
		m.runs[l.Slug] = &entry{placeholder: true, run: backend.Run{
			RunRecord: transcript.RunRecord{
				Slug: l.Slug, Repo: msg.spec.Repo, Task: msg.spec.Task, Model: msg.spec.Model, Sandbox: msg.spec.Sandbox,
				Status: transcript.StatusRunning, Started: transcript.FormatTime(m.opts.Now()),
			},
			RunDir: l.RunDir, Transcript: l.Transcript, Alive: true,
		}}
	}
	m.setStatus(fmt.Sprintf("launched %s", termsafe.Line(l.Slug)), false)
	return m.settle(nil)
}

// assignPanes gives every live run a pane if it can: a pane keeps its run
// until another live run needs it; ended runs give way oldest first.
func (m *Model) assignPanes() {
	for i, slug := range m.panes {
		if slug != "" && m.runs[slug] == nil {
			m.panes[i] = ""
		}
	}
	var waiting []*entry
	for _, e := range m.runs {
		if e.run.Live() && !slices.Contains(m.panes[:], e.run.Slug) {
			waiting = append(waiting, e)
		}
	}
	sortByStart(waiting, false)
	for _, e := range waiting {
		slot := slices.Index(m.panes[:], "")
		if slot < 0 {
			// Replace the ended run that ended first.
			var oldest time.Time
			for i, slug := range m.panes {
				r := m.runs[slug].run
				if r.Live() {
					continue
				}
				end := cmp.Or(r.EndedAt(), r.StartedAt())
				if slot < 0 || end.Before(oldest) {
					slot, oldest = i, end
				}
			}
		}
		if slot < 0 {
			return // four live runs already on screen
		}
		m.panes[slot] = e.run.Slug
	}
}

// fillIdlePanes shows the newest runs waiting for review in free panes.
func (m *Model) fillIdlePanes() {
	var cands []*entry
	for _, e := range m.runs {
		if e.run.Phase() == backend.PhaseReview && !slices.Contains(m.panes[:], e.run.Slug) {
			cands = append(cands, e)
		}
	}
	sortByStart(cands, true)
	for _, e := range cands {
		slot := slices.Index(m.panes[:], "")
		if slot < 0 {
			return
		}
		m.panes[slot] = e.run.Slug
	}
}

// sortByStart orders es by when their runs started, oldest first or
// newest first, reading each run's start once (run.json records it as
// text).
func sortByStart(es []*entry, newestFirst bool) {
	type keyed struct {
		e  *entry
		at time.Time
	}
	ks := make([]keyed, len(es))
	for i, e := range es {
		ks[i] = keyed{e, e.run.StartedAt()}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if newestFirst {
			a, b = b, a
		}
		return a.at.Compare(b.at)
	})
	for i, k := range ks {
		es[i] = k.e
	}
}

// wantFollowed is the set of runs whose transcripts are followed: live
// runs, runs in panes and the open transcript.
func (m Model) wantFollowed() map[string]bool {
	want := map[string]bool{}
	for slug, e := range m.runs {
		if e.run.Live() {
			want[slug] = true
		}
	}
	for _, slug := range m.panes {
		if slug != "" {
			want[slug] = true
		}
	}
	if m.transcript != nil {
		want[m.transcript.Slug()] = true
	}
	return want
}

// syncFollows starts and stops followers to match wantFollowed; the state
// of a run no longer followed is dropped (the transcript is on disk).
func (m *Model) syncFollows() []tea.Cmd {
	want := m.wantFollowed()
	var cmds []tea.Cmd
	for slug := range want {
		if m.followed[slug] {
			continue
		}
		e := m.runs[slug]
		if e == nil || e.run.Transcript == "" {
			continue
		}
		m.followed[slug] = true
		e.state = &live.State{}
		m.listDirty = true
		cmds = append(cmds, followCmd(m.opts.Feed, slug, e.run.Transcript))
	}
	for slug := range m.followed {
		if want[slug] {
			continue
		}
		delete(m.followed, slug)
		if e := m.runs[slug]; e != nil {
			e.state = nil
			m.listDirty = true
		}
		cmds = append(cmds, unfollowCmd(m.opts.Feed, slug))
	}
	return cmds
}

// item is the run as the list and panes draw it.
func (m Model) item(slug string) *runinfo.Item {
	e := m.runs[slug]
	if e == nil {
		return nil
	}
	return &runinfo.Item{Key: slug, Run: e.run, State: e.state}
}

func (m *Model) refreshList() {
	m.listDirty = false
	m.recount()
	items := make([]runinfo.Item, 0, len(m.runs)+len(m.queue))
	for slug, e := range m.runs {
		items = append(items, runinfo.Item{Key: slug, Run: e.run, State: e.state})
	}
	for _, q := range m.queue {
		items = append(items, runinfo.Item{Key: fmt.Sprintf("queued:%d", q.ID), Queued: q})
	}
	m.list.SetItems(items)
}

func (m Model) runList() []backend.Run {
	out := make([]backend.Run, 0, len(m.runs))
	for _, e := range m.runs {
		out = append(out, e.run)
	}
	return out
}

// nextReview is the run waiting for review longest (oldest end first).
func (m Model) nextReview(except string) (backend.Run, bool) {
	var best *entry
	var bestEnd time.Time
	for _, e := range m.runs {
		r := &e.run
		if r.Phase() != backend.PhaseReview || r.Slug == except {
			continue
		}
		end := cmp.Or(r.EndedAt(), r.StartedAt())
		if best == nil || end.Before(bestEnd) || end.Equal(bestEnd) && r.Slug < best.run.Slug {
			best, bestEnd = e, end
		}
	}
	if best == nil {
		return backend.Run{}, false
	}
	return best.run, true
}

// counts are the header's numbers (counted when the list is rebuilt,
// not on every frame).
func (m Model) counts() (running, review, queued int) {
	return m.nRunning, m.nReview, len(m.queue)
}

// recount counts the runs running and waiting for review.
func (m *Model) recount() {
	m.nRunning, m.nReview = 0, 0
	for _, e := range m.runs {
		switch e.run.Phase() {
		case backend.PhaseRunning:
			m.nRunning++
		case backend.PhaseReview:
			m.nReview++
		}
	}
}
