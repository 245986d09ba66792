package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/transcript/termsafe"
)

// Report is everything `runs show` says of one run.
type Report struct {
	Run *Run
	// Raw is run.json as stored, every key.
	Raw transcript.Record
	// Events is the transcript, decoded ("" path: none).
	Events         []transcript.Event
	TranscriptPath string
}

// Report reads what `runs show` needs of slug: the record (typed and
// raw) and the transcript, when there is one.
func (s *Store) Report(slug string) (*Report, error) {
	run, err := s.Get(slug)
	if err != nil {
		return nil, err
	}
	raw, err := transcript.ReadRecord(run.Dir)
	if err != nil {
		return nil, err
	}
	rep := &Report{Run: run, Raw: raw}
	path := filepath.Join(run.Dir, transcript.TranscriptName)
	lines, _, err := transcript.ReadFile(path)
	if err == nil {
		rep.TranscriptPath = path
		for _, l := range lines {
			if ev, err := l.Decode(); err == nil || ev != nil {
				rep.Events = append(rep.Events, ev)
			}
		}
	}
	return rep, nil
}

// KV is one `key: value` line of the summary.
type KV struct{ Key, Value string }

// SummaryKeys are the keys of `runs show`'s summary, in order.
var SummaryKeys = []string{
	"slug", "status", "sandbox", "task", "model", "provider", "context_window", "turns", "resumed_from", "resumed_by",
	"branch", "worktree", "started", "ended", "stuck_on", "files_changed", "verify", "trimmed_turns", "timeouts",
}

// Summary is the summary lines, compact: files as `4 (a, b, c, ...)`,
// verify as `failed (exit 2)`, the window with its source.
func (r *Report) Summary() []KV {
	rec := &r.Run.Record
	out := make([]KV, 0, len(SummaryKeys)+3)
	add := func(k, v string) { out = append(out, KV{k, dash(v)}) }
	for _, k := range SummaryKeys {
		switch k {
		case "slug":
			add(k, r.Run.Slug)
		case "status":
			add(k, string(rec.Status))
		case "sandbox":
			add(k, rec.Sandbox)
		case "task":
			add(k, firstLine(rec.Task, 120))
		case "model":
			add(k, rec.Model)
		case "provider":
			add(k, rec.Provider)
		case "context_window":
			v := ""
			if rec.ContextWindow != nil {
				v = strconv.Itoa(*rec.ContextWindow)
				if rec.ContextWindowSource != "" {
					v += " (" + rec.ContextWindowSource + ")"
				}
			}
			add(k, v)
		case "turns":
			add(k, intPtr(rec.Turns))
		case "resumed_from":
			add(k, Str(rec.ResumedFrom))
		case "resumed_by":
			add(k, Str(rec.ResumedBy))
		case "branch":
			add(k, rec.Branch)
		case "worktree":
			add(k, rec.Worktree)
		case "started":
			add(k, rec.Started)
		case "ended":
			add(k, rec.Ended)
		case "stuck_on":
			v := ""
			if rec.StuckOn != nil {
				v = fmt.Sprintf("%s (x%d)", firstLine(rec.StuckOn.Command, 80), rec.StuckOn.Repeats)
			}
			add(k, v)
		case "files_changed":
			add(k, compactFiles(rec.FilesChanged, rec.FilesChangedTruncated))
		case "verify":
			add(k, compactVerify(rec.Verify))
		case "trimmed_turns":
			add(k, intPtr(rec.TrimmedTurns))
		case "timeouts":
			add(k, intPtr(rec.Timeouts))
		}
	}
	if rec.Verdict != "" {
		add("verdict", string(rec.Verdict))
		if rec.Note != nil {
			add("note", firstLine(*rec.Note, 200))
		}
	}
	if r.Run.Alive {
		add("alive", "yes")
	} else if r.Run.Crashed() {
		add("alive", "no (the run's process is gone)")
	}
	return out
}

func intPtr(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func firstLine(s string, max int) string {
	line, rest, _ := strings.Cut(strings.TrimSpace(s), "\n")
	r := []rune(line)
	if len(r) > max {
		return string(r[:max]) + " ..."
	}
	if rest != "" {
		return line + " ..."
	}
	return line
}

func compactFiles(files []string, truncated bool) string {
	if files == nil {
		return ""
	}
	n := strconv.Itoa(len(files))
	if truncated {
		n += "+"
	}
	if len(files) == 0 {
		return n
	}
	shown := files[:min(3, len(files))]
	v := n + " (" + strings.Join(shown, ", ")
	if len(files) > 3 {
		v += ", ..."
	}
	return v + ")"
}

func compactVerify(v *transcript.VerifyResult) string {
	if v == nil {
		return ""
	}
	word := "failed"
	if v.Passed {
		word = "passed"
	}
	if v.ExitCode == nil {
		return word + " (timed out)"
	}
	return fmt.Sprintf("%s (exit %d)", word, *v.ExitCode)
}

// RecordJSON is run.json as `runs show` prints it: indent 2, keys sorted,
// and the characters a terminal acts on written as \uXXXX escapes (see
// termsafe.EscapeJSON), so the block stays JSON that means what run.json
// means.
func (r *Report) RecordJSON() string {
	data, err := json.MarshalIndent(map[string]any(r.Raw), "", "  ")
	if err != nil {
		return "{}"
	}
	// MarshalIndent escapes <, > and &; run.json keeps them raw.
	data = bytes.ReplaceAll(data, []byte(`\u003c`), []byte("<"))
	data = bytes.ReplaceAll(data, []byte(`\u003e`), []byte(">"))
	data = bytes.ReplaceAll(data, []byte(`\u0026`), []byte("&"))
	return string(termsafe.EscapeJSON(data))
}

// OutcomeClass classifies a tool result: timed out (checked first),
// ERROR, BLOCKED, else ok.
func OutcomeClass(tr transcript.ToolResult) string {
	switch {
	case tr.TimedOut || policy.IsTimeout(tr.Result) || strings.HasPrefix(tr.Result, "ERROR: grep timed out after"):
		return "timed out"
	case strings.HasPrefix(tr.Result, "ERROR"):
		return "ERROR"
	case strings.HasPrefix(tr.Result, "BLOCKED"):
		return "BLOCKED"
	}
	return "ok"
}

// Timeline is the transcript as one line per event.
func (r *Report) Timeline() []string {
	var lines []string
	turn := 0
	for _, ev := range r.Events {
		switch e := ev.(type) {
		case transcript.RunStart:
			lines = append(lines, fmt.Sprintf("run_start model=%s max_turns=%d", e.Model, e.MaxTurns))
		case transcript.Assistant:
			turn++
			var names []string
			for _, c := range e.ToolCalls {
				names = append(names, c.Name)
			}
			l := fmt.Sprintf("turn %d assistant: %s", turn, firstLine(e.Text, 100))
			if len(names) > 0 {
				l += " [tools: " + strings.Join(names, ",") + "]"
			}
			lines = append(lines, l)
		case transcript.ToolResult:
			lines = append(lines, fmt.Sprintf("  tool_result %s [%s] %s", e.Tool, OutcomeClass(e), firstLine(e.Result, 100)))
		case transcript.GuardrailBlock:
			lines = append(lines, fmt.Sprintf("  guardrail_block %s: %s", e.Tool, firstLine(e.Reason, 100)))
		case transcript.Nudge:
			lines = append(lines, fmt.Sprintf("  nudge kind=%s turn=%d", e.Kind, e.Turn))
		case transcript.SandboxReset:
			lines = append(lines, "  sandbox_reset: "+firstLine(e.Reason, 100))
		case transcript.Verify:
			lines = append(lines, fmt.Sprintf("  verify round=%d passed=%v", e.Round, e.Passed))
		case transcript.Setup:
			lines = append(lines, "setup: "+firstLine(e.Command, 100))
		case transcript.RunEnd:
			lines = append(lines, fmt.Sprintf("run_end status=%s turns=%d", e.Status, e.Turns))
		case transcript.RunEndFailure:
			lines = append(lines, fmt.Sprintf("run_end status=%s error=%s", e.Status, firstLine(e.Error, 100)))
		}
	}
	return lines
}

// NoPatchNote is what show says when a run has no diff at all.
const NoPatchNote = "no diff.patch for this run (host mode, or the export never ran)"

// Markdown is the review document, paste-ready for a pull request.
func (r *Report) Markdown(d *Diff) string {
	rec := &r.Run.Record
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdInline(r.Run.Slug))
	for _, kv := range r.Summary() {
		if kv.Key == "slug" || kv.Key == "task" {
			continue
		}
		fmt.Fprintf(&b, "- **%s:** %s\n", kv.Key, mdInline(kv.Value))
	}
	if u := r.lastUsage(); u != nil {
		fmt.Fprintf(&b, "- **prompt_tokens:** %d\n- **completion_tokens:** %d\n", u.PromptTokens, u.CompletionTokens)
	}
	b.WriteString("\n## Task\n\n")
	b.WriteString(fenced(rec.Task, ""))
	b.WriteString("\n## Timeline\n")
	turn := 0
	var lastText string
	for _, ev := range r.Events {
		switch e := ev.(type) {
		case transcript.Assistant:
			turn++
			fmt.Fprintf(&b, "\n### Turn %d\n\n", turn)
			if strings.TrimSpace(e.Text) != "" {
				b.WriteString(closeFences(e.Text))
				b.WriteString("\n")
				lastText = e.Text
			}
			for _, c := range e.ToolCalls {
				fmt.Fprintf(&b, "- `%s` %s\n", mdInline(c.Name), mdInline(cut(c.Arguments, 200)))
			}
		case transcript.ToolResult:
			fmt.Fprintf(&b, "\n<details><summary>%s [%s]</summary>\n\n", html.EscapeString(e.Tool), OutcomeClass(e))
			b.WriteString(fenced(cutMarked(e.Result, 2000), ""))
			b.WriteString("\n</details>\n")
		case transcript.Nudge:
			fmt.Fprintf(&b, "\n> **nudge:** %s\n", mdInline(e.Kind))
		case transcript.GuardrailBlock:
			fmt.Fprintf(&b, "\n> **guardrail_block:** %s\n", mdInline(cut(e.Reason, 200)))
		case transcript.SandboxReset:
			fmt.Fprintf(&b, "\n> **sandbox_reset:** %s\n", mdInline(cut(e.Reason, 200)))
		}
	}
	b.WriteString("\n## Result\n\n")
	final := lastText
	if rec.LastToolResult != nil && rec.LastToolResult.Tool == "finish" {
		final = rec.LastToolResult.Result
	}
	fmt.Fprintf(&b, "- **status:** %s\n", mdInline(dash(string(rec.Status))))
	if rec.DiffStat != "" {
		b.WriteString("\n" + fenced(rec.DiffStat, ""))
	}
	if strings.TrimSpace(final) != "" {
		b.WriteString("\n**Final message:**\n\n" + fenced(final, ""))
	}
	if d != nil {
		b.WriteString("\n## Diff\n\n")
		if len(d.Patch) == 0 {
			b.WriteString(NoPatchNote + "\n")
		} else {
			b.WriteString(fenced(string(d.Patch), "diff"))
		}
	}
	return b.String()
}

func (r *Report) lastUsage() *transcript.Usage {
	for i := len(r.Events) - 1; i >= 0; i-- {
		if e, ok := r.Events[i].(transcript.RunEnd); ok {
			return &e.Usage
		}
	}
	return r.Run.Record.Usage
}

// mdInline is text for one markdown line: html-escaped, newlines as
// spaces, markdown's punctuation backslash-escaped (a file name like
// "[ok](http://…)" stays text, not a link in the pull request), at most
// 200 characters.
func mdInline(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")
	return mdEscaper.Replace(html.EscapeString(cut(s, 200)))
}

// mdEscaper escapes the characters markdown gives meaning to inline.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"(", `\(`, ")", `\)`, "!", `\!`, "|", `\|`, "~", `\~`,
)

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

func cutMarked(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "\n[truncated]"
}

// fenced puts text in a code fence longer than any backtick run inside.
func fenced(text, lang string) string {
	longest, run := 0, 0
	for _, c := range text {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fence + lang + "\n" + text + fence + "\n"
}

// closeFences closes a code fence the text opened and left open, so the
// next turn does not render inside it.
func closeFences(text string) string {
	open := ""
	for line := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			continue
		}
		n := len(t) - len(strings.TrimLeft(t, "`"))
		switch {
		case open == "":
			open = strings.Repeat("`", n)
		case n >= len(open) && strings.Trim(t, "`") == "":
			open = ""
		}
	}
	if open != "" {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += open
	}
	return text
}
