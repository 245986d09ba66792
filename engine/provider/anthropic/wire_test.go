package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// runHistory is a run's history with every shape the wire must map: two
// system texts, an assistant reply with text, an addressable call, an
// unaddressable one and one whose arguments did not decode, their tool
// results, a nudge after them, an empty assistant reply, a blank text and
// a call known only by its decoded arguments with an empty result.
func runHistory() []provider.Message {
	return []provider.Message{
		{Role: provider.RoleSystem, Content: "You are a worker."},
		{Role: provider.RoleSystem, Content: "Conventions: tabs."},
		{Role: provider.RoleUser, Content: "Fix the pager."},
		{Role: provider.RoleAssistant, Content: "Looking.", ToolCalls: []provider.ToolCall{
			{ID: "toolu_1", Name: "read_file", RawArguments: `{"path": "a.py"}`, Arguments: map[string]any{"path": "a.py"}},
			{Name: "bash", Error: "malformed tool call entry (missing or invalid id/function fields)"},
			{ID: "toolu_2", Name: "bash", RawArguments: `{"command": "ls"`, Error: "malformed tool arguments: unexpected end of JSON input"},
		}},
		{Role: provider.RoleTool, ToolCallID: "toolu_1", Content: "     1\tdef main():"},
		{Role: provider.RoleTool, ToolCallID: "toolu_2", Content: "ERROR: malformed tool arguments: unexpected end of JSON input"},
		{Role: provider.RoleUser, Content: "1 of your tool calls was malformed and discarded."},
		{Role: provider.RoleAssistant, Content: ""},
		{Role: provider.RoleUser, Content: "Keep going."},
		{Role: provider.RoleAssistant, Content: "  \n", ToolCalls: []provider.ToolCall{
			{ID: "toolu_3", Name: "list_dir", Arguments: map[string]any{"path": "."}},
		}},
		{Role: provider.RoleTool, ToolCallID: "toolu_3", Content: ""},
	}
}

func TestRequestWireFormat(t *testing.T) {
	t.Parallel()
	api, p, _ := serve(t, reply{file: "text.json"}, reply{file: "text.json"})
	zero := 0.0
	req := provider.Request{
		Model:       "claude-sonnet-4-5-20250929",
		Messages:    runHistory(),
		Temperature: &zero,
		Tools: []provider.Tool{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
			{Name: "finish"},
		},
	}
	resp, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The tests pass now. I changed <b> & kept the rest." || resp.FinishReason != "stop" ||
		resp.Usage != (provider.Usage{PromptTokens: 2095, CompletionTokens: 503}) || len(resp.ToolCalls) != 0 {
		t.Errorf("reply %+v", resp)
	}
	reqs := api.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.method != "POST" || r.path != "/v1/messages" {
		t.Errorf("%s %s", r.method, r.path)
	}
	for k, want := range map[string]string{
		"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json", "Authorization": "",
	} {
		if got := r.header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	body := decodeBody(t, r)
	want := map[string]string{
		"model":       `"claude-sonnet-4-5-20250929"`,
		"max_tokens":  `4096`,
		"temperature": `0`,
		"system":      `[{"text":"You are a worker.\n\nConventions: tabs.","type":"text"}]`,
		"tools": `[{"description":"Read a file.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"name":"read_file"},` +
			`{"description":"","input_schema":{"properties":{},"type":"object"},"name":"finish"}]`,
		"messages": `[` +
			`{"content":[{"text":"Fix the pager.","type":"text"}],"role":"user"},` +
			`{"content":[{"text":"Looking.","type":"text"},{"id":"toolu_1","input":{"path":"a.py"},"name":"read_file","type":"tool_use"},{"id":"toolu_2","input":{},"name":"bash","type":"tool_use"}],"role":"assistant"},` +
			`{"content":[{"content":[{"text":"     1\tdef main():","type":"text"}],"tool_use_id":"toolu_1","type":"tool_result"},` +
			`{"content":[{"text":"ERROR: malformed tool arguments: unexpected end of JSON input","type":"text"}],"tool_use_id":"toolu_2","type":"tool_result"},` +
			`{"text":"1 of your tool calls was malformed and discarded.","type":"text"},{"text":"Keep going.","type":"text"}],"role":"user"},` +
			`{"content":[{"id":"toolu_3","input":{"path":"."},"name":"list_dir","type":"tool_use"}],"role":"assistant"},` +
			`{"content":[{"tool_use_id":"toolu_3","type":"tool_result"}],"role":"user"}]`,
	}
	for k, w := range want {
		if got := canonical(t, body[k]); got != canonical(t, json.RawMessage(w)) {
			t.Errorf("%s\n got %s\nwant %s", k, got, w)
		}
	}
	if len(body) != len(want) {
		t.Errorf("body has keys beyond %v: %s", want, r.body)
	}

	// Without a temperature, and asked with a limit of its own.
	req.Temperature, req.MaxTokens = nil, 1234
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	body = decodeBody(t, api.requests()[1])
	if _, ok := body["temperature"]; ok || canonical(t, body["max_tokens"]) != "1234" {
		t.Errorf("second body: %s", api.requests()[1].body)
	}
}

// TestRolesAlternate: whatever the history, the messages alternate
// strictly and start with the user (the API refuses anything else).
func TestRolesAlternate(t *testing.T) {
	t.Parallel()
	params := newParams(provider.Request{Messages: append(runHistory(), runHistory()[2:]...)})
	for i, m := range params.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if string(m.Role) != want || len(m.Content) == 0 {
			t.Errorf("message %d: role %s with %d blocks", i, m.Role, len(m.Content))
		}
	}
}
