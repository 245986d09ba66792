// Package keys holds mission control's key maps: one struct of
// key.Binding per context (the global keys, the runs list and the panes,
// the review, the transcript, the launch form, dialogs, the stats and the
// bench view), so
// every component matches keys with key.Matches and the help bar shows
// exactly what is bound. Any binding can be changed from the [tui.keys]
// table of the config file; Rebind applies such a table and refuses keys
// that would collide.
package keys

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
)

// Common are the keys that work on every screen but the launch form.
// Quit's q quits from the dashboard only; elsewhere q goes back, and
// ctrl+c quits everywhere but in a text box, where it closes the box.
type Common struct {
	Quit key.Binding
	Help key.Binding
}

// Dashboard are the keys of the main screen, whatever has the focus.
type Dashboard struct {
	Launch     key.Binding
	Stats      key.Binding
	Bench      key.Binding
	NextReview key.Binding
	FocusNext  key.Binding
	Zoom       key.Binding
	Pane1      key.Binding
	Pane2      key.Binding
	Pane3      key.Binding
	Pane4      key.Binding
}

// Runs are the keys that act on the selected run, in the list or a pane.
type Runs struct {
	Up         key.Binding
	Down       key.Binding
	Top        key.Binding
	Bottom     key.Binding
	HalfDown   key.Binding
	HalfUp     key.Binding
	PageDown   key.Binding
	PageUp     key.Binding
	Filter     key.Binding
	Open       key.Binding
	Transcript key.Binding
	Stop       key.Binding
	Editor     key.Binding
	Dismiss    key.Binding
}

// Review are the keys of the diff review.
type Review struct {
	Accept         key.Binding
	Merge          key.Binding
	Reject         key.Binding
	RejectFeedback key.Binding
	// Resume continues a run that stopped short (stopped, dead, out of
	// turns, stalled) with feedback, recording no verdict.
	Resume     key.Binding
	Clean      key.Binding
	ToggleFile key.Binding
	NextFile   key.Binding
	PrevFile   key.Binding
	NextHunk   key.Binding
	PrevHunk   key.Binding
	// Down, Up, Top, Bottom and the page keys move through the selected
	// file's diff, with the same keys as every other view that scrolls.
	Down       key.Binding
	Up         key.Binding
	Top        key.Binding
	Bottom     key.Binding
	HalfDown   key.Binding
	HalfUp     key.Binding
	PageDown   key.Binding
	PageUp     key.Binding
	Stop       key.Binding
	Editor     key.Binding
	NextReview key.Binding
	Transcript key.Binding
	Back       key.Binding
}

// Transcript are the keys of the focused transcript view.
type Transcript struct {
	Prev      key.Binding
	Next      key.Binding
	Up        key.Binding
	Down      key.Binding
	First     key.Binding
	Last      key.Binding
	Expand    key.Binding
	Search    key.Binding
	NextMatch key.Binding
	PrevMatch key.Binding
	Follow    key.Binding
	HalfDown  key.Binding
	HalfUp    key.Binding
	PageDown  key.Binding
	PageUp    key.Binding
	Back      key.Binding
}

// Form are the keys of the launch form and the feedback box.
type Form struct {
	Next   key.Binding
	Prev   key.Binding
	Submit key.Binding
	Cancel key.Binding
	Cycle  key.Binding // changes a choice field (the sandbox, the model)
	// Complete completes the repository path or the model id (tab only
	// moves between fields).
	Complete key.Binding
}

// Confirm are the keys of a yes/no dialog.
type Confirm struct {
	Yes key.Binding
	No  key.Binding
}

// Stats are the keys of the statistics view.
type Stats struct {
	Up       key.Binding
	Down     key.Binding
	Top      key.Binding
	Bottom   key.Binding
	HalfDown key.Binding
	HalfUp   key.Binding
	PageDown key.Binding
	PageUp   key.Binding
	Group    key.Binding
	Back     key.Binding
}

// Bench are the keys of the bench view's tables: the cursor moves over
// the cases of the tasks × models table, one mark per repeat.
type Bench struct {
	Up             key.Binding
	Down           key.Binding
	Left           key.Binding
	Right          key.Binding
	Open           key.Binding
	NextUnreviewed key.Binding
	Back           key.Binding
}

// BenchCase are the keys of one bench case.
type BenchCase struct {
	// Review opens the case's run in the review, with its verdict keys.
	Review         key.Binding
	ScrollDown     key.Binding
	ScrollUp       key.Binding
	PageDown       key.Binding
	PageUp         key.Binding
	NextUnreviewed key.Binding
	Back           key.Binding
}

// Map is every key map.
type Map struct {
	Common     Common
	Dashboard  Dashboard
	Runs       Runs
	Review     Review
	Transcript Transcript
	Form       Form
	Confirm    Confirm
	Stats      Stats
	Bench      Bench
	BenchCase  BenchCase
}

func bind(help string, keys ...string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(helpKeys(keys), help))
}

// helpKeys is how a binding's keys read in the help bar.
func helpKeys(keys []string) string {
	shown := make([]string, 0, len(keys))
	for _, k := range keys {
		switch k {
		case "up":
			k = "↑"
		case "down":
			k = "↓"
		case "left":
			k = "←"
		case "right":
			k = "→"
		}
		shown = append(shown, k)
	}
	return strings.Join(shown, "/")
}

// Default returns the default key maps.
func Default() Map {
	return Map{
		Common: Common{
			Quit: bind("quit", "q", "ctrl+c"),
			Help: bind("help", "?"),
		},
		Dashboard: Dashboard{
			Launch:     bind("launch", "L"),
			Stats:      bind("stats", "S"),
			Bench:      bind("bench", "B"),
			NextReview: bind("next review", "n"),
			FocusNext:  bind("focus", "tab"),
			Zoom:       bind("zoom", "z"),
			Pane1:      bind("pane 1", "1"),
			Pane2:      bind("pane 2", "2"),
			Pane3:      bind("pane 3", "3"),
			Pane4:      bind("pane 4", "4"),
		},
		Runs: Runs{
			Up:         bind("up", "up", "k"),
			Down:       bind("down", "down", "j"),
			Top:        bind("top", "home", "g"),
			Bottom:     bind("bottom", "end", "G"),
			HalfDown:   bind("half page down", "ctrl+d"),
			HalfUp:     bind("half page up", "ctrl+u"),
			PageDown:   bind("page down", "pgdown"),
			PageUp:     bind("page up", "pgup"),
			Filter:     bind("filter", "/"),
			Open:       bind("review", "enter"),
			Transcript: bind("transcript", "t"),
			Stop:       bind("stop run", "s"),
			Editor:     bind("editor", "e"),
			Dismiss:    bind("drop queued", "x"),
		},
		Review: Review{
			Accept:         bind("accept", "a"),
			Merge:          bind("merge", "m"),
			Reject:         bind("reject", "r"),
			RejectFeedback: bind("reject+feedback", "R"),
			Resume:         bind("resume with feedback", "u"),
			Clean:          bind("clean", "c"),
			ToggleFile:     bind("toggle file", "space"),
			NextFile:       bind("next file", "l", "right"),
			PrevFile:       bind("prev file", "h", "left"),
			NextHunk:       bind("next hunk", "]", "J"),
			PrevHunk:       bind("prev hunk", "[", "K"),
			Down:           bind("down", "down", "j"),
			Up:             bind("up", "up", "k"),
			Top:            bind("top", "home", "g"),
			Bottom:         bind("bottom", "end", "G"),
			HalfDown:       bind("half page down", "ctrl+d"),
			HalfUp:         bind("half page up", "ctrl+u"),
			PageDown:       bind("page down", "pgdown", "f"),
			PageUp:         bind("page up", "pgup", "b"),
			Stop:           bind("stop run", "s"),
			Editor:         bind("editor", "e"),
			NextReview:     bind("next review", "n"),
			Transcript:     bind("transcript", "t"),
			Back:           bind("back", "esc", "q"),
		},
		Transcript: Transcript{
			Prev:      bind("prev event", "h", "left"),
			Next:      bind("next event", "l", "right"),
			Up:        bind("up", "up", "k"),
			Down:      bind("down", "down", "j"),
			First:     bind("first", "home", "g"),
			Last:      bind("last", "end", "G"),
			Expand:    bind("expand", "enter", "space"),
			Search:    bind("search", "/"),
			NextMatch: bind("next match", "n"),
			PrevMatch: bind("prev match", "N"),
			Follow:    bind("follow", "F"),
			HalfDown:  bind("half page down", "ctrl+d"),
			HalfUp:    bind("half page up", "ctrl+u"),
			PageDown:  bind("page down", "pgdown"),
			PageUp:    bind("page up", "pgup"),
			Back:      bind("back", "esc", "q"),
		},
		Form: Form{
			Next:   bind("next field", "tab", "down"),
			Prev:   bind("prev field", "shift+tab", "up"),
			Submit: bind("submit", "ctrl+s", "ctrl+enter"),
			Cancel: bind("cancel", "esc"),
			Cycle:  bind("next choice", "ctrl+n"),
			// ctrl+f, as fish takes a suggestion: ctrl+space is the input
			// source switch on macOS.
			Complete: bind("complete", "ctrl+f"),
		},
		Confirm: Confirm{
			Yes: bind("yes", "y", "enter"),
			No:  bind("no", "n", "esc"),
		},
		Stats: Stats{
			Up:     bind("up", "up", "k"),
			Down:   bind("down", "down", "j"),
			Top:    bind("top", "home"), // g groups, as it did before the table scrolled
			Bottom: bind("bottom", "end", "G"),
			// The same keys as the runs list's.
			HalfDown: bind("half page down", "ctrl+d"),
			HalfUp:   bind("half page up", "ctrl+u"),
			PageDown: bind("page down", "pgdown"),
			PageUp:   bind("page up", "pgup"),
			Group:    bind("group by", "g", "tab"),
			Back:     bind("back", "esc", "q"),
		},
		Bench: Bench{
			Up:             bind("up", "up", "k"),
			Down:           bind("down", "down", "j"),
			Left:           bind("left", "left", "h"),
			Right:          bind("right", "right", "l"),
			Open:           bind("open case", "enter"),
			NextUnreviewed: bind("next unreviewed pass", "n"),
			Back:           bind("back", "esc", "q"),
		},
		BenchCase: BenchCase{
			Review:         bind("diff & verdict", "d", "enter"),
			ScrollDown:     bind("scroll down", "down", "j"),
			ScrollUp:       bind("scroll up", "up", "k"),
			PageDown:       bind("page down", "pgdown", "f"),
			PageUp:         bind("page up", "pgup", "b"),
			NextUnreviewed: bind("next unreviewed pass", "n"),
			Back:           bind("back", "esc", "q"),
		},
	}
}

// Bindings returns every binding by its configuration name,
// "<context>.<action>" in lower snake case (for example review.accept).
func (m *Map) Bindings() map[string]*key.Binding {
	return map[string]*key.Binding{
		"common.quit":                &m.Common.Quit,
		"common.help":                &m.Common.Help,
		"dashboard.launch":           &m.Dashboard.Launch,
		"dashboard.stats":            &m.Dashboard.Stats,
		"dashboard.bench":            &m.Dashboard.Bench,
		"dashboard.next_review":      &m.Dashboard.NextReview,
		"dashboard.focus_next":       &m.Dashboard.FocusNext,
		"dashboard.zoom":             &m.Dashboard.Zoom,
		"dashboard.pane1":            &m.Dashboard.Pane1,
		"dashboard.pane2":            &m.Dashboard.Pane2,
		"dashboard.pane3":            &m.Dashboard.Pane3,
		"dashboard.pane4":            &m.Dashboard.Pane4,
		"runs.up":                    &m.Runs.Up,
		"runs.down":                  &m.Runs.Down,
		"runs.top":                   &m.Runs.Top,
		"runs.bottom":                &m.Runs.Bottom,
		"runs.half_down":             &m.Runs.HalfDown,
		"runs.half_up":               &m.Runs.HalfUp,
		"runs.page_down":             &m.Runs.PageDown,
		"runs.page_up":               &m.Runs.PageUp,
		"runs.filter":                &m.Runs.Filter,
		"runs.open":                  &m.Runs.Open,
		"runs.transcript":            &m.Runs.Transcript,
		"runs.stop":                  &m.Runs.Stop,
		"runs.editor":                &m.Runs.Editor,
		"runs.dismiss":               &m.Runs.Dismiss,
		"review.accept":              &m.Review.Accept,
		"review.merge":               &m.Review.Merge,
		"review.reject":              &m.Review.Reject,
		"review.reject_feedback":     &m.Review.RejectFeedback,
		"review.resume":              &m.Review.Resume,
		"review.clean":               &m.Review.Clean,
		"review.toggle_file":         &m.Review.ToggleFile,
		"review.next_file":           &m.Review.NextFile,
		"review.prev_file":           &m.Review.PrevFile,
		"review.next_hunk":           &m.Review.NextHunk,
		"review.prev_hunk":           &m.Review.PrevHunk,
		"review.down":                &m.Review.Down,
		"review.up":                  &m.Review.Up,
		"review.top":                 &m.Review.Top,
		"review.bottom":              &m.Review.Bottom,
		"review.half_down":           &m.Review.HalfDown,
		"review.half_up":             &m.Review.HalfUp,
		"review.page_down":           &m.Review.PageDown,
		"review.page_up":             &m.Review.PageUp,
		"review.stop":                &m.Review.Stop,
		"review.editor":              &m.Review.Editor,
		"review.next_review":         &m.Review.NextReview,
		"review.transcript":          &m.Review.Transcript,
		"review.back":                &m.Review.Back,
		"transcript.prev":            &m.Transcript.Prev,
		"transcript.next":            &m.Transcript.Next,
		"transcript.up":              &m.Transcript.Up,
		"transcript.down":            &m.Transcript.Down,
		"transcript.first":           &m.Transcript.First,
		"transcript.last":            &m.Transcript.Last,
		"transcript.expand":          &m.Transcript.Expand,
		"transcript.search":          &m.Transcript.Search,
		"transcript.next_match":      &m.Transcript.NextMatch,
		"transcript.prev_match":      &m.Transcript.PrevMatch,
		"transcript.follow":          &m.Transcript.Follow,
		"transcript.half_down":       &m.Transcript.HalfDown,
		"transcript.half_up":         &m.Transcript.HalfUp,
		"transcript.page_down":       &m.Transcript.PageDown,
		"transcript.page_up":         &m.Transcript.PageUp,
		"transcript.back":            &m.Transcript.Back,
		"form.next":                  &m.Form.Next,
		"form.prev":                  &m.Form.Prev,
		"form.submit":                &m.Form.Submit,
		"form.cancel":                &m.Form.Cancel,
		"form.cycle":                 &m.Form.Cycle,
		"form.complete":              &m.Form.Complete,
		"confirm.yes":                &m.Confirm.Yes,
		"confirm.no":                 &m.Confirm.No,
		"stats.up":                   &m.Stats.Up,
		"stats.down":                 &m.Stats.Down,
		"stats.top":                  &m.Stats.Top,
		"stats.bottom":               &m.Stats.Bottom,
		"stats.half_down":            &m.Stats.HalfDown,
		"stats.half_up":              &m.Stats.HalfUp,
		"stats.page_down":            &m.Stats.PageDown,
		"stats.page_up":              &m.Stats.PageUp,
		"stats.group":                &m.Stats.Group,
		"stats.back":                 &m.Stats.Back,
		"bench.up":                   &m.Bench.Up,
		"bench.down":                 &m.Bench.Down,
		"bench.left":                 &m.Bench.Left,
		"bench.right":                &m.Bench.Right,
		"bench.open":                 &m.Bench.Open,
		"bench.next_unreviewed":      &m.Bench.NextUnreviewed,
		"bench.back":                 &m.Bench.Back,
		"bench_case.review":          &m.BenchCase.Review,
		"bench_case.scroll_down":     &m.BenchCase.ScrollDown,
		"bench_case.scroll_up":       &m.BenchCase.ScrollUp,
		"bench_case.page_down":       &m.BenchCase.PageDown,
		"bench_case.page_up":         &m.BenchCase.PageUp,
		"bench_case.next_unreviewed": &m.BenchCase.NextUnreviewed,
		"bench_case.back":            &m.BenchCase.Back,
	}
}

// screens lists, for each screen, the binding names that are live there
// at the same time, by name prefix: within one screen no key may mean two
// things. Quit is live on the dashboard alone: on every other screen q
// goes back (and ctrl+c still quits).
var screens = map[string][]string{
	"the dashboard":   {"common.", "dashboard.", "runs."},
	"the review":      {"common.help", "review."},
	"the transcript":  {"common.help", "transcript."},
	"the launch form": {"form."},
	"a confirmation":  {"confirm."},
	"the stats":       {"common.help", "stats."},
	"the bench view":  {"common.help", "bench."},
	"a bench case":    {"common.help", "bench_case."},
}

// renamedBindings are binding names of earlier releases and the names they
// became, so a config file written for those still applies: the review's
// scroll_down and scroll_up were its half-page keys before j and k
// scrolled by the line.
var renamedBindings = map[string]string{
	"review.scroll_down": "review.half_down",
	"review.scroll_up":   "review.half_up",
}

// Rebind applies overrides (binding name → keys) and checks that no key
// means two things on one screen. A name it does not know, an empty key
// list or a collision is an error naming them; m is unchanged then.
func (m *Map) Rebind(overrides map[string][]string) error {
	next := *m
	all := next.Bindings()
	names := make([]string, 0, len(overrides))
	for name := range overrides {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b, ok := all[name]
		if was, renamed := renamedBindings[name]; renamed {
			b, ok = all[was], true
		}
		if !ok {
			return fmt.Errorf("unknown key binding %q (names are like review.accept; see the README)", name)
		}
		ks := overrides[name]
		if len(ks) == 0 {
			return fmt.Errorf("key binding %q has no keys", name)
		}
		for _, k := range ks {
			if strings.TrimSpace(k) == "" || k != strings.TrimSpace(k) {
				return fmt.Errorf("key binding %q: %q is not a key name", name, k)
			}
		}
		desc := b.Help().Desc
		b.SetKeys(ks...)
		b.SetHelp(helpKeys(ks), desc)
	}
	if err := next.check(); err != nil {
		return err
	}
	*m = next
	return nil
}

// check reports the first key that means two things on one screen.
func (m *Map) check() error {
	all := m.Bindings()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	screenNames := make([]string, 0, len(screens))
	for s := range screens {
		screenNames = append(screenNames, s)
	}
	sort.Strings(screenNames)
	for _, screen := range screenNames {
		owner := map[string]string{}
		for _, n := range names {
			if !slices.ContainsFunc(screens[screen], func(p string) bool { return strings.HasPrefix(n, p) }) {
				continue
			}
			for _, k := range all[n].Keys() {
				if prev, dup := owner[k]; dup {
					return fmt.Errorf("key %q is bound to both %s and %s on %s", k, prev, n, screen)
				}
				owner[k] = n
			}
		}
	}
	return nil
}
