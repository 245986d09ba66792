// Package runinfo is what the runs list and the live panes both show of a
// run: the item they are handed (a run, its live state when followed, or a
// launch waiting in the queue) and the short texts made from it (status,
// turns, tokens, elapsed, context fill, what the model is doing). Every
// text that came from the worker or the model passes through termsafe
// here.
package runinfo

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// Queued is a launch waiting for a free slot.
type Queued struct {
	ID        int
	Spec      backend.LaunchSpec
	At        time.Time
	Launching bool   // handed to the launcher, not yet seen in the root
	Err       string // the launcher's refusal, when it refused
}

// Item is one row of the runs list or one pane.
type Item struct {
	Key    string // the slug, or "queued:<id>"
	Run    backend.Run
	State  *live.State // nil unless the run's transcript is followed
	Queued *Queued
}

// Phase is the item's group.
func (it Item) Phase() backend.Phase {
	if it.Queued != nil {
		return backend.PhaseQueued
	}
	return it.Run.Phase()
}

// Task is the task's first line, terminal-safe. A run whose run.json
// cannot be read has no task: its row names its directory and the error.
func (it Item) Task() string {
	if it.Queued == nil && it.Run.Problem != "" {
		return termsafe.Line(filepath.Base(it.Run.RunDir) + ": " + problemDetail(it.Run))
	}
	t := it.Run.Task
	if it.Queued != nil {
		t = it.Queued.Spec.Task
	}
	if t == "" && it.State != nil {
		t = it.State.Start.Task
	}
	return termsafe.Line(live.FirstLine(t))
}

// problemDetail is why run's record could not be read, without the
// record's path when the error repeats it (the row names the directory).
func problemDetail(run backend.Run) string {
	p := run.Problem
	if run.RunDir == "" {
		return p
	}
	file := filepath.Join(run.RunDir, transcript.RecordName) + ": "
	if i := strings.Index(p, file); i >= 0 {
		return transcript.RecordName + ": " + p[i+len(file):]
	}
	return p
}

// Repo is the repository's base name, terminal-safe.
func (it Item) Repo() string {
	r := it.Run.Repo
	if it.Queued != nil {
		r = it.Queued.Spec.Repo
	}
	if r == "" && it.State != nil {
		r = it.State.Start.Repo
	}
	if r == "" {
		return ""
	}
	return termsafe.Line(filepath.Base(r))
}

// Model is the model id, terminal-safe.
func (it Item) Model() string {
	m := it.Run.Model
	if it.Queued != nil {
		m = it.Queued.Spec.Model
	}
	if m == "" && it.State != nil {
		m = it.State.Start.Model
	}
	return termsafe.Line(m)
}

// Sandbox is docker or none (host).
func (it Item) Sandbox() string {
	s := it.Run.Sandbox
	if it.Queued != nil {
		s = it.Queued.Spec.Sandbox
	}
	if s == "" && it.State != nil {
		s = it.State.Start.Sandbox
	}
	if s == "none" {
		return "host"
	}
	return termsafe.Line(s)
}

// StatusText is the word shown for the item's state.
func (it Item) StatusText() string {
	switch it.Phase() {
	case backend.PhaseQueued:
		switch {
		case it.Queued.Err != "":
			return "refused"
		case it.Queued.Launching:
			return "starting"
		}
		return "queued"
	}
	return termsafe.Line(it.Run.StateWord())
}

// Glyph is the item's state glyph, styled.
func (it Item) Glyph(s *theme.Styles) string {
	g, st := it.glyph(s)
	return st.Render(g)
}

func (it Item) glyph(s *theme.Styles) (string, lipgloss.Style) {
	switch it.Phase() {
	case backend.PhaseQueued:
		if it.Queued.Err != "" {
			return theme.GlyphFail, s.Error
		}
		return theme.GlyphQueued, s.Muted
	case backend.PhaseRunning:
		return theme.GlyphRunning, s.Info
	case backend.PhaseDead:
		return theme.GlyphDead, s.Error
	case backend.PhaseReview:
		if it.Run.Status == transcript.StatusCompleted {
			return theme.GlyphReview, s.Review
		}
		return theme.GlyphWarn, s.Warn
	}
	switch it.Run.Verdict {
	case transcript.VerdictAccept:
		return theme.GlyphOK, s.OK
	case transcript.VerdictReject, transcript.VerdictCleanup:
		return theme.GlyphFail, s.Muted
	}
	return theme.GlyphFail, s.Muted
}

// StatusStyle is the style of the status word.
func (it Item) StatusStyle(s *theme.Styles) lipgloss.Style {
	_, st := it.glyph(s)
	return st
}

// Turns is "turn/max" (or what is known of it).
func (it Item) Turns() string {
	turn, maxTurns := it.Run.TurnCount(), 0
	if it.State != nil {
		if it.State.Turn > 0 {
			turn = it.State.Turn
		}
		maxTurns = it.State.Start.MaxTurns
	}
	if it.Queued != nil {
		turn, maxTurns = -1, it.Queued.Spec.MaxTurns
	}
	switch {
	case turn < 0 && maxTurns > 0:
		return fmt.Sprintf("-/%d", maxTurns)
	case turn < 0:
		return "-"
	case maxTurns > 0:
		return fmt.Sprintf("%d/%d", turn, maxTurns)
	}
	return fmt.Sprintf("%d", turn)
}

// TokenCount is the run's total tokens so far.
func (it Item) TokenCount() int {
	n := it.Run.TokenCount()
	if it.State != nil {
		if t := it.State.Usage.PromptTokens + it.State.Usage.CompletionTokens; t > n {
			n = t
		}
	}
	return n
}

// Tokens is the token count, short ("12.3k").
func (it Item) Tokens() string {
	if it.Queued != nil {
		return "-"
	}
	return Count(it.TokenCount())
}

// Count writes n short: 950, 12.3k, 4.1M.
func Count(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 100_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1_000_000)
}

// Elapsed is how long the run has run (or ran), short.
func (it Item) Elapsed(now time.Time) string {
	if it.Queued != nil {
		return Duration(now.Sub(it.Queued.At))
	}
	start := it.Run.StartedAt()
	if start.IsZero() {
		return "-"
	}
	end := it.Run.EndedAt()
	if end.IsZero() {
		if !it.Run.Live() {
			return "-"
		}
		end = now
	}
	return Duration(end.Sub(start))
}

// Duration writes d short: 42s, 3m05s, 2h10m, 3d4h.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d.Seconds())
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
}

// Fill is the context fill ("43%"), or "-".
func (it Item) Fill() string {
	if it.State == nil {
		return "-"
	}
	f := it.State.ContextFill()
	if f < 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", int(f*100+0.5))
}

// Activity says what the run is doing now: waiting for the model,
// streaming, or its last tool call; for an ended run its outcome.
func (it Item) Activity(now time.Time) string {
	if q := it.Queued; q != nil {
		switch {
		case q.Err != "":
			return "refused: " + termsafe.Line(q.Err)
		case q.Launching:
			return "starting…"
		}
		return "waiting for a free slot"
	}
	st := it.State
	if st != nil && !st.Ended && it.Run.Live() {
		switch {
		case st.Streaming:
			return fmt.Sprintf("streaming %d tok · %.1f tok/s", st.StreamTokens, st.TokensPerS)
		case st.Waiting:
			wait := now.Sub(st.RequestAt)
			return "waiting for model " + Duration(wait)
		}
	}
	if it.Run.Phase() == backend.PhaseDead {
		return "its process is gone; status never recorded"
	}
	if it.Run.Problem != "" {
		return "its run.json cannot be read" // the row's task says why
	}
	if d := it.Run.VerdictDetail(); d != "" {
		return termsafe.Line(d)
	}
	if st != nil && st.LastTool != "" {
		t := theme.GlyphTool + " " + termsafe.Line(st.LastTool)
		if st.LastOutcome != "" {
			t += " [" + st.LastOutcome + "]"
		}
		return t
	}
	if t := it.Run.LastText(); t != "" {
		return termsafe.Line(live.FirstLine(t))
	}
	return ""
}
