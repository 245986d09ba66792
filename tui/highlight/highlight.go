// Package highlight gives diff lines syntax colour with chroma. It takes
// text that termsafe has already made inert and only ever wraps pieces of
// it in lipgloss foreground styles, so what it returns holds no escape
// sequence the worker wrote.
package highlight

import (
	"maps"
	"strings"
	"sync"

	"charm.land/lipgloss/v2"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"

	"github.com/dirtywork/dirtywork/tui/theme"
)

// Highlighter colours code for one chroma style.
type Highlighter struct {
	style *chroma.Style
	mu    sync.Mutex
	cache map[chroma.TokenType]sgr
}

// sgr is the escape sequence that starts a token's style and the one that
// ends it, rendered once per token type: styling ten thousand lines token
// by token through lipgloss costs more than lexing them.
type sgr struct{ on, off string }

// New returns a highlighter for the theme's syntax colours; nil for the
// zero Syntax (no syntax colour).
func New(sx theme.Syntax) *Highlighter {
	if sx == (theme.Syntax{}) {
		return nil
	}
	entries := chroma.StyleEntries{
		chroma.Keyword: sx.Keyword, chroma.KeywordType: sx.Type, chroma.NameClass: sx.Type,
		chroma.NameFunction: sx.Function, chroma.NameBuiltin: sx.Builtin,
		chroma.LiteralString: sx.String, chroma.LiteralNumber: sx.Number,
		chroma.Comment: sx.Comment, chroma.CommentPreproc: sx.Meta, chroma.NameDecorator: sx.Meta,
	}
	maps.DeleteFunc(entries, func(_ chroma.TokenType, e string) bool { return e == "" })
	style, err := chroma.NewStyle("dirtywork", entries)
	if err != nil {
		return nil // a theme's entry chroma cannot read: plain text
	}
	return &Highlighter{style: style, cache: map[chroma.TokenType]sgr{}}
}

// MaxLineBytes is the longest line given colour; longer lines (minified
// code, data) are left plain, which is cheaper and no less readable.
const MaxLineBytes = 2000

// Lines colours lines of the file at path (the lexer is chosen by name).
// The lines are tokenised together, so constructs that span lines mostly
// colour right. A nil highlighter, an unknown language or a failure
// returns the lines as they are.
func (h *Highlighter) Lines(path string, lines []string) []string {
	if h == nil || len(lines) == 0 {
		return lines
	}
	lexer := lexers.Match(path)
	if lexer == nil {
		return lines
	}
	lexer = chroma.Coalesce(lexer)
	var b strings.Builder
	long := map[int]bool{}
	for i, l := range lines {
		if len(l) > MaxLineBytes {
			long[i] = true
			l = ""
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	it, err := lexer.Tokenise(nil, b.String())
	if err != nil {
		return lines
	}
	out := make([]string, 0, len(lines))
	var cur strings.Builder
	for tok := it(); tok != chroma.EOF; tok = it() {
		parts := strings.Split(tok.Value, "\n")
		for j, p := range parts {
			if j > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			if p != "" {
				st := h.styleFor(tok.Type)
				cur.WriteString(st.on)
				cur.WriteString(p)
				cur.WriteString(st.off)
			}
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	if len(out) < len(lines) {
		return lines // the lexer lost lines: better plain than wrong
	}
	out = out[:len(lines)]
	for i := range long {
		out[i] = lines[i]
	}
	return out
}

func (h *Highlighter) styleFor(t chroma.TokenType) sgr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.cache[t]; ok {
		return st
	}
	e := h.style.Get(t)
	st := lipgloss.NewStyle()
	if e.Colour.IsSet() {
		st = st.Foreground(lipgloss.Color(e.Colour.String()))
	}
	if e.Bold == chroma.Yes {
		st = st.Bold(true)
	}
	if e.Italic == chroma.Yes {
		st = st.Italic(true)
	}
	// Render a marker and keep what surrounds it.
	out := st.Render("\x00")
	on, off, _ := strings.Cut(out, "\x00")
	h.cache[t] = sgr{on: on, off: off}
	return h.cache[t]
}
