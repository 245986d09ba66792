// Package fit makes styled text exactly as wide and as tall as the cell it
// is drawn in, with x/ansi's width-aware functions (never byte slicing),
// so no line of the screen is ever wider than the terminal.
package fit

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Ellipsis ends truncated text.
const Ellipsis = "…"

// Line truncates s to w cells (ending in an ellipsis when cut) and pads it
// with spaces to exactly w. s must be one line.
func Line(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, Ellipsis)
		n = ansi.StringWidth(s)
	}
	if n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// Cut truncates s to at most w cells without padding.
func Cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, Ellipsis)
}

// Block makes s exactly w cells wide and h lines tall: lines are fitted,
// missing lines are blank, extra lines are dropped.
func Block(s string, w, h int) string {
	if h <= 0 || w <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = Line(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", w)
		}
	}
	return strings.Join(out, "\n")
}

// Lines is Block for text already split into lines.
func Lines(lines []string, w, h int) string {
	return Block(strings.Join(lines, "\n"), w, h)
}

// Wrap breaks plain or styled text into lines of at most w cells,
// keeping words whole where it can.
func Wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	return strings.Split(ansi.Wrap(s, w, " -/"), "\n")
}

// Width is s's width in cells (its widest line).
func Width(s string) int {
	m := 0
	for line := range strings.SplitSeq(s, "\n") {
		m = max(m, ansi.StringWidth(line))
	}
	return m
}

// Tabs expands tab characters to spaces (tab stops every 4 cells), so
// widths measure what the terminal shows.
func Tabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch r {
		case '\t':
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case '\n':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			col++
		}
	}
	return b.String()
}

// Position is where a cursor stands in a list or a text, for the corner
// of a view: "120/10,000" (1-based; "0/0" for nothing).
func Position(i, n int) string {
	if n <= 0 {
		return "0/0"
	}
	return thousands(min(max(i, 0), n-1)+1) + "/" + thousands(n)
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Spread puts left and right on one line of width w, right flush with the
// edge; right is dropped when both do not fit.
func Spread(left, right string, w int) string {
	gap := w - Width(left) - Width(right)
	if right == "" || gap < 1 {
		return Line(left, w)
	}
	return left + strings.Repeat(" ", gap) + right
}
