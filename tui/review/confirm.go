package review

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// Confirm is the one question mission control asks before an action that
// cannot be taken back (stop, merge, clean, reject with resume): one line
// that says exactly what will happen, answered with the confirm keys (y
// or enter does it, n or esc does not; any other key is ignored, so a
// stray key neither acts nor loses the question). The review asks it for
// its verdicts and the root for a stop from the runs list or a pane.
type Confirm struct {
	keys *keys.Confirm
	// line is what will happen; verb names the action on the yes key.
	line, verb string
	open       bool
}

// Answer is what a key did to an open Confirm.
type Answer int

// Answers.
const (
	// Ignored: the key was neither yes nor no; the question stays.
	Ignored Answer = iota
	// Yes: the action goes ahead; the question is closed.
	Yes
	// No: nothing happens; the question is closed.
	No
)

// NewConfirm returns a closed Confirm answered with k.
func NewConfirm(k *keys.Confirm) Confirm { return Confirm{keys: k} }

// Ask opens the question: line says what will happen, verb what the yes
// key does ("stop", "merge").
func (c *Confirm) Ask(line, verb string) {
	c.line, c.verb, c.open = line, verb, true
}

// Open reports whether the question waits for an answer.
func (c Confirm) Open() bool { return c.open }

// Line is the question's text.
func (c Confirm) Line() string { return c.line }

// Answer takes a key: yes and no close the question.
func (c *Confirm) Answer(k tea.KeyPressMsg) Answer {
	if !c.open {
		return Ignored
	}
	switch {
	case key.Matches(k, c.keys.Yes):
		c.open = false
		return Yes
	case key.Matches(k, c.keys.No):
		c.open = false
		return No
	}
	return Ignored
}

// Close drops the question unanswered (its subject went away).
func (c *Confirm) Close() { c.open = false }

// ShortHelp is the help bar while the question is open.
func (c Confirm) ShortHelp() []key.Binding {
	yes := c.keys.Yes
	yes.SetHelp(yes.Help().Key, c.verb)
	no := c.keys.No
	no.SetHelp(no.Help().Key, "cancel")
	return []key.Binding{yes, no}
}

// maxBoxWidth keeps a long line to a box that reads at a glance (it
// wraps).
const maxBoxWidth = 80

// Box draws the question in a box at most width cells wide: the line,
// wrapped at words, and the keys that answer it.
func (c Confirm) Box(s *theme.Styles, width int) []string {
	boxW := min(width-2, max(40, min(maxBoxWidth, fit.Width(c.line)+4)))
	inner := max(1, boxW-s.Box.GetHorizontalFrameSize())
	var content []string
	for _, l := range wrap(c.line, inner) {
		content = append(content, s.Bold.Render(fit.Line(l, inner)))
	}
	content = append(content, "", fit.Line(s.Muted.Render(c.keys.Yes.Help().Key+" "+c.verb+" · "+c.keys.No.Help().Key+" cancel"), inner))
	return strings.Split(s.Box.Width(boxW).Render(strings.Join(content, "\n")), "\n")
}

// Overlay draws box in the middle of body, a block w cells wide and h
// lines high.
func Overlay(body, box []string, w, h int) []string {
	out := make([]string, h)
	copy(out, body)
	top := max(0, (h-len(box))/2)
	left := 0
	if len(box) > 0 {
		left = max(0, (w-fit.Width(box[0]))/2)
	}
	for i, l := range box {
		if top+i >= h {
			break
		}
		out[top+i] = strings.Repeat(" ", left) + l
	}
	return out
}

// wrap breaks s into lines of at most w cells at spaces only (a slug or a
// path stays whole, so it can be read and copied), cutting a word only
// when it is wider than a line.
func wrap(s string, w int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "" && fit.Width(word) <= w:
			cur = word
		case cur != "" && fit.Width(cur)+1+fit.Width(word) <= w:
			cur += " " + word
		default:
			if cur != "" {
				lines = append(lines, cur)
			}
			parts := strings.Split(ansi.Hardwrap(word, w, false), "\n")
			lines = append(lines, parts[:len(parts)-1]...)
			cur = parts[len(parts)-1]
		}
	}
	return append(lines, cur)
}
