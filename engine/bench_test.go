package engine

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/provider/openai"
	"github.com/dirtywork/dirtywork/engine/tools"
	"github.com/dirtywork/dirtywork/transcript"
)

// BenchmarkTurnOverhead measures the harness's cost of one turn with a
// 200-message history of 8 KB tool results and a 65,536-token window:
// trim, request encoding, the HTTP exchange with a server that answers
// instantly, reply parsing, tool dispatch and the transcript events.
func BenchmarkTurnOverhead(b *testing.B) {
	reply := `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"big.txt\"}"}}]}}],` +
		`"usage":{"prompt_tokens":0,"completion_tokens":12}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	defer srv.Close()

	result := strings.Repeat("0123456789abcdef", 512) // 8 KB
	ws := &fakeWS{answers: map[string]string{"big.txt": result}}
	l := &Loop{
		Provider: openai.New(openai.Config{BaseURL: srv.URL + "/v1"}),
		Tools:    tools.New(ws, policy.Options{}), Events: discardEvents{},
		Model: "m", MaxTurns: 1 << 30, Timeout: time.Hour, MaxTokens: 4096, Stream: false,
		ContextWindow: 65536,
	}
	r := &run{
		l: l, hist: newHistory(l.ContextWindow), failures: newFailureTracker(),
		stall: newStallTracker(0), repeat: newRepeatTracker(0), started: time.Now(),
	}
	r.deadline = r.started.Add(time.Hour)
	// seed gives the history its 200 messages again, so every measured turn
	// works on a history of that size rather than one growing without end.
	seed := func() {
		r.hist = newHistory(l.ContextWindow)
		r.hist.add(provider.Message{Role: provider.RoleSystem, Content: strings.Repeat("s", 4000)})
		r.hist.add(provider.Message{Role: provider.RoleUser, Content: "task"})
		for i := range 99 {
			id := fmt.Sprintf("c%d", i)
			r.hist.add(provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: id, Name: "read_file", RawArguments: `{"path":"big.txt"}`}}})
			r.hist.add(provider.Message{Role: provider.RoleTool, ToolCallID: id, Content: result})
		}
	}
	seed()
	ctx := b.Context()
	b.ResetTimer()
	for b.Loop() {
		if len(r.hist.msgs) > 240 {
			b.StopTimer()
			seed()
			b.StartTimer()
		}
		if fits, replaced := r.hist.trim(); !fits {
			b.Fatal("history does not fit")
		} else if replaced > 0 {
			r.out.TrimmedTurns++
		}
		resp, status, _, done := r.ask(ctx)
		if done {
			b.Fatalf("ask ended the run: %s", status)
		}
		r.out.Turns++
		r.recordAssistant(resp)
		if status, msg, done := r.handleCalls(ctx, resp); done {
			b.Fatalf("turn ended the run: %s %s", status, msg)
		}
	}
}

type discardEvents struct{}

func (discardEvents) Write(transcript.Event) error { return nil }
