package runs

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

func TestMarkdownReport(t *testing.T) {
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
