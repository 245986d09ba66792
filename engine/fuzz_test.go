package engine

import (
	"strings"
	"testing"
)

// FuzzClassify feeds arbitrary reply text to the classification of a
// reply without tool calls, which parses the model's text for calls it
// wrote as text (markers, JSON objects with a name and arguments) and for
// reasoning blocks. It never panics and always gives one of the kinds; a
// reply cut at the token limit is truncated whatever it says; a closed
// reasoning block before the text and white space around it change
// nothing; and, outside reasoning, a call written as a marker or as JSON
// after any text makes the reply a text tool call.
func FuzzClassify(f *testing.F) {
	for _, s := range []struct{ text, reason string }{
		// From TestClassify.
		{"Done. Changed a.go.", "stop"},
		{"Done", "length"},
		{"  \n", "stop"},
		{"<think>x</think>  ", "stop"},
		{"<think>still thinking", "stop"},
		{"<think>x</think>All good", "stop"},
		{"<function=read_file>", "stop"},
		{`ok {"x":1} then {"name":"bash","arguments":{}}`, "stop"},
		{`{"name":"bash"}`, "stop"},
		{`{"name":1,"arguments":{}}`, "stop"},
		// Replies as the recorded servers send them.
		{"<think>The tests pass.</think>\n\nFixed the off-by-one in `Pager.Next`; `go test ./...` passes.", "stop"},
		{"I'll look at the file first.", "tool_calls"},
		{"<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"main.go\"}}\n</tool_call>", "stop"},
		{"```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"go test ./...\"}}\n```", "stop"},
		{"Here is the fix:\n```go\nfunc (p *Pager) Next() int { return p.n }\n```", "stop"},
		{"<|tool_call|>[{\"name\":\"grep\"}]", ""},
		{"{\"a\":{\"b\":{\"name\":\"x\",\"arguments\":null}}}", "stop"},
	} {
		f.Add(s.text, s.reason)
	}
	kinds := map[string]bool{replyAnswer: true, replyEmpty: true, replyTextToolCall: true}
	f.Fuzz(func(t *testing.T, text, reason string) {
		if got := classify(text, "length"); got != replyTruncated {
			t.Fatalf("classify(%q, length) = %s", text, got)
		}
		if reason == "length" {
			return
		}
		got := classify(text, reason)
		if !kinds[got] {
			t.Fatalf("classify(%q, %q) = %q", text, reason, got)
		}
		if again := classify(" \n\t"+text+"\r\n ", reason); again != got {
			t.Fatalf("white space around %q changed %s to %s", text, got, again)
		}
		thought := strings.ReplaceAll(text, "</think>", "")
		if again := classify("<think>"+thought+"</think>"+text, reason); again != got {
			t.Fatalf("a reasoning block before %q changed %s to %s", text, got, again)
		}
		if strings.Contains(text, "<think>") {
			return // an unclosed block would swallow what follows
		}
		for _, call := range []string{"\n<tool_call>", "\n" + `{"name":"bash","arguments":{"command":"ls"}}`} {
			if again := classify(text+call, reason); again != replyTextToolCall {
				t.Fatalf("%q followed by a call written as text is %s", text, again)
			}
		}
	})
}
