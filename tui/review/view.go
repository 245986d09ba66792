package review

import (
	"fmt"
	"strings"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/diff"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// headerLines is the header's fixed part; warnings add to it.
func (m Model) header() []string {
	s, w := m.styles, m.width
	r := m.run
	sep := s.Muted.Render(" " + theme.GlyphSep + " ")
	title := s.Title.Render("Review") + " " + termsafe.Line(r.Slug)
	meta := []string{r.StateWord()}
	if d := r.VerdictDetail(); d != "" {
		meta = append(meta, termsafe.Line(d))
	}
	if r.Repo != "" {
		meta = append(meta, termsafe.Line(baseName(r.Repo)))
	}
	if r.Model != "" {
		meta = append(meta, termsafe.Line(r.Model))
	}
	if n := r.TurnCount(); n >= 0 {
		meta = append(meta, fmt.Sprintf("%d turns", n))
	}
	lines := []string{fit.Line(title+sep+s.Muted.Render(strings.Join(meta, " · ")), w)}
	lines = append(lines, fit.Line(s.Bold.Render("task ")+termsafe.Line(live.FirstLine(r.Task)), w))
	summary := m.review.Summary
	if summary == "" {
		summary = r.LastText()
	}
	if summary != "" {
		lines = append(lines, fit.Line(s.Muted.Render("said ")+termsafe.Line(live.FirstLine(summary)), w))
	}
	if v := m.review.Verify; v != nil {
		st, g := s.OK, theme.GlyphOK
		if !v.Passed {
			st, g = s.Error, theme.GlyphFail
		}
		code := "no exit code"
		if v.ExitCode != nil {
			code = fmt.Sprintf("exit %d", *v.ExitCode)
		}
		lines = append(lines, fit.Line(st.Render(g+" verify ")+termsafe.Line(v.Command)+s.Muted.Render(" ("+code+")"), w))
	}
	if m.loaded && m.loadErr == nil && m.forecast == nil {
		lines = append(lines, fit.Line(s.Muted.Render("merge forecast"+theme.GlyphEllipsis+" (trying the merge)"), w))
	}
	warns := m.review.Warnings
	const maxWarn = 3
	for i, wn := range warns {
		if i == maxWarn {
			lines = append(lines, fit.Line(s.Warn.Render(fmt.Sprintf("%s %d more warnings", theme.GlyphWarn, len(warns)-maxWarn)), w))
			break
		}
		lines = append(lines, fit.Line(s.Warn.Render(theme.GlyphWarn+" "+warnLabel(wn.Kind)+": ")+termsafe.Line(wn.Text), w))
	}
	return lines
}

func warnLabel(kind string) string {
	switch kind {
	case backend.WarnBaseMoved:
		return "base moved"
	case backend.WarnConflict:
		return "merge would conflict"
	case backend.WarnRisky:
		return "runs code later"
	}
	return "warning"
}

func baseName(p string) string {
	if i := strings.LastIndexByte(strings.TrimRight(p, "/"), '/'); i >= 0 {
		return strings.TrimRight(p, "/")[i+1:]
	}
	return p
}

// fileListWidth is the file column's width.
func (m Model) fileListWidth() int {
	return max(18, min(48, m.width*3/10))
}

// diffHeight is the number of diff lines on screen.
func (m Model) diffHeight() int {
	return max(1, m.height-len(m.header())-1)
}

// View draws the review at its size.
func (m Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	s, w := m.styles, m.width
	head := m.header()
	bodyH := max(0, m.height-len(head)-1)
	var body []string
	switch {
	case !m.loaded:
		body = []string{s.Muted.Render("loading the diff…")}
	case m.loadErr != nil:
		body = []string{s.Error.Render("cannot load the review:"), termsafe.Line(m.loadErr.Error())}
	case len(m.files) == 0:
		body = []string{s.Muted.Render("this run changed no file")}
	default:
		body = m.columns(bodyH)
	}
	if m.modal != modalNone {
		body = m.overlay(body, bodyH)
	}
	out := append(head, m.rule())
	out = append(out, body...)
	return fit.Lines(out, w, m.height)
}

// rule is the line under the header, with where the diff stands at its
// right end once there is one: the selected file among the files, and the
// last diff line on screen among the file's lines.
func (m Model) rule() string {
	s, w := m.styles, m.width
	pos := ""
	if m.loaded && m.loadErr == nil && len(m.files) > 0 {
		pos = "file " + fit.Position(m.file, len(m.files))
		if n := m.fileLines(); n > 0 {
			pos += " " + theme.GlyphSep + " line " + fit.Position(min(n, m.scroll+m.diffHeight())-1, n)
		}
	}
	if pos == "" || fit.Width(pos)+4 > w {
		return s.Muted.Render(strings.Repeat("─", w))
	}
	return s.Muted.Render(strings.Repeat("─", w-fit.Width(pos)-3) + " " + pos + " ─")
}

// columns is the file list beside the selected file's diff.
func (m Model) columns(h int) []string {
	s := m.styles
	lw := m.fileListWidth()
	dw := max(1, m.width-lw-1)
	left := m.fileList(lw, h)
	right := m.diffLines(dw, h)
	out := make([]string, h)
	bar := s.Muted.Render("│")
	for i := range out {
		l, r := "", ""
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		out[i] = fit.Line(l, lw) + bar + fit.Line(r, dw)
	}
	return out
}

func (m Model) fileList(w, h int) []string {
	s := m.styles
	in := 0
	for _, v := range m.include {
		if v {
			in++
		}
	}
	added, deleted := diff.Totals(m.files)
	generated := 0
	for i, f := range m.files {
		if !m.include[i] && diff.Generated(f.Path) {
			generated++
		}
	}
	inAccept := fmt.Sprintf("%d in the accept", in)
	if generated > 0 {
		inAccept += fmt.Sprintf(" (%d generated left out)", generated)
	}
	lines := []string{
		fit.Line(s.Bold.Render(fmt.Sprintf("%d files", len(m.files)))+" "+s.DiffAdd.Render(fmt.Sprintf("+%d", added))+" "+s.DiffDel.Render(fmt.Sprintf("−%d", deleted)), w),
		fit.Line(s.Muted.Render(inAccept), w),
	}
	rows := h - len(lines)
	start := 0
	if m.file >= rows {
		start = m.file - rows + 1
	}
	for i := start; i < len(m.files) && len(lines) < h; i++ {
		f := m.files[i]
		box := theme.GlyphChecked
		if !m.include[i] {
			box = theme.GlyphUnchk
		}
		counts := s.DiffAdd.Render(fmt.Sprintf("+%d", f.Added)) + s.DiffDel.Render(fmt.Sprintf(" −%d", f.Deleted))
		if f.Binary {
			counts = s.Muted.Render("binary")
		}
		name := termsafe.Line(f.Path)
		if f.Status == "renamed" {
			name = termsafe.Line(f.OldPath) + " → " + name
		}
		if !m.include[i] && diff.Generated(f.Path) {
			counts = s.Muted.Render("generated")
		}
		cw := fit.Width(counts)
		cur := "  "
		if i == m.file {
			cur = theme.GlyphCursor + " "
		}
		nameW := max(1, w-2-2-cw-1)
		row := cur + box + " " + fit.Line(truncLeft(name, nameW), nameW) + " " + counts
		if i == m.file {
			row = s.Selected.Render(fit.Line(cur+box+" "+fit.Line(truncLeft(name, nameW), nameW)+" "+plainCounts(f), w))
		}
		lines = append(lines, fit.Line(row, w))
	}
	return lines
}

func plainCounts(f diff.File) string {
	if f.Binary {
		return "binary"
	}
	return fmt.Sprintf("+%d −%d", f.Added, f.Deleted)
}

// truncLeft keeps the end of a path, which says more than its start.
func truncLeft(s string, w int) string {
	if fit.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && fit.Width(string(r)) > w-1 {
		r = r[1:]
	}
	return fit.Ellipsis + string(r)
}

// diffLines draws the visible part of the selected file.
func (m Model) diffLines(w, h int) []string {
	s := m.styles
	if m.file >= len(m.files) {
		return nil
	}
	f := m.files[m.file]
	gw := 5
	out := make([]string, 0, h)
	for i := m.scroll; i < len(f.Lines) && len(out) < h; i++ {
		l := f.Lines[i]
		colored := m.colored[chunkKey{m.file, i / chunkLines}]
		ci := i % chunkLines
		var text string
		if ci < len(colored) && colored[ci] != "" {
			text = colored[ci]
		} else {
			text = safeCode(l.Text)
		}
		tw := max(1, w-gw-2)
		switch l.Kind {
		case diff.HunkHeader:
			out = append(out, s.DiffHunk.Render(fit.Line(termsafe.Line(l.Text), w)))
		case diff.Meta:
			out = append(out, s.DiffMeta.Render(fit.Line(termsafe.Line(l.Text), w)))
		case diff.NoNewline:
			out = append(out, s.DiffMeta.Render(fit.Line(termsafe.Line(l.Text), w)))
		case diff.Add:
			out = append(out, s.LineNo.Render(num(l.New, gw))+s.DiffAdd.Render(" +")+fit.Line(colorize(colored, ci, s.DiffAdd.Render(safeCode(l.Text)), text), tw))
		case diff.Del:
			out = append(out, s.LineNo.Render(num(l.Old, gw))+s.DiffDel.Render(" -")+fit.Line(colorize(colored, ci, s.DiffDel.Render(safeCode(l.Text)), text), tw))
		default:
			out = append(out, s.LineNo.Render(num(l.New, gw))+"  "+fit.Line(text, tw))
		}
	}
	if len(out) < h && m.scroll == 0 && len(f.Lines) == 0 {
		out = append(out, s.Muted.Render("no textual change (mode or binary)"))
	}
	return out
}

// colorize picks the syntax-coloured text when there is one, else the
// plain line in its diff colour.
func colorize(colored []string, i int, plain, text string) string {
	if colored != nil && i < len(colored) && colored[i] != "" {
		return text
	}
	return plain
}

func num(n, w int) string {
	if n <= 0 {
		return strings.Repeat(" ", w)
	}
	t := fmt.Sprintf("%d", n)
	if len(t) > w {
		t = t[len(t)-w:]
	}
	return strings.Repeat(" ", w-len(t)) + t
}

// overlay draws the open dialog over the body.
func (m Model) overlay(body []string, h int) []string {
	s := m.styles
	if m.modal == modalConfirm {
		return Overlay(body, m.ask.Box(s, m.width), m.width, h)
	}
	var content []string
	switch m.modal {
	case modalAlert:
		content = m.alert
	case modalBusy:
		content = []string{m.busy + "…"}
	case modalFeedback:
		content = []string{s.Bold.Render("Reject with feedback"), "The run is rejected and resumed with this feedback:", ""}
		if m.resumeOnly {
			content = []string{s.Bold.Render("Resume with feedback"), "The run goes on as a new run with this feedback (no verdict):", ""}
		}
		content = append(content, strings.Split(m.feedback.View(), "\n")...)
		content = append(content, "", fmt.Sprintf("%s send · %s cancel", m.form.Submit.Help().Key, m.form.Cancel.Help().Key))
	}
	boxW := min(m.width-2, max(40, fit.Width(strings.Join(content, "\n"))+4))
	inner := boxW - s.Box.GetHorizontalFrameSize()
	for i := range content {
		content[i] = fit.Line(content[i], inner)
	}
	box := strings.Split(s.Box.Width(boxW).Render(strings.Join(content, "\n")), "\n")
	out := make([]string, h)
	copy(out, body)
	top := max(0, (h-len(box))/2)
	left := max(0, (m.width-boxW)/2)
	for i, l := range box {
		if top+i >= h {
			break
		}
		out[top+i] = strings.Repeat(" ", left) + l
	}
	return out
}
