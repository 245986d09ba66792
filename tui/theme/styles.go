package theme

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
)

// Styles is every style the UI uses, built once from a palette (or from
// text attributes alone) and shared by pointer.
type Styles struct {
	Mode Mode

	Text   lipgloss.Style
	Bold   lipgloss.Style
	Muted  lipgloss.Style
	Title  lipgloss.Style
	Key    lipgloss.Style // a key named in running text ("press a")
	OK     lipgloss.Style
	Warn   lipgloss.Style
	Error  lipgloss.Style
	Info   lipgloss.Style
	Review lipgloss.Style

	// Selected is the cursor row in a list; SelectedDim the same row while
	// its list does not have the focus.
	Selected    lipgloss.Style
	SelectedDim lipgloss.Style
	// Match marks a search match.
	Match lipgloss.Style

	// Group is a group heading in the runs list.
	Group lipgloss.Style

	// Pane and PaneFocused frame a live pane; Box frames dialogs.
	Pane        lipgloss.Style
	PaneFocused lipgloss.Style
	Box         lipgloss.Style

	// Header is the top bar; StatusBar the line above the help bar.
	Header    lipgloss.Style
	Banner    lipgloss.Style // the "model is scripted" notice
	StatusBar lipgloss.Style

	DiffAdd  lipgloss.Style
	DiffDel  lipgloss.Style
	DiffHunk lipgloss.Style
	DiffMeta lipgloss.Style
	DiffFile lipgloss.Style // a file header inside the diff
	LineNo   lipgloss.Style

	// Help styles the help bar and the full help.
	Help help.Styles
	// Input and Area style text inputs and text areas.
	Input textinput.Styles
	Area  textarea.Styles

	// Syntax colours the code in a diff; the zero value (NO_COLOR) means
	// none.
	Syntax Syntax
}

// Syntax is the syntax colour of code, one chroma style entry ("bold
// #rrggbb") per token class; subclasses inherit their class's entry.
// These are the theme's own, not one of chroma's named styles: those
// come with a package that parses all of them whenever the program
// starts, which every dirtywork process (a run, the tool server) paid.
type Syntax struct {
	Keyword, Type, Function, Builtin, String, Number, Comment, Meta string
}

// DarkSyntax is the syntax colour for dark terminals.
func DarkSyntax() Syntax {
	return Syntax{
		Keyword: "bold #C397D8", Type: "#7FD4C6", Function: "#8FA8FF", Builtin: "#5FD7FF",
		String: "#B5D68C", Number: "#F0A45D", Comment: "italic #8A8A8A", Meta: "#FFD75F",
	}
}

// LightSyntax is the syntax colour for light terminals.
func LightSyntax() Syntax {
	return Syntax{
		Keyword: "bold #8700AF", Type: "#007373", Function: "#3050C0", Builtin: "#005FAF",
		String: "#3A7D00", Number: "#AF5F00", Comment: "italic #6C6C6C", Meta: "#875F00",
	}
}

// New builds the styles for mode.
func New(mode Mode) *Styles {
	if mode == NoColor {
		return noColor()
	}
	p, syntax := DarkPalette(), DarkSyntax()
	if mode == Light {
		p, syntax = LightPalette(), LightSyntax()
	}
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	s := &Styles{Mode: mode, Syntax: syntax}
	s.Text = fg(p.Text)
	s.Bold = fg(p.Text).Bold(true)
	s.Muted = fg(p.Muted)
	s.Title = fg(p.Primary).Bold(true)
	s.Key = fg(p.Primary).Bold(true)
	s.OK = fg(p.OK)
	s.Warn = fg(p.Warn)
	s.Error = fg(p.Error).Bold(true)
	s.Info = fg(p.Info)
	s.Review = fg(p.Review)
	s.Selected = lipgloss.NewStyle().Background(p.Highlight).Foreground(p.Text).Bold(true)
	s.SelectedDim = lipgloss.NewStyle().Background(p.Highlight).Foreground(p.Muted)
	s.Match = lipgloss.NewStyle().Background(p.Match).Foreground(p.Text)
	s.Group = fg(p.Muted).Bold(true)
	s.Pane = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(p.Subtle)
	s.PaneFocused = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(p.Primary)
	s.Box = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(p.Primary).Padding(0, 1)
	s.Header = fg(p.Primary).Bold(true)
	s.Banner = fg(p.Warn).Bold(true)
	s.StatusBar = fg(p.Muted)
	s.DiffAdd = fg(p.DiffAdd)
	s.DiffDel = fg(p.DiffDel)
	s.DiffHunk = fg(p.DiffHunk)
	s.DiffMeta = fg(p.Muted)
	s.DiffFile = fg(p.Primary).Bold(true)
	// Line numbers are text, so they take Muted: Subtle is for borders.
	s.LineNo = fg(p.Muted)
	s.Help = helpStyles(p)
	s.Input = inputStyles(p, mode == Dark)
	s.Area = areaStyles(p, mode == Dark)
	return s
}

// helpStyles colours the help bar from the palette rather than bubbles'
// fixed greys, which are too faint to read on a white terminal.
func helpStyles(p Palette) help.Styles {
	key := lipgloss.NewStyle().Foreground(p.Primary)
	desc := lipgloss.NewStyle().Foreground(p.Muted)
	sep := lipgloss.NewStyle().Foreground(p.Subtle)
	return help.Styles{
		Ellipsis:       desc, // it tells that keys are left out: text
		ShortKey:       key,
		ShortDesc:      desc,
		ShortSeparator: sep,
		FullKey:        key,
		FullDesc:       desc,
		FullSeparator:  sep,
	}
}

// inputStyles colours a text input from the palette; the cursor's shape
// and blinking stay bubbles' own.
func inputStyles(p Palette, dark bool) textinput.Styles {
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	s := textinput.DefaultStyles(dark)
	s.Focused = textinput.StyleState{
		Text: fg(p.Text), Placeholder: fg(p.Muted), Suggestion: fg(p.Muted), Prompt: fg(p.Primary),
	}
	s.Blurred = textinput.StyleState{
		Text: fg(p.Muted), Placeholder: fg(p.Muted), Suggestion: fg(p.Muted), Prompt: fg(p.Muted),
	}
	s.Cursor.Color = p.Text
	return s
}

// areaStyles colours a text area from the palette. The cursor line has no
// background of its own: the cursor marks it.
func areaStyles(p Palette, dark bool) textarea.Styles {
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	s := textarea.DefaultStyles(dark)
	s.Focused = textarea.StyleState{
		Base:             lipgloss.NewStyle(),
		Text:             fg(p.Text),
		LineNumber:       fg(p.Muted),
		CursorLineNumber: fg(p.Text),
		CursorLine:       fg(p.Text),
		EndOfBuffer:      fg(p.Muted),
		Placeholder:      fg(p.Muted),
		Prompt:           fg(p.Primary),
		Selection:        fg(p.Text).Background(p.Highlight),
	}
	s.Blurred = textarea.StyleState{
		Base:             lipgloss.NewStyle(),
		Text:             fg(p.Muted),
		LineNumber:       fg(p.Muted),
		CursorLineNumber: fg(p.Muted),
		CursorLine:       fg(p.Muted),
		EndOfBuffer:      fg(p.Muted),
		Placeholder:      fg(p.Muted),
		Prompt:           fg(p.Muted),
		Selection:        fg(p.Muted).Background(p.Highlight),
	}
	s.Cursor.Color = p.Text
	return s
}

// noColor is the attribute-only style set.
func noColor() *Styles {
	plain := lipgloss.NewStyle()
	s := &Styles{Mode: NoColor}
	s.Text = plain
	s.Bold = plain.Bold(true)
	s.Muted = plain.Faint(true)
	s.Title = plain.Bold(true)
	s.Key = plain.Bold(true)
	s.OK = plain
	s.Warn = plain.Bold(true)
	s.Error = plain.Bold(true)
	s.Info = plain
	s.Review = plain.Bold(true)
	s.Selected = plain.Reverse(true)
	s.SelectedDim = plain.Underline(true)
	s.Match = plain.Reverse(true)
	s.Group = plain.Bold(true).Underline(true)
	s.Pane = plain.Border(lipgloss.NormalBorder())
	s.PaneFocused = plain.Border(lipgloss.ThickBorder())
	s.Box = plain.Border(lipgloss.ThickBorder()).Padding(0, 1)
	s.Header = plain.Bold(true)
	s.Banner = plain.Bold(true)
	s.StatusBar = plain
	s.DiffAdd = plain
	s.DiffDel = plain
	s.DiffHunk = plain.Faint(true)
	s.DiffMeta = plain.Faint(true)
	s.DiffFile = plain.Bold(true)
	s.LineNo = plain.Faint(true)
	s.Help = help.Styles{
		Ellipsis:       plain.Faint(true),
		ShortKey:       plain.Bold(true),
		ShortDesc:      plain,
		ShortSeparator: plain.Faint(true),
		FullKey:        plain.Bold(true),
		FullDesc:       plain,
		FullSeparator:  plain.Faint(true),
	}
	in := textinput.StyleState{Text: plain, Placeholder: plain.Faint(true), Suggestion: plain.Faint(true), Prompt: plain.Bold(true)}
	s.Input = textinput.DefaultStyles(true)
	s.Input.Focused, s.Input.Blurred = in, in
	s.Input.Cursor.Color = nil
	area := textarea.StyleState{
		Base: plain, Text: plain, LineNumber: plain.Faint(true), CursorLineNumber: plain,
		CursorLine: plain, EndOfBuffer: plain.Faint(true), Placeholder: plain.Faint(true), Prompt: plain, Selection: plain.Reverse(true),
	}
	s.Area = textarea.DefaultStyles(true)
	s.Area.Focused, s.Area.Blurred = area, area
	s.Area.Cursor.Color = nil
	return s
}
