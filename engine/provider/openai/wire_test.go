package openai

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// decoded decodes JSON text for comparison.
func decoded(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	return v
}

func TestRequestBodyOnTheWire(t *testing.T) {
	srv, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{}, {}, {Text: "done"}}})
	zero := 0.0
	req := provider.Request{
		Model: scripted.DefaultModel,
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Content: "You are a coding agent. Files are at /w."},
			{Role: provider.RoleUser, Content: "Fix <the> bug & report."},
			{Role: provider.RoleAssistant, Content: "Looking.", ToolCalls: []provider.ToolCall{
				{ID: "call_1", Name: "read_file", RawArguments: `{"path": "a.go"}`, Arguments: map[string]any{"path": "a.go"}},
				{ID: "call_2", Name: "grep", Arguments: map[string]any{"pattern": "TODO"}},
				{Name: "", Error: "malformed tool call entry (missing or invalid id/function fields)"},
			}},
			{Role: provider.RoleTool, ToolCallID: "call_1", Content: "     1\tpackage a"},
			{Role: provider.RoleTool, ToolCallID: "call_2", Content: "No matches found."},
			{Role: provider.RoleUser, Content: "1 of your tool calls were malformed"},
			{Role: provider.RoleAssistant, Content: ""},
			{Role: provider.RoleUser, Content: "Continue."},
		},
		Tools: []provider.Tool{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "finish", Description: "End the run."},
		},
		Temperature: &zero,
		MaxTokens:   2048,
	}
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := `{
		"model": "scripted/model",
		"max_tokens": 2048,
		"temperature": 0,
		"messages": [
			{"role": "system", "content": "You are a coding agent. Files are at /w."},
			{"role": "user", "content": "Fix <the> bug & report."},
			{"role": "assistant", "content": "Looking.", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.go\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"TODO\"}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "     1\tpackage a"},
			{"role": "tool", "tool_call_id": "call_2", "content": "No matches found."},
			{"role": "user", "content": "1 of your tool calls were malformed"},
			{"role": "assistant", "content": ""},
			{"role": "user", "content": "Continue."}
		],
		"tools": [
			{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
				"parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
			{"type": "function", "function": {"name": "finish", "description": "End the run.",
				"parameters": {"type": "object", "properties": {}}}}
		]
	}`
	reqs := requests(t, srv, p)
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := decoded(t, reqs[0].Body); !reflect.DeepEqual(got, decoded(t, []byte(want))) {
		t.Fatalf("body on the wire:\n%s", reqs[0].Body)
	}
	if strings.Contains(string(reqs[0].Body), `\u003c`) {
		t.Errorf("HTML-escaped body: %s", reqs[0].Body)
	}
	h := reqs[0].Header
	if h.Get("Content-Type") != "application/json" || h.Get("Authorization") != "" {
		t.Errorf("headers = %v", h)
	}
}

func TestRequestDefaults(t *testing.T) {
	srv, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{Text: "hi"}}})
	if _, err := p.Chat(t.Context(), ask()); err != nil {
		t.Fatal(err)
	}
	body := decoded(t, requests(t, srv, p)[0].Body).(map[string]any)
	if body["max_tokens"] != float64(DefaultMaxTokens) {
		t.Errorf("max_tokens = %v", body["max_tokens"])
	}
	for _, key := range []string{"temperature", "tools", "stream", "stream_options"} {
		if _, ok := body[key]; ok {
			t.Errorf("%s sent: %v", key, body[key])
		}
	}
}

func TestAPIKeyIsABearerToken(t *testing.T) {
	srv := scripted.New(scripted.Script{Turns: []scripted.Turn{{Text: "hi"}}})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := testConfig(base, nil)
	cfg.APIKey = "sk-local-secret"
	p := New(cfg)
	if _, err := p.ListModels(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Chat(t.Context(), ask()); err != nil {
		t.Fatal(err)
	}
	for _, r := range requests(t, srv, p) {
		if got := r.Header.Get("Authorization"); got != "Bearer sk-local-secret" {
			t.Errorf("%s %s: Authorization %q", r.Method, r.Path, got)
		}
	}
}
