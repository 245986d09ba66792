package tui

import (
	"context"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/benchview"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/launch"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/pane"
	"github.com/dirtywork/dirtywork/tui/review"
	"github.com/dirtywork/dirtywork/tui/runinfo"
	"github.com/dirtywork/dirtywork/tui/runlist"
	"github.com/dirtywork/dirtywork/tui/stats"
	"github.com/dirtywork/dirtywork/tui/theme"
	"github.com/dirtywork/dirtywork/tui/transcriptview"
)

// Feed is how the root asks for transcripts and the runs root's changes;
// feed.Feed implements it. Its methods are called only from tea.Cmds.
type Feed interface {
	Follow(slug, path string) error
	Unfollow(slug string)
	Watch(ch <-chan []backend.Change)
}

// Notify says how a run that ends or needs review is announced.
type Notify struct {
	Bell bool
	OSC9 bool
}

// ColorMode chooses light, dark or no colour; Auto asks the terminal.
type ColorMode int

// Colour modes.
const (
	ColorAuto ColorMode = iota
	ColorDark
	ColorLight
	ColorNone
)

// Options configure mission control.
type Options struct {
	Store    backend.Store
	Launcher backend.Launcher
	Feed     Feed
	Keys     keys.Map
	Color    ColorMode
	// MaxParallel is the most runs alive at once (4 when 0).
	MaxParallel int
	Notify      Notify
	// Launch fills the launch form.
	Launch launch.Defaults
	// Queue is launched at start, in order, as slots allow (the demo's
	// four tasks).
	Queue []backend.LaunchSpec
	// Banner is shown under the title (the demo says the model is
	// scripted).
	Banner string
	// Editor is the command that opens a worktree ($VISUAL, $EDITOR).
	Editor []string
	// Now is the clock (tests).
	Now func() time.Time
	// TickEvery is how often elapsed and waiting times are redrawn (1 s
	// when 0; never when negative, for tests).
	TickEvery time.Duration
	// Log receives errors and notable events (the log file); may be nil.
	Log func(format string, args ...any)
	// Context is the program's: what the TUI starts in the background (the
	// runs root's watch) ends with it. Run sets it; nil means never.
	Context context.Context
	// BenchDir is the bench root, where the bench view finds the newest
	// results file.
	BenchDir string
	// BenchOpen starts mission control on the bench view of the results
	// file Bench, or of the newest in BenchDir when Bench is "".
	BenchOpen bool
	Bench     string
	// ReadOnly, when set, makes the session read-only and says why (the
	// SSH watch role): it may look at everything, but every key that
	// would launch, stop, give a verdict, accept, merge, clean, resume or
	// open an editor is refused with "read-only session: <ReadOnly>", and
	// Queue is not launched.
	ReadOnly string
	// NoEditor, when set, refuses the editor key with this line (an SSH
	// session: the editor would run on the server, not the reader's
	// machine).
	NoEditor string
}

type screen int

const (
	screenDashboard screen = iota
	screenReview
	screenTranscript
	screenStats
	screenLaunch
	screenBench
)

func (s screen) String() string {
	switch s {
	case screenReview:
		return "review"
	case screenTranscript:
		return "transcript"
	case screenStats:
		return "stats"
	case screenLaunch:
		return "launch"
	case screenBench:
		return "bench"
	}
	return "dashboard"
}

// paneCount is the number of live panes.
const paneCount = 4

// entry is one run the root knows of.
type entry struct {
	run   backend.Run
	state *live.State // nil unless followed
	// placeholder: launched by us, not yet seen in the store.
	placeholder bool
}

// Model is mission control's root: it routes keys to the focused
// component and data messages to their owners.
type Model struct {
	opts   Options
	styles *theme.Styles
	keys   *keys.Map
	now    time.Time
	// startedAt is when mission control started: runs that ended before
	// are not announced.
	startedAt time.Time

	width, height int
	screen        screen
	focusPane     int // -1: the list has the focus
	zoom          bool

	runs     map[string]*entry
	followed map[string]bool
	loaded   bool
	loadErr  string
	// previewTotal is the root's size while only a preview is shown.
	previewTotal int
	panes        [paneCount]string
	paneViews    [paneCount]pane.Model
	list         runlist.Model

	queue  []*runinfo.Queued
	nextID int
	// launching counts launches handed to the launcher whose run is not
	// yet in the store: they hold a slot.
	launching int

	// paneCache keeps each pane's last drawing (by pointer: View fills
	// it), so a frame redraws only the panes whose run changed.
	paneCache *[paneCount]paneDrawing

	review     *review.Model
	transcript *transcriptview.Model
	stats      stats.Model
	form       *launch.Model
	// draft is a launch form closed with ctrl+c: the next launch opens it
	// again as it was.
	draft *launch.Model
	// ask is the dashboard's confirmation (a stop from the list or a
	// pane); stopSlug is the run it would stop.
	ask      review.Confirm
	stopSlug string
	// bench is the bench view while it is open (its file followed), also
	// under a review opened from it; reviewFrom is the screen a review
	// returns to.
	bench      *benchview.Model
	reviewFrom screen
	// initCmds are Cmds New made, for Init to start.
	initCmds []tea.Cmd

	help     help.Model
	fullHelp bool
	helpTop  int // the first line of the full help shown, when it scrolls

	// listDirty says the runs list needs rebuilding: runs or the queue
	// changed, or a run's live state was replaced. Entries arriving for a
	// followed run need no rebuild (rows hold its state by pointer).
	listDirty bool
	// nRunning and nReview are the title's counts, kept by refreshList.
	nRunning, nReview int

	status    string
	statusErr bool
	quitArmed bool
	watching  bool
}

var _ tea.Model = Model{}

// New builds the root model.
func New(opts Options) Model {
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	km := opts.Keys
	mode := theme.Dark
	switch opts.Color {
	case ColorLight:
		mode = theme.Light
	case ColorNone:
		mode = theme.NoColor
	}
	st := theme.New(mode)
	m := Model{
		opts:      opts,
		styles:    st,
		keys:      &km,
		now:       opts.Now(),
		startedAt: opts.Now(),
		focusPane: -1,
		runs:      map[string]*entry{},
		followed:  map[string]bool{},
		help:      help.New(),
		paneCache: &[paneCount]paneDrawing{},
	}
	m.help.Styles = st.Help
	m.ask = review.NewConfirm(&m.keys.Confirm)
	m.list = runlist.New(st, &m.keys.Runs)
	m.list.SetFocused(true)
	m.list.SetLaunchKey(m.keys.Dashboard.Launch.Help().Key)
	for i := range m.paneViews {
		m.paneViews[i] = pane.New(st, i)
	}
	m.stats = stats.New(st, &m.keys.Stats, nil)
	if opts.ReadOnly == "" {
		for _, spec := range opts.Queue {
			m.enqueue(spec)
		}
	}
	if opts.BenchOpen {
		m.initCmds = append(m.initCmds, m.startBench(opts.Bench))
	}
	return m
}

// Init starts loading the runs, watching the root and the clock.
func (m Model) Init() tea.Cmd {
	cmds := append([]tea.Cmd{m.previewCmd(), m.loadCmd(), m.watchCmd(), m.tickCmd()}, m.initCmds...)
	if m.opts.Color == ColorAuto {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

// paneDrawing is a pane's drawing and what it was drawn from.
type paneDrawing struct {
	key paneKey
	// run is the run drawn, compared apart from key: a record holds
	// slices, so it is not comparable with ==.
	run  backend.Run
	text string
}

// paneKey is everything a pane's drawing depends on, but its run.
type paneKey struct {
	slug    string
	state   *live.State
	version int
	w, h    int
	focused bool
	second  int64
	styles  *theme.Styles
	mode    theme.Mode
}

// tickMsg advances the clock the elapsed and waiting times are drawn with.
type tickMsg time.Time

func (m Model) tickCmd() tea.Cmd {
	every := m.opts.TickEvery
	if every < 0 {
		return nil
	}
	if every == 0 {
		every = time.Second
	}
	return tea.Tick(every, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *Model) setStatus(text string, isErr bool) {
	m.status = text
	m.statusErr = isErr
	if isErr && m.opts.Log != nil {
		m.opts.Log("%s", text)
	}
}

func (m *Model) logf(format string, args ...any) {
	if m.opts.Log != nil {
		m.opts.Log(format, args...)
	}
}
