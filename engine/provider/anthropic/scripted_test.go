package anthropic

import (
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// TestScriptedServer: the project's scripted model server speaks the
// Messages API well enough for this provider, streamed and not, so runs
// and sweeps with --provider anthropic can be scripted.
func TestScriptedServer(t *testing.T) {
	t.Parallel()
	script, err := scripted.ParseScript([]byte(`{"model": "claude-scripted", "turns": [
		{"text": "Two reads.", "tool_calls": [
			{"name": "read_file", "arguments": {"path": "src/app.py"}},
			{"name": "bash", "arguments": "{\"command\": \"ls"}]},
		{"errors": [{"status": 529, "body": "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}],
		 "finish": "done", "usage": {"prompt_tokens": 30, "completion_tokens": 4}}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{true, false} {
		srv := scripted.New(script)
		base, err := srv.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		rec := &sleeps{}
		p := New(Config{BaseURL: strings.TrimSuffix(base, "/v1"), APIKey: testKey, Retry: provider.RetryPolicy{Sleep: rec.sleep}})
		if ids, err := p.ListModels(t.Context()); err != nil || len(ids) != 1 || ids[0] != "claude-scripted" {
			t.Fatalf("models %v, %v", ids, err)
		}
		req := provider.Request{Model: "claude-scripted", Stream: stream, Messages: []provider.Message{{Role: provider.RoleUser, Content: "go"}}}
		resp, err := p.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "Two reads." || resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 2 ||
			resp.ToolCalls[0].ID != "toolu_0_0" || resp.ToolCalls[0].Arguments["path"] != "src/app.py" ||
			resp.ToolCalls[1].ID != "toolu_0_1" || !strings.HasPrefix(resp.ToolCalls[1].Error, "malformed tool arguments: ") {
			t.Fatalf("stream %v: first reply %+v", stream, resp)
		}
		req.Messages = append(req.Messages,
			provider.Message{Role: provider.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
			provider.Message{Role: provider.RoleTool, ToolCallID: "toolu_0_0", Content: "def main(): pass"},
			provider.Message{Role: provider.RoleTool, ToolCallID: "toolu_0_1", Content: "ERROR: malformed"})
		resp, err = p.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "finish" || resp.ToolCalls[0].Arguments["summary"] != "done" ||
			resp.Usage != (provider.Usage{PromptTokens: 30, CompletionTokens: 4}) || len(rec.all()) != 1 {
			t.Fatalf("stream %v: second reply %+v after waits %v", stream, resp, rec.all())
		}
		msgs := srv.MessagesRequests()
		if len(msgs) != 3 || msgs[2].AssistantTurns() != 1 || msgs[2].Stream != stream {
			t.Fatalf("stream %v: requests %+v", stream, msgs)
		}
		for _, r := range srv.Requests() {
			if r.Header.Get("X-Api-Key") != testKey {
				t.Errorf("%s %s without the key", r.Method, r.Path)
			}
		}
	}
}
