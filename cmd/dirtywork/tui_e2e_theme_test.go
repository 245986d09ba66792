package main

// Real-terminal tests of the theme's colours: the pane is captured with its
// escape sequences (capture-pane -e), and the colour each character is
// drawn in is read from them.

import (
	"fmt"
	"image/color"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/tui/theme"
)

// TestE2EThemeHelpColours: the help bar, short and full, is drawn in the
// palette's colours (keys Primary, descriptions Muted, separators Subtle),
// which keep the contrast rule, in the light theme and the dark, and not
// in bubbles' own greys (on a light terminal #B2B2B2 descriptions and
// #DADADA separators, which do not).
func TestE2EThemeHelpColours(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		theme string
		pal   theme.Palette
	}{{"light", theme.LightPalette()}, {"dark", theme.DarkPalette()}} {
		t.Run(tc.theme, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			// COLORTERM asks for true colour, so the capture shows the
			// palette's colours as they are, not their nearest of 256.
			p := startTUI(t, 120, 30, []string{"DIRTYWORK_HOME=" + home, "COLORTERM=truecolor"},
				"tui", "--theme", tc.theme, "--notify", "none")
			p.waitText("no runs yet", 30*time.Second)
			key, desc, sep := rgbOf(tc.pal.Primary), rgbOf(tc.pal.Muted), rgbOf(tc.pal.Subtle)

			short := lastLine(p.captureCells())
			if !hasText(short, "enter", key) || !hasText(short, "review", desc) || !hasText(short, "•", sep) {
				t.Fatalf("short help: want the key enter in %s, its description in %s and • in %s, got\n%s", key, desc, sep, dumpCells(short))
			}
			checkHelpCells(t, "short help", short, key, desc, sep)

			p.keys("?")
			p.waitText("drop queued", 30*time.Second)
			var full [][]cell
			for _, line := range p.captureCells() {
				if text := cellText(line); strings.Contains(text, "quit") || strings.Contains(text, "drop queued") {
					full = append(full, line)
				}
			}
			if len(full) != 2 {
				t.Fatalf("full help: want the lines with quit and drop queued, got %d lines", len(full))
			}
			if !hasText(full[0], "quit", desc) || !hasText(full[1], "drop queued", desc) {
				t.Fatalf("full help: want its descriptions in %s, got\n%s\n%s", desc, dumpCells(full[0]), dumpCells(full[1]))
			}
			for _, line := range full {
				checkHelpCells(t, "full help", line, key, desc, sep)
			}
			p.keys("?", "q")
			p.waitText("[exited 0]", 30*time.Second)
		})
	}
}

// checkHelpCells fails unless every visible character of a help line is
// drawn in one of the theme's three help colours, and no letter in the
// separators' colour (which is held only to the non-text ratio).
func checkHelpCells(t *testing.T, what string, line []cell, key, desc, sep string) {
	t.Helper()
	for _, c := range line {
		if strings.TrimSpace(c.ch) == "" {
			continue
		}
		switch c.fg {
		case key, desc:
		case sep:
			if c.ch != "•" && c.ch != "…" {
				t.Fatalf("%s: %q is text in the separators' colour %s:\n%s", what, c.ch, sep, dumpCells(line))
			}
		default:
			t.Fatalf("%s: %q is drawn in %s, not the theme's help colours (%s, %s, %s):\n%s", what, c.ch, c.fg, key, desc, sep, dumpCells(line))
		}
	}
}

// cell is one character on screen and its foreground ("#RRGGBB", "ansi N"
// or "" for the terminal's default).
type cell struct {
	ch string
	fg string
}

// captureCells is the pane as lines of cells, colours kept.
func (p *tmuxPane) captureCells() [][]cell {
	p.t.Helper()
	out, err := exec.Command("tmux", "-L", p.socket, "capture-pane", "-p", "-e", "-t", "e2e").CombinedOutput()
	if err != nil {
		p.t.Fatalf("capture-pane -e: %v: %s", err, out)
	}
	var lines [][]cell
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		lines = append(lines, parseCells(l))
	}
	return lines
}

// parseCells reads one captured line: SGR sequences set the foreground,
// every other grapheme is a cell.
func parseCells(line string) []cell {
	var cells []cell
	fg := ""
	p := ansi.NewParser()
	state := byte(0)
	for len(line) > 0 {
		seq, width, n, newState := ansi.DecodeSequence(line, state, p)
		state = newState
		switch {
		case ansi.HasCsiPrefix(seq) && ansi.Cmd(p.Command()).Final() == 'm':
			fg = applySGR(fg, p.Params())
		case width > 0:
			cells = append(cells, cell{ch: seq, fg: fg})
		}
		line = line[n:]
	}
	return cells
}

// applySGR returns the foreground after one SGR sequence.
func applySGR(fg string, params ansi.Params) string {
	if len(params) == 0 {
		return ""
	}
	for i := 0; i < len(params); i++ {
		n := params[i].Param(0)
		switch {
		case n == 0 || n == 39:
			fg = ""
		case n >= 30 && n <= 37:
			fg = fmt.Sprintf("ansi %d", n-30)
		case n >= 90 && n <= 97:
			fg = fmt.Sprintf("ansi %d", n-90+8)
		case n == 38 && i+1 < len(params) && params[i+1].Param(0) == 5 && i+2 < len(params):
			fg = fmt.Sprintf("ansi %d", params[i+2].Param(0))
			i += 2
		case n == 38 && i+1 < len(params) && params[i+1].Param(0) == 2 && i+4 < len(params):
			fg = fmt.Sprintf("#%02X%02X%02X", params[i+2].Param(0), params[i+3].Param(0), params[i+4].Param(0))
			i += 4
		case n == 48 && i+1 < len(params) && params[i+1].Param(0) == 5:
			i += 2 // a background: not what this reads
		case n == 48 && i+1 < len(params) && params[i+1].Param(0) == 2:
			i += 4
		}
	}
	return fg
}

// lastLine is the screen's last line with something on it.
func lastLine(lines [][]cell) []cell {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(cellText(lines[i])) != "" {
			return lines[i]
		}
	}
	return nil
}

func cellText(line []cell) string {
	var b strings.Builder
	for _, c := range line {
		b.WriteString(c.ch)
	}
	return b.String()
}

// hasText reports whether text appears in line drawn wholly in fg.
func hasText(line []cell, text string, fg string) bool {
	want := strings.Split(text, "")
	for i := range line {
		if i+len(want) > len(line) {
			return false
		}
		ok := true
		for j, ch := range want {
			if line[i+j].ch != ch || line[i+j].fg != fg {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// dumpCells shows a line with its colour runs, for a failure message.
func dumpCells(line []cell) string {
	var b strings.Builder
	fg := "-"
	for _, c := range line {
		if c.fg != fg {
			fg = c.fg
			fmt.Fprintf(&b, "[%s]", fg)
		}
		b.WriteString(c.ch)
	}
	return b.String()
}

// rgbOf names c as the capture does ("#RRGGBB").
func rgbOf(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}
