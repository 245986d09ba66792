package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/benchview"
	"github.com/dirtywork/dirtywork/tui/live"
)

// The bench view: opened from the dashboard or at start, it follows a
// results file until it is left; a case's review opened from it returns
// to it.

// startBench opens the bench view on the results file at path (the
// newest in the bench root when "") and returns the Cmd that reads it.
func (m *Model) startBench(path string) tea.Cmd {
	if m.bench != nil {
		m.bench.Close()
	}
	b := benchview.New(m.styles, m.keys, m.benchRuns(), path, m.opts.BenchDir)
	cmd := b.Start(m.opts.Context)
	m.bench = &b
	m.screen = screenBench
	m.layout()
	return cmd
}

// benchRuns is the bench view's window on the runs the root holds, kept
// live by the runs root's watch: verdicts given anywhere count at once.
func (m Model) benchRuns() benchview.Runs {
	runs := m.runs // the map is the root's for its whole life
	return func(slug string) (backend.Run, *live.State, bool) {
		e := runs[slug]
		if e == nil || e.placeholder {
			return backend.Run{}, nil, false
		}
		return e.run, e.state, true
	}
}

// BenchTook is how long the open bench view took to read and parse its
// file (0 when none is open), for the speed figures.
func (m Model) BenchTook() time.Duration {
	if m.bench == nil {
		return 0
	}
	return m.bench.Took()
}

// closeBench leaves the bench view and stops following its file.
func (m Model) closeBench() (tea.Model, tea.Cmd) {
	if m.bench != nil {
		m.bench.Close()
		m.bench = nil
	}
	return m.closeScreen()
}

// openBenchReview opens a bench case's run in the review screen.
func (m Model) openBenchReview(slug string) (tea.Model, tea.Cmd) {
	e := m.runs[slug]
	if e == nil || e.placeholder {
		m.setStatus("run "+termsafe.Line(slug)+" is not in the runs root", true)
		return m, nil
	}
	m.reviewFrom = screenBench
	return m.openReview(e.run)
}

// leaveReview closes the review, back to the screen it was opened from.
func (m *Model) leaveReview() {
	m.review = nil
	m.screen = screenDashboard
	if m.reviewFrom == screenBench && m.bench != nil {
		m.screen = screenBench
	}
	m.reviewFrom = screenDashboard
	m.layout()
}

// nextBenchReview reviews the bench's next passing case nobody has
// reviewed, from a review opened from the bench.
func (m Model) nextBenchReview() (tea.Model, tea.Cmd) {
	except := ""
	if m.review != nil {
		except = m.review.Slug()
	}
	slug, cmd, ok := m.bench.JumpNext(except)
	if !ok {
		m.setStatus("no passing case is waiting for review", false)
		m.leaveReview()
		return m, nil
	}
	e := m.runs[slug]
	if e == nil || e.placeholder {
		m.setStatus("run "+termsafe.Line(slug)+" is not in the runs root", true)
		m.leaveReview()
		return m, cmd
	}
	m.reviewFrom = screenBench
	m2, more := m.openReview(e.run)
	return m2, tea.Batch(cmd, more)
}
