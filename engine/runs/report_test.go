package runs

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

func TestMarkdownReport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.addRun("md", map[string]any{
		"task": "fix <it>", "status": "completed", "model": "m",
		"last_tool_result": map[string]any{"tool": "finish", "args": "{}", "result": "all done"},
	})
	tw, err := transcript.Create(filepath.Join(dir, transcript.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []transcript.Event{
		transcript.RunStart{Task: "fix <it>", Model: "m"},
		transcript.Assistant{Text: "first\n```go\nunclosed", ToolCalls: []transcript.ToolCallRecord{{Name: "bash", Arguments: `{"command":"x"}`}}},
		transcript.ToolResult{Tool: "bash", Result: "ERROR: command timed out after 120s"},
		transcript.Nudge{Kind: "stall<b>", Turn: 1},
		transcript.Assistant{Text: "second"},
		transcript.ToolResult{Tool: "read_file", Result: "ERROR: nope ```` fence\n" + strings.Repeat("x", 2100)},
		transcript.RunEnd{Status: "completed", Turns: 2, Usage: transcript.Usage{PromptTokens: 10, CompletionTokens: 5}},
	} {
		if err := tw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := e.store.Report("md")
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Markdown(nil)
	first, second := strings.Index(md, "### Turn 1"), strings.Index(md, "### Turn 2")
	if first < 0 || second < first {
		t.Fatalf("turns out of order:\n%s", md)
	}
	for _, want := range []string{
		"# md\n", "- **prompt_tokens:** 10", "## Task", "fix <it>", // raw inside the fence
		"unclosed\n```\n", // the open fence closed before the next turn
		"[timed out]", "[ERROR]", "> **nudge:** stall&lt;b&gt;", "`````\nERROR: nope ```` fence", "[truncated]",
		"## Result", "all done",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	timeline := strings.Join(rep.Timeline(), "\n")
	if !strings.Contains(timeline, "[timed out]") || !strings.Contains(timeline, "[ERROR]") || !strings.Contains(timeline, "kind=stall<b>") {
		t.Errorf("timeline:\n%s", timeline)
	}
}

// A worker's file names go into the summary lines of a report pasted into
// a pull request: markdown in them stays text, not a link or emphasis.
func TestMarkdownSummaryKeepsWorkerNamesAsText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addRun("mdnames", map[string]any{
		"task": "t", "status": "completed", "model": "m",
		"files_changed": []string{"[approved](http://evil.example)", "**ok**", "![x](http://evil.example/p.png)"},
	})
	rep, err := e.store.Report("mdnames")
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Markdown(nil)
	line := md[strings.Index(md, "- **files_changed:**"):]
	line = line[:strings.Index(line, "\n")]
	for _, bad := range []string{"](http", "**ok**", "![x]"} {
		if strings.Contains(line, bad) {
			t.Errorf("markdown %q is live in %q", bad, line)
		}
	}
	if !strings.Contains(line, `\[approved\]`) {
		t.Errorf("the name itself is gone: %q", line)
	}
}

// What no diff shows is in the summary a reviewer reads first: the
// ignored files the worker made (taken out) and the setup's (kept), mode
// changes, quarantined repositories, links out of the tree, and a verify
// that exited 0 but did not count.
func TestSummaryShowsWhatNoDiffShows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addRun("hid", map[string]any{
		"status": "verify_failed", "task": "t",
		"ignored_changes": []any{
			map[string]any{"path": "app/__init__.py", "entries": 1, "bytes": 30, "by": "worker", "action": "removed"},
			map[string]any{"path": "node_modules/", "entries": 0, "bytes": 0, "by": "setup", "action": "kept"},
		},
		"mode_changes":        []any{map[string]any{"path": "sh", "mode": "4755", "change": "setuid/setgid removed"}},
		"dropped_git_entries": []any{"mod"},
		"escaping_symlinks":   []any{"pw"},
		"verify":              map[string]any{"command": "make test", "exit_code": 0, "passed": false, "rounds": 1, "reason": "the tree changed while verify ran: app.py"},
	})
	rep, err := e.store.Report("hid")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range rep.Summary() {
		got[kv.Key] = kv.Value
	}
	for k, want := range map[string]string{
		"ignored_changes":     "1 taken out (app/__init__.py); 1 from --setup kept (node_modules/)",
		"mode_changes":        "1 (sh: setuid/setgid removed)",
		"dropped_git_entries": "1 (mod)",
		"escaping_symlinks":   "1 (pw)",
		"verify":              "failed (exit 0, but the tree changed while verify ran: app.py)",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
}

// writeEvents writes a run's transcript.
func writeEvents(t *testing.T, dir string, events ...transcript.Event) {
	t.Helper()
	tw, err := transcript.Create(filepath.Join(dir, transcript.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if err := tw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

func markdownOf(t *testing.T, e *testEnv, slug string) string {
	t.Helper()
	rep, err := e.store.Report(slug)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Markdown(nil)
}

// The review document holds what 0.9.1's did (its tests' assertions on
// `runs show --markdown`): the task preview and base_commit in the header,
// a bullet per tool call with its name as code, and a result with the
// outcome fields, verify, what the run was stuck on, the files changed,
// the last tool result, the last reply, the diff stat and the finish
// summary.
func TestMarkdownHasTheContentOf091(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.addRun("md1", map[string]any{
		"status": "completed", "task": "fix the off-by-one", "model": "qwen/qwen3-coder-next", "provider": "openai",
		"turns": 2, "sandbox": "docker", "base_commit": "abc1234", "branch": "dirtywork/md1",
		"worktree": "/repo/.worktrees/dw-md1", "diff_stat": " x.py | 2 +-\n 1 file changed", "export_status": "ok",
		"verdict": "accept", "note": "clean patch", "trimmed_turns": 0, "timeouts": 0,
		"files_changed":       []string{"a.ts", "b_c.ts", "d.ts", "e.ts"},
		"last_tool_result":    map[string]any{"tool": "write_file", "args": `{"path": "x.py"}`, "result": "Wrote 5 bytes"},
		"last_assistant_text": "Fixed it.\nAll green.",
	})
	writeEvents(t, dir,
		transcript.RunStart{Task: "fix the off-by-one", Model: "qwen/qwen3-coder-next"},
		transcript.Assistant{Text: "Looking at the file.", ToolCalls: []transcript.ToolCallRecord{
			{Name: "bash", Arguments: `{"command": "ls -la"}`}, {Name: "write_file", Arguments: "{}"},
		}},
		transcript.ToolResult{Tool: "bash", Args: `{"command": "rm -rf /"}`, Result: "BLOCKED: refusing <destructive> command"},
		transcript.GuardrailBlock{Tool: "bash", Reason: "BLOCKED: refusing <destructive> command"},
		transcript.Assistant{Text: "Fixed it.", ToolCalls: []transcript.ToolCallRecord{{Name: "finish", Arguments: "{}"}}},
		transcript.ToolResult{Tool: "finish", Args: `{"summary": "off-by-one corrected"}`, Result: "run finished"},
		transcript.RunEnd{Status: "completed", Turns: 2, Usage: transcript.Usage{PromptTokens: 1234, CompletionTokens: 56}},
	)
	md := markdownOf(t, e, "md1")
	for _, want := range []string{
		"# md1\n", "- **task:** fix the off-by-one\n", "- **model:** qwen/qwen3-coder-next\n", "- **base_commit:** abc1234\n",
		"- **branch:** dirtywork/md1\n", "- **prompt_tokens:** 1234\n", "- **completion_tokens:** 56\n",
		"- **verdict:** accept\n", "- **note:** clean patch\n", "## Task\n",
		"### Turn 1", "- `bash` — {\"command\": \"ls -la\"}\n", "- `write_file` — {}\n", "- `finish` — {}\n",
		"<summary>bash({\"command\": \"rm -rf /\"}) [BLOCKED]</summary>", "BLOCKED: refusing <destructive> command\n",
		"refusing &lt;destructive&gt; command", "## Result\n", "- **status:** completed\n", "- **export_status:** ok\n",
		"- **trimmed_turns:** 0\n", "- **timeouts:** 0\n",
		"**files changed (4)**\n\n- `a.ts`\n- `b_c.ts`\n- `d.ts`\n- `e.ts`\n",
		"<details><summary>last tool result: write_file({\"path\": \"x.py\"})</summary>", "Wrote 5 bytes",
		"**last assistant text**\n\n> Fixed it.\n> All green.\n", "**diff_stat**\n\n```\n x.py | 2 +-\n 1 file changed\n```\n",
		"**final message**\n\n```\noff-by-one corrected\n```\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "`write\\_file`") || strings.Contains(md, "`b\\_c.ts`") {
		t.Errorf("a backslash shows in a code span:\n%s", md)
	}
	if strings.Index(md, "### Turn 1") > strings.Index(md, "### Turn 2") {
		t.Errorf("turns out of order:\n%s", md)
	}

	// A long task is previewed in the header and whole under "## Task".
	long := "line one of a long task\n" + strings.Repeat("x", 300) + "\nlast line"
	e.addRun("mdlong", map[string]any{"status": "completed", "task": long})
	md = markdownOf(t, e, "mdlong")
	if !strings.Contains(md, "- **task:** line one of a long task "+strings.Repeat("x", 176)+" ...\n") || !strings.Contains(md, long) {
		t.Errorf("long task:\n%s", md)
	}

	// Verify, stuck_on, a run_end's error, and no final message at all.
	e.addRun("ver1", map[string]any{
		"status": "verify_failed", "task": "do it",
		"verify": map[string]any{"command": "npm run gate", "exit_code": 2, "output_tail": "exit code: 2\n2 failing", "rounds": 1, "passed": false},
	})
	md = markdownOf(t, e, "ver1")
	for _, want := range []string{"**verify** — failed (exit 2) after 1 round(s)", "npm run gate", "2 failing", "_(none recorded)_"} {
		if !strings.Contains(md, want) {
			t.Errorf("verify markdown lacks %q:\n%s", want, md)
		}
	}
	e.addRun("stuck1", map[string]any{
		"status": "stuck", "task": "grind",
		"stuck_on": map[string]any{"command": "npm test", "output": "exit code: 1\n3 failing", "repeats": 4},
	})
	md = markdownOf(t, e, "stuck1")
	for _, want := range []string{"**stuck on** — the same failing command ran 4 times in a row", "npm test", "3 failing"} {
		if !strings.Contains(md, want) {
			t.Errorf("stuck markdown lacks %q:\n%s", want, md)
		}
	}
	dir = e.addRun("err1", map[string]any{"status": "model_error"})
	writeEvents(t, dir, transcript.RunEndFailure{Status: "model_error", Error: "no such model\nmore", TrimmedTurns: 3})
	md = markdownOf(t, e, "err1")
	for _, want := range []string{"- **error:** no such model\n", "- **trimmed_turns:** 3\n", "- **task:** -\n", "- **prompt_tokens:** -\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("failure markdown lacks %q:\n%s", want, md)
		}
	}
}

// Worker-chosen names land in code spans in the review document: literal
// there (no stray backslash, no link), whatever backticks they hold.
func TestMarkdownCodeSpansHoldWorkerNamesLiterally(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"write_file":                   "`write_file`",
		"[ok](http://evil.example)":    "`[ok](http://evil.example)`",
		"a`b":                          "``a`b``",
		"`edge`":                       "`` `edge` ``",
		"<img src=x onerror=alert(1)>": "`<img src=x onerror=alert(1)>`",
		"two\nlines":                   "`two lines`",
		" spaced ":                     "`  spaced  `",
		strings.Repeat("y", 250):       "`" + strings.Repeat("y", 200) + "...`",
	} {
		if got := mdCode(in); got != want {
			t.Errorf("mdCode(%q) = %q, want %q", in, got, want)
		}
	}
}
