package benchview

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// caseView is an open case: one row of the results file.
type caseView struct {
	row    int
	scroll int
	// output is the acceptance file, once read.
	output       string
	outputErr    error
	outputLoaded bool
}

// caseHeaderLines are the case screen's lines that do not scroll.
const caseHeaderLines = 3

// renderCase draws the open case: a header that stays, and below it the
// failure evidence, the acceptance output, the time split, the serving
// and the diff stat, which scroll.
func (m Model) renderCase() string {
	w, h := m.width, m.height
	lines := m.caseHeader()
	body := m.caseBody()
	rows := max(1, h-len(lines))
	if m.note != "" {
		rows--
	}
	top := max(0, min(m.open.scroll, len(body)-rows))
	shown := body[top:min(len(body), top+rows)]
	if left := len(body) - top - len(shown); left > 0 && len(shown) > 1 {
		// The last line says there is more.
		left++
		shown = append(shown[:len(shown)-1:len(shown)-1], m.styles.Muted.Render(fmt.Sprintf("  … %d more lines (%s scrolls)", left, m.caseKeys.ScrollDown.Help().Key)))
	}
	lines = append(lines, shown...)
	return fit.Lines(m.withNote(lines), w, h)
}

func (m Model) caseHeader() []string {
	s, w := m.styles, m.width
	i := m.open.row
	r := &m.rows[i]
	sep := s.Muted.Render(" " + theme.GlyphSep + " ")
	title := s.Title.Render("Case") + " " + termsafe.Line(r.Model) + sep + termsafe.Line(r.Task) + sep + fmt.Sprintf("repeat %d", r.Repeat)
	if slug := deref(r.Slug); slug != "" {
		title += sep + s.Muted.Render(termsafe.Line(slug))
	}
	glyph, st := m.mark(m.t.cursorOf(i))
	facts := []string{st.Render(glyph + " acceptance " + termsafe.Line(r.Acceptance)), "status " + termsafe.Line(r.Status)}
	if r.FailureClass != "" {
		facts = append(facts, "class "+termsafe.Line(r.FailureClass))
	}
	if r.Turns != nil {
		facts = append(facts, fmt.Sprintf("%d turns", *r.Turns))
	}
	if r.WallS != nil {
		facts = append(facts, fmt.Sprintf("%.1f s", float64(*r.WallS)))
	}
	if r.PromptTokens != nil || r.CompletionTokens != nil {
		n := 0
		for _, p := range []*int{r.PromptTokens, r.CompletionTokens} {
			if p != nil {
				n += *p
			}
		}
		facts = append(facts, fmt.Sprintf("%s tokens", thousands(n)))
	}
	if r.FixRound != nil && *r.FixRound > 0 {
		facts = append(facts, fmt.Sprintf("passed in fix round %d", *r.FixRound))
	}
	return []string{
		fit.Line(title, w),
		fit.Line(strings.Join(facts, sep), w),
		fit.Line(m.verdictLine(i), w),
	}
}

// verdictLine says whether a person judged the case's run, live.
func (m Model) verdictLine(i int) string {
	s, r := m.styles, &m.rows[i]
	review := m.caseKeys.Review.Help().Key
	run, _, known := m.runOf(i)
	v := m.t.verdicts[i]
	switch {
	case deref(r.Slug) == "":
		return s.Muted.Render("no run: nothing to review")
	case v != "":
		text := "verdict " + termsafe.Line(v)
		secs := r.ReviewSeconds
		if known {
			secs = run.ReviewSeconds
		}
		if secs != nil {
			text += fmt.Sprintf(" after %.1f s of review", *secs)
		}
		if v == "reject" && r.Passed() {
			return s.Warn.Render(theme.GlyphWarn+" "+text) + s.Muted.Render(" · a false pass: acceptance passed what a person rejected")
		}
		return s.OK.Render(text)
	case !known:
		return s.Muted.Render("not reviewed · its run is not in the runs root")
	}
	return s.Review.Render(theme.GlyphReview+" not reviewed") + s.Muted.Render(" · "+review+" shows the diff with the verdict keys")
}

// caseBody is the scrolling part of the case screen.
func (m Model) caseBody() []string {
	s, w := m.styles, m.width
	r := &m.rows[m.open.row]
	var out []string
	section := func(title string) {
		out = append(out, "", s.Bold.Render(title))
	}
	if r.FailureClass != "" || r.Error != nil {
		section("Failure evidence")
		text := r.FailureEvidence
		if text == "" {
			text = deref(r.Error)
		}
		for _, l := range fit.Wrap(termsafe.Line(text), max(10, w-2)) {
			out = append(out, "  "+l)
		}
	}
	section("Acceptance output")
	switch {
	case !m.open.outputLoaded:
		out = append(out, s.Muted.Render("  reading "+bench.AcceptanceFile+"…"))
	case m.open.outputErr != nil:
		out = append(out, s.Muted.Render("  none: "+termsafe.Line(m.open.outputErr.Error())))
	case deref(r.RunDir) == "" && m.open.output == "":
		out = append(out, s.Muted.Render("  none: the case has no run dir"))
	default:
		for _, l := range strings.Split(strings.TrimRight(m.open.output, "\n"), "\n") {
			out = append(out, "  "+fit.Tabs(termsafe.String(l)))
		}
	}
	section("Time split")
	out = append(out, m.timeLines(r)...)
	section("Serving")
	out = append(out, "  "+servingText(r.Serving))
	if ds := deref(r.DiffStat); strings.TrimSpace(ds) != "" {
		section("Diff")
		for _, l := range strings.Split(strings.TrimRight(ds, "\n"), "\n") {
			out = append(out, "  "+fit.Tabs(termsafe.Line(l)))
		}
	}
	return out
}

// servingText is what the model server said about itself.
func servingText(sv *bench.Serving) string {
	if sv == nil {
		return "not recorded"
	}
	var parts []string
	server := strings.TrimSpace(termsafe.Line(sv.Server) + " " + termsafe.Line(sv.Version))
	if server != "" {
		parts = append(parts, server)
	}
	if sv.ContextLength != nil {
		parts = append(parts, "context "+thousands(*sv.ContextLength))
	}
	if sv.Quantization != "" {
		parts = append(parts, termsafe.Line(sv.Quantization))
	}
	switch {
	case sv.Slots == 1:
		parts = append(parts, "1 slot")
	case sv.Slots > 1:
		parts = append(parts, fmt.Sprintf("%d slots", sv.Slots))
	}
	if len(parts) == 0 {
		return "nothing said"
	}
	return strings.Join(parts, " "+theme.GlyphSep+" ")
}

// timeParts name a case's time split in its order.
var timeParts = []string{"staging", "sandbox start", "prefill", "decode", "tools", "export", "acceptance"}

// timeLines are the time split, one part a line with a bar to scale.
func (m Model) timeLines(r *bench.Row) []string {
	s := m.styles
	if r.Time == nil {
		return []string{s.Muted.Render("  not recorded")}
	}
	t := r.Time
	vals := []*float64{t.StagingS, t.SandboxStartS, t.PrefillS, t.DecodeS, t.ToolsS, t.ExportS, t.AcceptanceS}
	most := 0.0
	for _, v := range vals {
		if v != nil {
			most = max(most, *v)
		}
	}
	const barW = 30
	var out []string
	for i, v := range vals {
		label := fmt.Sprintf("  %-14s", timeParts[i])
		if v == nil {
			out = append(out, label+s.Muted.Render(fmt.Sprintf("%8s", "-")))
			continue
		}
		n := 0
		if most > 0 {
			n = int(*v / most * barW)
		}
		line := label + fmt.Sprintf("%7.1fs", *v) + " " + s.Info.Render(strings.Repeat(theme.GlyphBarSure, n))
		if i == 3 && t.DecodeTokensPerS != nil {
			line += s.Muted.Render(fmt.Sprintf(" %.0f tokens/s", *t.DecodeTokensPerS))
		}
		out = append(out, line)
	}
	return out
}

// thousands writes n with thousands separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
