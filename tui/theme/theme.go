// Package theme is the one place mission control's look is decided: the
// semantic colour tokens of a light and a dark terminal, the glyphs, and
// one Styles struct built from them that every component is handed by
// pointer. Components never name a colour.
//
// With NO_COLOR set there are no colours at all: emphasis falls back to
// bold, faint, underline and reverse video, and every state still has its
// glyph, so nothing is told by colour alone.
package theme

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Mode is the kind of terminal the styles are built for.
type Mode int

// Modes.
const (
	// Dark is a terminal with a dark background (the default until the
	// terminal answers the background query).
	Dark Mode = iota
	// Light is a terminal with a light background.
	Light
	// NoColor uses text attributes only (NO_COLOR, or a terminal without
	// colour).
	NoColor
)

// String names the mode (used in golden file names).
func (m Mode) String() string {
	switch m {
	case Light:
		return "light"
	case NoColor:
		return "nocolor"
	}
	return "dark"
}

// Glyphs used across the UI. Each is one cell wide.
const (
	GlyphRunning  = "●"
	GlyphQueued   = "○"
	GlyphReview   = "◆"
	GlyphOK       = "✓"
	GlyphFail     = "×"
	GlyphDead     = "✗"
	GlyphWarn     = "!"
	GlyphCursor   = "▸"
	GlyphChecked  = "■"
	GlyphUnchk    = "□"
	GlyphTool     = "⚙"
	GlyphSay      = "›"
	GlyphEllipsis = "…"
	GlyphSep      = "·"

	// A bench case's mark: passed, failed (GlyphFail), gamed (GlyphWarn),
	// failed for the harness (not counted), in flight (GlyphRunning), not
	// run yet.
	GlyphPass    = "✓"
	GlyphHarness = "○"
	GlyphPending = "·"
	// A pass-rate bar: passes surely (below the interval), the interval
	// below the rate and above it, beyond the interval.
	GlyphBarSure  = "█"
	GlyphBarLow   = "▓"
	GlyphBarHigh  = "▒"
	GlyphBarEmpty = "░"
)

// Palette holds the semantic colour tokens.
//
// Every token that colours text keeps a contrast ratio of at least 4.5:1
// (WCAG 2.x, level AA) against the background it is drawn on, and Subtle,
// which colours only borders and separators, at least 3:1 (WCAG's rule for
// non-text UI). The package's tests hold every colour of the built Styles
// to it.
type Palette struct {
	// Background is the terminal background the palette is designed
	// against: pure black for dark terminals, white for light ones. It is
	// never painted (the terminal's own shows through); it is what the
	// contrast rule is measured on, along with an off-black (#1E1E1E) and
	// an off-white (#FAFAFA) that many terminal colour schemes use.
	Background color.Color

	Primary   color.Color // titles, the focused border, keys in the help bar
	Text      color.Color // ordinary text
	Muted     color.Color // secondary text: descriptions, line numbers, placeholders
	Subtle    color.Color // borders and separators, never text
	OK        color.Color
	Warn      color.Color
	Error     color.Color
	Info      color.Color // running runs, links
	Review    color.Color // runs waiting for review
	DiffAdd   color.Color
	DiffDel   color.Color
	DiffHunk  color.Color
	Highlight color.Color // the selected row's background
	Match     color.Color // a search match's background
}

// DarkPalette is the palette for dark terminals.
func DarkPalette() Palette {
	return Palette{
		Background: lipgloss.Color("#000000"),
		Primary:    lipgloss.Color("#8FA8FF"),
		Text:       lipgloss.Color("#DADADA"),
		// Muted is as light as it is so it still reads on Highlight, where
		// SelectedDim draws it.
		Muted:     lipgloss.Color("#A3A3A3"),
		Subtle:    lipgloss.Color("#6C6C6C"),
		OK:        lipgloss.Color("#5FD787"),
		Warn:      lipgloss.Color("#FFD75F"),
		Error:     lipgloss.Color("#FF6B6B"),
		Info:      lipgloss.Color("#5FD7FF"),
		Review:    lipgloss.Color("#D7AFFF"),
		DiffAdd:   lipgloss.Color("#87D787"),
		DiffDel:   lipgloss.Color("#FF8787"),
		DiffHunk:  lipgloss.Color("#87AFD7"),
		Highlight: lipgloss.Color("#303850"),
		Match:     lipgloss.Color("#5F5F00"),
	}
}

// LightPalette is the palette for light terminals.
func LightPalette() Palette {
	return Palette{
		Background: lipgloss.Color("#FFFFFF"),
		Primary:    lipgloss.Color("#3050C0"),
		Text:       lipgloss.Color("#262626"),
		// Muted is as dark as it is so it still reads on Highlight, where
		// SelectedDim draws it.
		Muted:     lipgloss.Color("#626262"),
		Subtle:    lipgloss.Color("#909090"),
		OK:        lipgloss.Color("#008700"),
		Warn:      lipgloss.Color("#AF5F00"),
		Error:     lipgloss.Color("#D70000"),
		Info:      lipgloss.Color("#005FAF"),
		Review:    lipgloss.Color("#8700AF"),
		DiffAdd:   lipgloss.Color("#007F00"),
		DiffDel:   lipgloss.Color("#C00000"),
		DiffHunk:  lipgloss.Color("#005F87"),
		Highlight: lipgloss.Color("#DCE4FF"),
		Match:     lipgloss.Color("#FFFF87"),
	}
}
