package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	// What no diff shows: the reviewer sees it before the verdict.
	for _, kv := range r.hidden() {
		add(kv.Key, kv.Value)
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

// hidden are the summary lines for what the run left that no diff shows:
// the ignored files the worker made (taken out) and the setup's (kept),
// the mode changes, the repositories quarantined, the special files and
// the links out of the tree taken out. None when there is nothing.
func (r *Report) hidden() []KV {
	rec := &r.Run.Record
	var out []KV
	var removed, kept []string
	for _, i := range rec.IgnoredChanges {
		if i.Action == "removed" {
			removed = append(removed, i.Path)
		} else {
			kept = append(kept, i.Path)
		}
	}
	if len(removed) > 0 || len(kept) > 0 {
		var parts []string
		if len(removed) > 0 {
			parts = append(parts, fmt.Sprintf("%d taken out (%s)", len(removed), shortList(removed)))
		}
		if len(kept) > 0 {
			parts = append(parts, fmt.Sprintf("%d from --setup kept (%s)", len(kept), shortList(kept)))
		}
		out = append(out, KV{"ignored_changes", strings.Join(parts, "; ")})
	}
	if len(rec.ModeChanges) > 0 {
		var modes []string
		for _, m := range rec.ModeChanges {
			modes = append(modes, m.Path+": "+m.Change)
		}
		out = append(out, KV{"mode_changes", fmt.Sprintf("%d (%s)", len(modes), shortList(modes))})
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{
		{"dropped_git_entries", rec.DroppedGitEntries},
		{"escaping_symlinks", rec.EscapingSymlinks},
		{"skipped_special_entries", rec.SkippedSpecialEntries},
		{"unexported_entries", rec.UnexportedEntries},
	} {
		if len(l.paths) > 0 {
			out = append(out, KV{l.key, fmt.Sprintf("%d (%s)", len(l.paths), shortList(l.paths))})
		}
	}
	return out
}

// shortList is the first three of items, and "..." for the rest.
func shortList(items []string) string {
	v := strings.Join(items[:min(3, len(items))], ", ")
	if len(items) > 3 {
		v += ", ..."
	}
	return v
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
	if v.Reason != "" {
		return fmt.Sprintf("%s (exit %d, but %s)", word, *v.ExitCode, firstLine(v.Reason, 160))
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

// TaskPreviewChars is how much of the task the markdown header shows
// (0.9.1's TASK_PREVIEW_CHARS); the whole task is under "## Task".
const TaskPreviewChars = 200

// Markdown is the review document, paste-ready for a pull request:
// 0.9.1's content (header, task, timeline, result, diff) with worker text
// kept inert where it is not fenced: escaped in markdown lines, literal in
// code spans, escaped in HTML.
func (r *Report) Markdown(d *Diff) string {
	rec := &r.Run.Record
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdInline(r.Run.Slug))
	for _, kv := range r.Summary() {
		switch kv.Key {
		case "slug":
			continue
		case "task":
			fmt.Fprintf(&b, "- **task:** %s\n", mdText(dash(taskPreview(rec.Task))))
			continue
		case "branch":
			fmt.Fprintf(&b, "- **base_commit:** %s\n", mdInline(dash(rec.BaseCommit)))
		}
		fmt.Fprintf(&b, "- **%s:** %s\n", kv.Key, mdInline(kv.Value))
	}
	prompt, completion := "-", "-"
	if u := r.lastUsage(); u != nil {
		prompt, completion = strconv.Itoa(u.PromptTokens), strconv.Itoa(u.CompletionTokens)
	}
	fmt.Fprintf(&b, "- **prompt_tokens:** %s\n- **completion_tokens:** %s\n", prompt, completion)
	if rec.Task != "" {
		b.WriteString("\n## Task\n\n")
		b.WriteString(fenced(rec.Task, ""))
	}
	b.WriteString("\n## Timeline\n")
	r.mdTimeline(&b)
	b.WriteString("\n")
	r.mdResult(&b)
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

// mdTimeline writes one "### Turn N" per assistant reply (its text as the
// reader's own markdown, an open fence closed; a bullet per tool call) and
// the events after it: tool results collapsed, harness events as callouts.
func (r *Report) mdTimeline(b *strings.Builder) {
	turn := 0
	for _, ev := range r.Events {
		switch e := ev.(type) {
		case transcript.Assistant:
			turn++
			fmt.Fprintf(b, "\n### Turn %d\n\n", turn)
			if strings.TrimSpace(e.Text) != "" {
				b.WriteString(closeFences(strings.TrimSpace(e.Text)))
				b.WriteString("\n\n")
			}
			if len(e.ToolCalls) == 0 {
				b.WriteString("_text reply, no tool calls_\n")
			}
			for _, c := range e.ToolCalls {
				name := c.Name
				if name == "" {
					name = "(unnamed tool)"
				}
				fmt.Fprintf(b, "- %s — %s\n", mdCode(name), mdInline(dash(c.Arguments)))
			}
		case transcript.ToolResult:
			tool := e.Tool
			if tool == "" {
				tool = "(malformed call)"
			}
			fmt.Fprintf(b, "\n<details><summary>%s(%s) [%s]</summary>\n\n", htmlInline(tool), htmlInline(e.Args), OutcomeClass(e))
			b.WriteString(fenced(cutMarked(e.Result, 2000), ""))
			b.WriteString("\n</details>\n")
		case transcript.Nudge:
			fmt.Fprintf(b, "\n> **nudge:** %s\n", mdInline(e.Kind))
		case transcript.GuardrailBlock:
			fmt.Fprintf(b, "\n> **guardrail_block:** %s\n", mdInline(cut(e.Reason, 200)))
		case transcript.SandboxReset:
			fmt.Fprintf(b, "\n> **sandbox_reset:** %s\n", mdInline(cut(e.Reason, 200)))
		}
	}
	if turn == 0 {
		b.WriteString("\n_(no timeline events recorded)_\n")
	}
}

// resultView is what "## Result" shows: run.json's values, else the last
// run_end's (a record cut short by a crash, or one 0.9.1 wrote).
type resultView struct {
	status, errText, exportStatus, finalizeError, watchdog string
	trimmed, timeouts                                      *int
	verify                                                 *transcript.VerifyResult
	stuck                                                  *transcript.StuckOn
	files                                                  []string
	filesTruncated                                         bool
	last                                                   *transcript.LastToolResult
	lastText, diffStat                                     string
}

func (r *Report) result() resultView {
	rec := &r.Run.Record
	v := resultView{
		status: string(rec.Status), errText: Str(rec.Error), exportStatus: rec.ExportStatus,
		finalizeError: Str(rec.FinalizeError), watchdog: Str(rec.WatchdogViolation),
		trimmed: rec.TrimmedTurns, timeouts: rec.Timeouts, verify: rec.Verify, stuck: rec.StuckOn,
		files: rec.FilesChanged, filesTruncated: rec.FilesChangedTruncated, last: rec.LastToolResult,
		lastText: Str(rec.LastAssistantText), diffStat: rec.DiffStat,
	}
	orStr := func(dst *string, s string) {
		if *dst == "" {
			*dst = s
		}
	}
	orInt := func(dst **int, n int) {
		if *dst == nil {
			*dst = &n
		}
	}
	for i := len(r.Events) - 1; i >= 0; i-- {
		switch e := r.Events[i].(type) {
		case transcript.RunEnd:
			orStr(&v.status, string(e.Status))
			orStr(&v.finalizeError, e.FinalizeError)
			orInt(&v.trimmed, e.TrimmedTurns)
			orInt(&v.timeouts, e.Timeouts)
			if v.verify == nil {
				v.verify = e.Verify
			}
			if v.stuck == nil {
				v.stuck = e.StuckOn
			}
			if v.last == nil {
				v.last = e.LastToolResult
			}
			if e.LastAssistantText != nil {
				orStr(&v.lastText, *e.LastAssistantText)
			}
			if a := e.Artifacts; a != nil {
				orStr(&v.exportStatus, a.ExportStatus)
				orStr(&v.diffStat, a.DiffStat)
				if a.WatchdogViolation != nil {
					orStr(&v.watchdog, *a.WatchdogViolation)
				}
				if len(v.files) == 0 {
					v.files, v.filesTruncated = a.FilesChanged, a.FilesChangedTruncated
				}
			}
		case transcript.RunEndFailure:
			orStr(&v.status, string(e.Status))
			orStr(&v.errText, e.Error)
			orInt(&v.trimmed, e.TrimmedTurns)
			orInt(&v.timeouts, e.Timeouts)
		default:
			continue
		}
		break
	}
	return v
}

// mdResult writes "## Result" (0.9.1's): the outcome fields, verify, what
// the run was stuck on, the files changed, the last tool result, the last
// reply, the diff stat and the final message.
func (r *Report) mdResult(b *strings.Builder) {
	v := r.result()
	b.WriteString("## Result\n\n")
	for _, f := range []struct{ key, value string }{
		{"status", v.status},
		{"error", v.errText},
		{"export_status", v.exportStatus},
		{"finalize_error", v.finalizeError},
		{"watchdog_violation", v.watchdog},
		{"trimmed_turns", intPtr(v.trimmed)},
		{"timeouts", intPtr(v.timeouts)},
	} {
		if f.value != "" {
			line, _, _ := strings.Cut(f.value, "\n")
			fmt.Fprintf(b, "- **%s:** %s\n", f.key, mdInline(line))
		}
	}
	if v.verify != nil {
		word := "failed"
		if v.verify.Passed {
			word = "passed"
		}
		exit := "none"
		if v.verify.ExitCode != nil {
			exit = strconv.Itoa(*v.verify.ExitCode)
		}
		fmt.Fprintf(b, "\n**verify** — %s (exit %s) after %d round(s)\n\n", word, exit, v.verify.Rounds)
		b.WriteString(fenced(v.verify.Command, ""))
		b.WriteString("\n" + fenced(v.verify.OutputTail, ""))
	}
	if v.stuck != nil {
		fmt.Fprintf(b, "\n**stuck on** — the same failing command ran %d times in a row\n\n", v.stuck.Repeats)
		b.WriteString(fenced(v.stuck.Command, ""))
		b.WriteString("\n" + fenced(v.stuck.Output, ""))
	}
	if len(v.files) > 0 {
		note := ""
		if v.filesTruncated {
			note = " — list truncated"
		}
		fmt.Fprintf(b, "\n**files changed (%d)%s**\n\n", len(v.files), note)
		for _, f := range v.files {
			fmt.Fprintf(b, "- %s\n", mdCode(f))
		}
	}
	if v.last != nil {
		fmt.Fprintf(b, "\n<details><summary>last tool result: %s(%s)</summary>\n\n", htmlInline(v.last.Tool), htmlInline(v.last.Args))
		b.WriteString(fenced(v.last.Result, ""))
		b.WriteString("\n</details>\n")
	}
	if text := strings.TrimSpace(v.lastText); text != "" {
		b.WriteString("\n**last assistant text**\n\n")
		for line := range strings.SplitSeq(closeFences(text), "\n") {
			b.WriteString(strings.TrimRight("> "+line, " ") + "\n")
		}
	}
	if v.diffStat != "" {
		b.WriteString("\n**diff_stat**\n\n" + fenced(v.diffStat, ""))
	}
	b.WriteString("\n**final message**\n\n")
	if final := r.finalMessage(); final != "" {
		b.WriteString(fenced(final, ""))
	} else {
		b.WriteString("_(none recorded)_\n")
	}
}

// finalMessage is the run's final message as the transcript tells it
// (0.9.1's rule): the summary of the last finish call, else the last
// non-blank reply.
func (r *Report) finalMessage() string {
	for i := len(r.Events) - 1; i >= 0; i-- {
		if e, ok := r.Events[i].(transcript.ToolResult); ok && e.Tool == "finish" {
			var args struct {
				Summary string `json:"summary"`
			}
			if json.Unmarshal([]byte(e.Args), &args) == nil && args.Summary != "" {
				return args.Summary
			}
			break
		}
	}
	for i := len(r.Events) - 1; i >= 0; i-- {
		if e, ok := r.Events[i].(transcript.Assistant); ok && strings.TrimSpace(e.Text) != "" {
			return strings.TrimSpace(e.Text)
		}
	}
	return ""
}

// taskPreview is the task on one line, at most TaskPreviewChars of it.
func taskPreview(task string) string {
	p := strings.ReplaceAll(strings.ReplaceAll(task, "\r", " "), "\n", " ")
	if r := []rune(p); len(r) > TaskPreviewChars {
		p = string(r[:TaskPreviewChars]) + " ..."
	}
	return p
}

func (r *Report) lastUsage() *transcript.Usage {
	for i := len(r.Events) - 1; i >= 0; i-- {
		if e, ok := r.Events[i].(transcript.RunEnd); ok {
			return &e.Usage
		}
	}
	return r.Run.Record.Usage
}

// mdInline is text for one markdown line, at most 200 characters of it
// (see mdText).
func mdInline(s string) string { return mdText(cut(s, 200)) }

// mdText is text for one markdown line: newlines as spaces, <, > and &
// html-escaped, markdown's punctuation backslash-escaped (a file name like
// "[ok](http://…)" stays text, not a link in the pull request).
func mdText(s string) string {
	return mdEscaper.Replace(htmlEscaper.Replace(oneLine(s)))
}

// htmlInline is text inside an HTML element on one line (a <summary>,
// where markdown does not apply): newlines as spaces, <, > and &
// escaped, at most 200 characters.
func htmlInline(s string) string { return htmlEscaper.Replace(oneLine(cut(s, 200))) }

// htmlEscaper escapes what starts markup in HTML text; quotes are text
// there, and JSON arguments are full of them.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")
}

// mdCode is s, on one line and at most 200 characters, as a code span:
// literal (no escape applies inside one, so none is added), delimited by
// more backticks than any run inside it, padded when it starts or ends
// with a backtick or a space (the renderer strips one space each side).
func mdCode(s string) string {
	s = oneLine(cut(s, 200))
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") {
		s = " " + s + " "
	}
	return fence + s + fence
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
// next turn does not render inside it, and says so (0.9.1's marker).
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
		text += open + "\n\n_[fence auto-closed by the exporter]_"
	}
	return text
}
