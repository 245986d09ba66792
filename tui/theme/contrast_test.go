package theme

import (
	"fmt"
	"image/color"
	"math"
	"reflect"
	"strings"
	"testing"

	"charm.land/bubbles/v2/textarea"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// The contrast rule (WCAG 2.x): text keeps 4.5:1 against what it is drawn
// on (success criterion 1.4.3, level AA); borders and separators, which are
// not text, keep 3:1 (1.4.11, non-text contrast).
const (
	minText    = 4.5
	minNonText = 3.0
)

// nonText names the styles that draw no text, only separators, and are
// held to minNonText. Borders are non-text wherever they are and need no
// entry: the walk reads them apart from a style's text colour.
var nonText = map[string]bool{
	"Help.ShortSeparator": true, // " • " between the help bar's keys
	"Help.FullSeparator":  true, // the gap between the full help's columns
}

// backgrounds are the terminal backgrounds a mode is checked on: its
// palette's own (pure black or white, the default of most terminals), and
// the off-black and off-white many terminal colour schemes use instead
// (#1E1E1E is VS Code's terminal, #FAFAFA One Light's), which give light
// text on dark and dark text on light less contrast than the pure ones.
func backgrounds(mode Mode) []color.Color {
	if mode == Light {
		return []color.Color{lipgloss.Color("#FFFFFF"), lipgloss.Color("#FAFAFA")}
	}
	return []color.Color{lipgloss.Color("#000000"), lipgloss.Color("#1E1E1E")}
}

// luminance is the relative luminance of c: its sRGB channels linearised
// by the sRGB transfer function and weighted as WCAG 2.x defines.
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		s := float64(v) / 0xffff
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
}

// contrast is the WCAG 2.x contrast ratio of two colours, 1 to 21.
func contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func TestContrastRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want float64
	}{
		{"#000000", "#FFFFFF", 21},
		{"#FFFFFF", "#000000", 21}, // the order does not matter
		{"#777777", "#FFFFFF", 4.48},
		{"#767676", "#FFFFFF", 4.54}, // the lightest grey that passes on white
		{"#FF0000", "#FFFFFF", 4.00},
		{"#0000FF", "#FFFFFF", 8.59},
		{"#123456", "#123456", 1},
	} {
		got := contrast(lipgloss.Color(tc.a), lipgloss.Color(tc.b))
		if math.Abs(got-tc.want) > 0.005 {
			t.Errorf("contrast(%s, %s) = %.4f, want %.2f", tc.a, tc.b, got, tc.want)
		}
	}
}

// drawn is one colour the styles draw and what it is drawn on.
type drawn struct {
	path string
	fg   color.Color
	bg   color.Color // nil: the terminal's background
	min  float64
}

var (
	styleType     = reflect.TypeFor[lipgloss.Style]()
	areaStateType = reflect.TypeFor[textarea.StyleState]()
	colorType     = reflect.TypeFor[color.Color]()
)

// collect walks s by reflection, nested structs included (the help bar's,
// the text inputs' and the text areas' styles, the syntax colours), so a
// style added later is checked without being listed. A style that cannot
// be held to the rule at all is a problem of its own.
func collect(s *Styles) (out []drawn, problems []string) {
	var walk func(v reflect.Value, path string)
	fields := func(v reflect.Value, path string) {
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				walk(v.Field(i), strings.TrimPrefix(path+"."+f.Name, "."))
			}
		}
	}
	walk = func(v reflect.Value, path string) {
		switch {
		case v.Type() == styleType:
			d, p := fromStyle(v.Interface().(lipgloss.Style), path)
			out, problems = append(out, d...), append(problems, p...)
		case v.Type() == areaStateType:
			fields(reflect.ValueOf(areaAsDrawn(v.Interface().(textarea.StyleState))), path)
		case v.Type() == colorType:
			// A cursor's colour: the block is drawn in it and the character
			// under it in the background colour, so it is held as text.
			if c, ok := v.Interface().(color.Color); ok && c != nil {
				out = append(out, drawn{path: path, fg: c, min: minText})
			}
		case v.Kind() == reflect.Struct:
			fields(v, path)
		case v.Kind() == reflect.String:
			// A syntax entry ("bold #8700AF"): its colour is text.
			for w := range strings.FieldsSeq(v.String()) {
				if strings.HasPrefix(w, "#") {
					out = append(out, drawn{path: path, fg: lipgloss.Color(w), min: minText})
				}
			}
		}
	}
	walk(reflect.ValueOf(*s), "")
	return out, problems
}

// areaAsDrawn applies the inheritance the text area applies when it draws
// (its computed* styles): every part over Base, the selection over the
// text, and the cursor line's number over the cursor line, so a
// background set on one part is checked against the text drawn on it.
func areaAsDrawn(st textarea.StyleState) textarea.StyleState {
	text := st.Text.Inherit(st.Base)
	cursorLine := st.CursorLine.Inherit(st.Base)
	return textarea.StyleState{
		Base:             st.Base,
		Text:             text,
		LineNumber:       st.LineNumber.Inherit(st.Base),
		CursorLineNumber: st.CursorLineNumber.Inherit(cursorLine),
		CursorLine:       cursorLine,
		EndOfBuffer:      st.EndOfBuffer.Inherit(st.Base),
		Placeholder:      st.Placeholder.Inherit(st.Base),
		Prompt:           st.Prompt.Inherit(st.Base),
		Selection:        st.Selection.Inherit(text),
	}
}

// fromStyle reads the colours one style draws: its text and its border.
func fromStyle(st lipgloss.Style, path string) (out []drawn, problems []string) {
	fg, bg := colorOf(st.GetForeground()), colorOf(st.GetBackground())
	if st.GetFaint() {
		// A terminal dims faint text by an amount of its own.
		problems = append(problems, path+" is faint, so its contrast is unknown")
	}
	switch {
	case fg != nil:
		minimum := minText
		if nonText[path] {
			minimum = minNonText
		}
		out = append(out, drawn{path: path, fg: fg, bg: bg, min: minimum})
	case bg != nil:
		// The terminal's own foreground is not ours to know.
		problems = append(problems, path+" sets a background but no foreground")
	}
	for _, side := range []struct {
		name   string
		fg, bg color.Color
	}{
		{"BorderTop", st.GetBorderTopForeground(), st.GetBorderTopBackground()},
		{"BorderRight", st.GetBorderRightForeground(), st.GetBorderRightBackground()},
		{"BorderBottom", st.GetBorderBottomForeground(), st.GetBorderBottomBackground()},
		{"BorderLeft", st.GetBorderLeftForeground(), st.GetBorderLeftBackground()},
	} {
		if c := colorOf(side.fg); c != nil {
			out = append(out, drawn{path: path + "." + side.name, fg: c, bg: colorOf(side.bg), min: minNonText})
		}
	}
	return out, problems
}

// colorOf is c, or nil where it is unset.
func colorOf(c color.Color) color.Color {
	if _, none := c.(lipgloss.NoColor); none || c == nil {
		return nil
	}
	return c
}

func TestStylesMeetContrast(t *testing.T) {
	for _, mode := range []Mode{Dark, Light} {
		t.Run(mode.String(), func(t *testing.T) {
			all, problems := collect(New(mode))
			for _, p := range problems {
				t.Error(p)
			}
			seen := map[string]bool{}
			for _, d := range all {
				seen[d.path] = true
				if _, basic := d.fg.(ansi.BasicColor); basic {
					t.Errorf("%s is one of the 16 colours each terminal sets itself: its contrast is unknown", d.path)
					continue
				}
				bgs := backgrounds(mode)
				if d.bg != nil {
					bgs = []color.Color{d.bg}
				}
				for _, bg := range bgs {
					if r := contrast(d.fg, bg); r < d.min {
						t.Errorf("%s: %s on %s is %.2f:1, want at least %.1f:1", d.path, hex(d.fg), hex(bg), r, d.min)
					}
				}
			}
			// The walk reaches every level of the struct; were it to stop
			// short, nothing below would be checked and the test would pass.
			for _, path := range []string{
				"Text", "Muted", "LineNo", "Selected", "SelectedDim", "Match", "Pane.BorderTop",
				"Help.ShortKey", "Help.ShortDesc", "Help.ShortSeparator", "Help.FullDesc", "Help.Ellipsis",
				"Input.Focused.Placeholder", "Input.Blurred.Text", "Input.Cursor.Color",
				"Area.Focused.LineNumber", "Area.Focused.Selection", "Area.Blurred.Placeholder",
				"Syntax.Comment",
			} {
				if !seen[path] {
					t.Errorf("the walk did not reach %s", path)
				}
			}
			for path := range nonText {
				if !seen[path] {
					t.Errorf("nonText names %s, which draws no colour", path)
				}
			}
		})
	}
}

// TestPalettesMeetContrast holds the tokens themselves to the rule, so a
// token no style uses yet is ready for text.
func TestPalettesMeetContrast(t *testing.T) {
	for _, mode := range []Mode{Dark, Light} {
		p := DarkPalette()
		if mode == Light {
			p = LightPalette()
		}
		for _, tok := range []struct {
			name string
			fg   color.Color
			min  float64
		}{
			{"Primary", p.Primary, minText},
			{"Text", p.Text, minText},
			{"Muted", p.Muted, minText},
			{"Subtle", p.Subtle, minNonText}, // borders and separators only
			{"OK", p.OK, minText},
			{"Warn", p.Warn, minText},
			{"Error", p.Error, minText},
			{"Info", p.Info, minText},
			{"Review", p.Review, minText},
			{"DiffAdd", p.DiffAdd, minText},
			{"DiffDel", p.DiffDel, minText},
			{"DiffHunk", p.DiffHunk, minText},
		} {
			for _, bg := range backgrounds(mode) {
				if r := contrast(tok.fg, bg); r < tok.min {
					t.Errorf("%s %s: %s on %s is %.2f:1, want at least %.1f:1", mode, tok.name, hex(tok.fg), hex(bg), r, tok.min)
				}
			}
		}
		// Selected rows draw Text and Muted on Highlight; a search match
		// draws Text on Match.
		for _, pair := range []struct {
			name   string
			fg, bg color.Color
		}{
			{"Text on Highlight", p.Text, p.Highlight},
			{"Muted on Highlight", p.Muted, p.Highlight},
			{"Text on Match", p.Text, p.Match},
		} {
			if r := contrast(pair.fg, pair.bg); r < minText {
				t.Errorf("%s %s: %.2f:1, want at least %.1f:1", mode, pair.name, r, minText)
			}
		}
	}
}

// hex names c for a failure message.
func hex(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}
