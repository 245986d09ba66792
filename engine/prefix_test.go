package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/engine/provider/openai"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/engine/tools"
	"github.com/dirtywork/dirtywork/transcript"
)

// TestTrimKeepsThePromptPrefixStable runs a scripted 60-turn conversation
// over real HTTP whose history overflows the context budget several
// times, and checks in the server's own request log that at least 90 % of
// requests extend the previous request's messages exactly: what a local
// server needs to reuse its prompt cache.
func TestTrimKeepsThePromptPrefixStable(t *testing.T) {
	var turns []scripted.Turn
	for i := range 59 {
		args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("src/file%02d.txt", i)})
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: args}}})
	}
	summary := "read them all"
	turns = append(turns, scripted.Turn{Finish: &summary})
	srv := scripted.New(scripted.Script{Turns: turns})
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()

	ws := &fakeWS{answers: map[string]string{}}
	for i := range 59 {
		ws.answers[fmt.Sprintf("src/file%02d.txt", i)] = strings.Repeat(fmt.Sprintf("line %02d of a long file\n", i), 125) // 3000 chars
	}
	ev := &events{}
	loop := &Loop{
		Provider: openai.New(openai.Config{BaseURL: base}),
		Tools:    tools.New(ws, policy.Options{}), Events: ev,
		Model: scripted.DefaultModel, MaxTurns: 100, Timeout: time.Minute, MaxTokens: 4096, Stream: true,
		ContextWindow: 24000, StallTurns: 0, StuckRepeats: 0,
	}
	out := loop.Run(t.Context(), "system prompt", "read every file")
	if out.Status != transcript.StatusCompleted || out.Turns != 60 {
		t.Fatalf("%+v", out)
	}
	if out.TrimmedTurns < 2 {
		t.Fatalf("the history overflowed only %d times; the test needs at least 2", out.TrimmedTurns)
	}

	// The server records a request when its handler returns, which can be
	// after the client sent the next one: order them by their turn.
	recorded, err := srv.AwaitRequests(t.Context(), 60)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]*scripted.ChatRequest, 60)
	for _, r := range recorded {
		if r.Chat == nil || r.Turn < 0 || r.Turn >= 60 || reqs[r.Turn] != nil {
			t.Fatalf("unexpected request %+v", r)
		}
		reqs[r.Turn] = r.Chat
	}
	extends := 0
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1].Messages, reqs[i].Messages
		if len(cur) < len(prev) {
			continue
		}
		same := true
		for j := range prev {
			a, _ := json.Marshal(prev[j])
			b, _ := json.Marshal(cur[j])
			if string(a) != string(b) {
				same = false
				break
			}
		}
		if same {
			extends++
		}
	}
	if share := float64(extends) / float64(len(reqs)-1); share < 0.90 {
		t.Fatalf("only %d of %d requests extend the previous one (%.0f %%), with %d trims", extends, len(reqs)-1, share*100, out.TrimmedTurns)
	}
	if out.PrefixReuse != extends {
		t.Fatalf("prefix_reuse reports %d, the server saw %d", out.PrefixReuse, extends)
	}
	t.Logf("%d trims; %d of %d requests extend the previous one", out.TrimmedTurns, extends, len(reqs)-1)
}
