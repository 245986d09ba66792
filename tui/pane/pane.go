// Package pane is one live pane of the dashboard: a run's header (status,
// repo, task, model, turns, tokens, elapsed, context fill, sandbox), what
// the model is doing right now, and the tail of its transcript as it
// happens.
package pane

import (
	"fmt"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/runinfo"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// Model is one pane slot. It holds no run data: the root hands it the item
// to draw, so panes never disagree with the list.
type Model struct {
	styles        *theme.Styles
	index         int // 0..3, shown in the title
	width, height int
	focused       bool
}

// New returns pane number index (0-based).
func New(s *theme.Styles, index int) Model { return Model{styles: s, index: index} }

// SetSize sets the pane's outer size, border included.
func (m *Model) SetSize(w, h int) { m.width, m.height = w, h }

// SetFocused marks the pane as the focused one.
func (m *Model) SetFocused(f bool) { m.focused = f }

// Size is the pane's outer size.
func (m Model) Size() (int, int) { return m.width, m.height }

// View draws it (nil: an empty slot) at the pane's size.
func (m Model) View(it *runinfo.Item, now time.Time) string {
	if m.width < 4 || m.height < 3 {
		return fit.Block("", m.width, m.height)
	}
	box := m.styles.Pane
	if m.focused {
		box = m.styles.PaneFocused
	}
	iw := m.width - box.GetHorizontalFrameSize()
	ih := m.height - box.GetVerticalFrameSize()
	var body string
	if it == nil {
		body = fit.Block(m.styles.Muted.Render(fmt.Sprintf(" %d  free", m.index+1)), iw, ih)
	} else {
		body = fit.Lines(Lines(m.styles, *it, iw, ih, now, m.index, m.focused), iw, ih)
	}
	return box.Width(m.width).Height(m.height).Render(body)
}

// Lines renders an item into at most h lines of width w: three header
// lines, then the transcript's tail; in the focused pane, while a reply
// streams, its last words below that.
func Lines(s *theme.Styles, it runinfo.Item, w, h int, now time.Time, index int, focused bool) []string {
	sep := s.Muted.Render(" " + theme.GlyphSep + " ")
	title := fmt.Sprintf("%d %s %s", index+1, it.Glyph(s), it.StatusStyle(s).Render(it.StatusText()))
	if repo := it.Repo(); repo != "" {
		title += sep + s.Bold.Render(repo)
	}
	title += sep + it.Task()
	join := func(vals ...string) string {
		return s.Muted.Render(strings.Join(nonEmpty(vals), " "+theme.GlyphSep+" "))
	}
	activity := s.Info.Render(it.Activity(now))
	counts := []string{"turn " + it.Turns(), it.Tokens() + " tok", "ctx " + it.Fill()}
	where := []string{it.Elapsed(now), it.Sandbox(), it.Model()}
	var lines []string
	tailH := 0
	if h >= 8 {
		lines = []string{fit.Line(title, w), fit.Line(join(counts...), w), fit.Line(join(where...), w), fit.Line(activity, w)}
		tailH = h - len(lines) - 1
		lines = append(lines, s.Muted.Render(strings.Repeat("─", w)))
	} else {
		lines = []string{fit.Line(title, w), fit.Line(join(append(counts, where...)...), w), fit.Line(activity, w)}
		tailH = h - len(lines)
	}
	if h <= len(lines) {
		return lines[:max(0, h)]
	}
	if it.State == nil {
		if tailH > 0 {
			lines = append(lines, s.Muted.Render(fit.Line("transcript not followed", w)))
		}
		return lines
	}
	var writing []string
	if focused && it.Run.Live() && it.State.Streaming && it.State.StreamTail != "" && tailH >= 4 {
		writing = StreamTail(s, it.State.StreamTail, w, 2)
		tailH -= len(writing)
	}
	return append(append(lines, Tail(s, it.State.Entries, w, tailH)...), writing...)
}

// StreamTail renders the end of a reply being written in at most n lines
// of width w: its last words, terminal-safe, ending where the model is.
func StreamTail(s *theme.Styles, tail string, w, n int) []string {
	text := strings.Join(strings.Fields(termsafe.String(tail)), " ")
	if text == "" || w < 4 || n <= 0 {
		return nil
	}
	// The ellipsis says the model wrote more before what is shown (the
	// tail is only the end of the reply).
	all := fit.Wrap(text, w-3)
	if len(all) > n {
		all = all[len(all)-n:]
	}
	all[0] = theme.GlyphEllipsis + all[0]
	out := make([]string, len(all))
	for i, l := range all {
		out[i] = s.Muted.Render(prefix(i, theme.GlyphSay) + fit.Cut(l, w-2))
	}
	return out
}

// Tail renders the newest entries that fit in h lines of width w, oldest
// first.
func Tail(s *theme.Styles, entries []live.Entry, w, h int) []string {
	if h <= 0 || w <= 0 {
		return nil
	}
	var blocks [][]string
	total := 0
	for i := len(entries) - 1; i >= 0 && total < h; i-- {
		b := Compact(s, entries[i], w)
		if len(b) == 0 {
			continue
		}
		blocks = append(blocks, b)
		total += len(b)
	}
	out := make([]string, 0, h)
	for i := len(blocks) - 1; i >= 0; i-- {
		out = append(out, blocks[i]...)
	}
	if len(out) > h {
		out = out[len(out)-h:]
	}
	return out
}

// Compact renders one entry in a few lines of width w (none for entries
// the pane leaves out). All worker text is made terminal-safe first.
func Compact(s *theme.Styles, e live.Entry, w int) []string {
	switch e.Kind {
	case live.KindAssistant:
		text := strings.TrimSpace(termsafe.String(e.Text))
		var lines []string
		if text != "" {
			lines = wrapN(fit.Tabs(text), w-2, 3)
			for i := range lines {
				lines[i] = s.Text.Render(prefix(i, theme.GlyphSay) + lines[i])
			}
		}
		// The calls show as their results arrive (and as the activity
		// line meanwhile), so they are not repeated here.
		return lines
	case live.KindToolResult:
		outcome := live.Outcome(e)
		st := s.OK
		if outcome != "ok" {
			st = s.Warn
		}
		head := theme.GlyphTool + " " + termsafe.Line(live.Summary(e.Tool, e.Args)) + " " + st.Render("["+outcome+"]")
		lines := []string{fit.Line(head, w)}
		if first := live.FirstLine(e.Text); first != "" && e.Tool != "finish" {
			lines = append(lines, fit.Line(s.Muted.Render("  "+OneLine(first)), w))
		}
		return lines
	case live.KindGuardrail:
		return []string{fit.Line(s.Warn.Render(theme.GlyphWarn+" blocked: "+termsafe.Line(e.Args)), w)}
	case live.KindNudge:
		return []string{fit.Line(s.Warn.Render(theme.GlyphWarn+" nudge: "+termsafe.Line(e.Text)), w)}
	case live.KindSandboxReset:
		return []string{fit.Line(s.Warn.Render(theme.GlyphWarn+" sandbox reset: "+termsafe.Line(e.Text)), w)}
	case live.KindVerify, live.KindSetup:
		st := s.OK
		if !e.Passed {
			st = s.Error
		}
		return []string{fit.Line(st.Render(termsafe.Line(live.Describe(e))), w)}
	case live.KindRunEnd:
		st := s.OK
		if e.Status != "completed" {
			st = s.Warn
		}
		return []string{fit.Line(st.Render("■ "+termsafe.Line(live.Describe(e))), w)}
	case live.KindProblem:
		return []string{fit.Line(s.Error.Render(theme.GlyphWarn+" "+termsafe.Line(e.Text)), w)}
	case live.KindRunStart:
		return []string{fit.Line(s.Muted.Render("started: "+termsafe.Line(live.FirstLine(e.Text))), w)}
	}
	return nil
}

// OneLine is worker text for one line: terminal-safe, tabs as spaces.
func OneLine(s string) string { return termsafe.Line(fit.Tabs(s)) }

func prefix(i int, g string) string {
	if i == 0 {
		return g + " "
	}
	return "  "
}

// wrapN wraps text (already terminal-safe) to width w and keeps at most n
// lines, the last ending in an ellipsis when text was cut.
func wrapN(text string, w, n int) []string {
	if w <= 0 {
		return nil
	}
	var out []string
	for para := range strings.SplitSeq(text, "\n") {
		if strings.TrimSpace(para) == "" {
			continue
		}
		for _, l := range fit.Wrap(para, w) {
			if len(out) == n {
				out[n-1] = fit.Cut(out[n-1]+" "+fit.Ellipsis, w)
				return out
			}
			out = append(out, fit.Cut(l, w))
		}
	}
	return out
}

func nonEmpty(vals []string) []string {
	out := vals[:0:0]
	for _, v := range vals {
		if v != "" && v != "-" {
			out = append(out, v)
		}
	}
	return out
}
