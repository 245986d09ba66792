package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// turnMsgs is one assistant call and its results, of the given sizes.
func turnMsgs(results ...int) []provider.Message {
	msgs := []provider.Message{{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c", RawArguments: `{"path":"x"}`}}}}
	for i, n := range results {
		msgs = append(msgs, provider.Message{Role: provider.RoleTool, Content: fmt.Sprintf("%d%s", i, strings.Repeat("r", n-1))})
	}
	return msgs
}

func TestTrimOldestToolResultsFirstWithHysteresis(t *testing.T) {
	h := newHistory(1200) // no counts yet: a budget of 3600 chars
	h.add(provider.Message{Role: provider.RoleSystem, Content: strings.Repeat("s", 50)})
	h.add(provider.Message{Role: provider.RoleUser, Content: "task"})
	for range 10 {
		for _, m := range turnMsgs(400) {
			h.add(m)
		}
	}
	if h.total != 54+10*(12+400) {
		t.Fatalf("size %d: call arguments must count", h.total)
	}
	// Deep: the results left may take 15 % of the budget (540 chars), so
	// only the newest turn's is kept, not just enough to fit.
	fits, n := h.trim()
	stub := utf8.RuneCountInString(trimmedResult)
	if !fits || n != 9 || h.total != 54+10*12+9*stub+400 || h.keptChars != 400 {
		t.Fatalf("trim = (%v, %d), size %d, kept %d; want the 9 oldest replaced", fits, n, h.total, h.keptChars)
	}
	if h.msgs[3].Content != trimmedResult || h.msgs[19].Content != trimmedResult || h.msgs[21].Content == trimmedResult || h.msgs[0].Content == trimmedResult {
		t.Fatal("must trim the oldest tool results and never the system prompt")
	}
	if !h.changed {
		t.Fatal("a trim must mark the prefix changed")
	}
	if fits, n := h.trim(); !fits || n != 0 {
		t.Fatalf("second trim = (%v, %d)", fits, n)
	}
	h.add(provider.Message{Role: provider.RoleUser, Content: strings.Repeat("u", 4000)})
	if fits, _ := h.trim(); fits {
		t.Fatal("a history that cannot fit reported fitting")
	}
}

// A trim takes whole turns' results, and keeps the newest turn's (which
// the model has not seen) unless nothing else makes the history fit.
func TestTrimWholeTurnsKeepingTheNewest(t *testing.T) {
	build := func(turns ...[]int) *history {
		h := newHistory(1200) // 3600 chars; results may keep 540 after a trim
		h.add(provider.Message{Role: provider.RoleSystem, Content: "s"})
		h.add(provider.Message{Role: provider.RoleUser, Content: "t"})
		for _, turn := range turns {
			for _, m := range turnMsgs(turn...) {
				h.add(m)
			}
		}
		return h
	}
	trimmed := func(h *history) []bool {
		var out []bool
		for _, m := range h.msgs {
			if m.Role == provider.RoleTool {
				out = append(out, m.Content == trimmedResult)
			}
		}
		return out
	}

	// After the second turn's first result the rest would be 400 chars;
	// the turn goes whole.
	h := build([]int{1500, 1500}, []int{300, 300}, []int{100})
	if fits, n := h.trim(); !fits || n != 4 || !slices.Equal(trimmed(h), []bool{true, true, true, true, false}) {
		t.Fatalf("trim = (%v, %d), trimmed %v; want both older turns whole", fits, n, trimmed(h))
	}
	// The newest turn's 600 chars are over 15 % but stay.
	h = build([]int{1500, 1500}, []int{600})
	if fits, n := h.trim(); !fits || n != 2 || !slices.Equal(trimmed(h), []bool{true, true, false}) {
		t.Fatalf("trim = (%v, %d), trimmed %v; want the newest result kept", fits, n, trimmed(h))
	}
	// Unless only replacing it makes the history fit.
	h = build([]int{500}, []int{3600})
	if fits, n := h.trim(); !fits || n != 2 || !slices.Equal(trimmed(h), []bool{true, true}) {
		t.Fatalf("trim = (%v, %d), trimmed %v; the newest result must go when nothing else fits", fits, n, trimmed(h))
	}
}

func TestBudgetAndCalibration(t *testing.T) {
	h := newHistory(65536).withReply(4096)
	if h.budget() != 65536*3 {
		t.Fatalf("default budget %d chars, want window×3", h.budget())
	}
	h.calibrate(h.mark(), 0) // no usage: still characters
	if h.counting() || h.budget() != 65536*3 {
		t.Fatal("a missing count changed the budget")
	}
	h.add(provider.Message{Role: provider.RoleSystem, Content: strings.Repeat("s", 400)})
	h.add(provider.Message{Role: provider.RoleUser, Content: strings.Repeat("u", 400)})
	h.calibrate(h.mark(), 40) // 800 chars cannot be 40 tokens: a count of the uncached part
	if h.counting() {
		t.Fatal("an implausible count was trusted")
	}

	// A count: the budget is the window less the reply's room, in tokens,
	// and the next prompt is the count plus the new messages' estimate.
	h.calibrate(h.mark(), 1500) // the tool schemas are in the count
	if !h.counting() || h.budget() != 65536-4096 || h.estTokens() != 1500 {
		t.Fatalf("counting %v, budget %d, estimate %d", h.counting(), h.budget(), h.estTokens())
	}
	for _, m := range turnMsgs(3000) {
		h.add(m)
	}
	if h.estTokens() <= 1500+3000/defaultCharsPerT {
		t.Fatalf("estimate %d: before two counts the new messages are guessed high", h.estTokens())
	}
	// The second count measures the new messages: 3012 chars in 760
	// tokens, 8 of them the two messages' framing, is 4.005 chars a token.
	h.calibrate(h.mark(), 2260)
	if math.Abs(h.charsPerToken-3012.0/752) > 1e-9 || h.toks[2]+h.toks[3] != 760 || h.keptToks != h.toks[3] {
		t.Fatalf("chars per token %v, tokens %v, kept %d", h.charsPerToken, h.toks, h.keptToks)
	}
	for _, m := range turnMsgs(3000) {
		h.add(m)
	}
	if want := 2260 + h.guess(12) + h.guess(3000); h.estTokens() != want {
		t.Fatalf("estimate %d, want the count plus the new messages' %d", h.estTokens(), want-2260)
	}

	// A count below the one of a prompt this extends is a partial count.
	partial := *h
	partial.calibrate(partial.mark(), 2000)
	if partial.counting() || partial.budget() != 65536*3 {
		t.Fatal("a count smaller than the previous prompt's was trusted")
	}

	// Trimming a counted result takes off what it was counted at.
	before, counted := h.estTokens(), h.toks[3]
	h.replace(3)
	if want := before - counted + h.guess(utf8.RuneCountInString(trimmedResult)); h.estTokens() != want {
		t.Fatalf("estimate %d after a trim, want %d", h.estTokens(), want)
	}

	// The reply's room is max_tokens, at most half the window; a quarter
	// when the server decides.
	for _, tt := range []struct{ window, reply, budget int }{{8192, 4096, 4096}, {4096, 4096, 2048}, {8192, 0, 6144}} {
		h := newHistory(tt.window).withReply(tt.reply)
		h.calibrate(h.mark(), 10)
		if h.budget() != tt.budget {
			t.Errorf("window %d, max_tokens %d: budget %d, want %d", tt.window, tt.reply, h.budget(), tt.budget)
		}
	}
}

// A reply of nested, unclosed objects (a model repeating itself to its
// token limit) is classified at once: decoding from every "{" took
// seconds at 64 KB and minutes at 256 KB. The ceiling is generous: under
// the race detector on a busy machine the linear pass takes 5 s and more.
func TestClassifyNestedObjectsStaysLinear(t *testing.T) {
	text := `"name" "arguments" ` + strings.Repeat(`{"name":`, 32<<10) // 256 KB
	done := make(chan string, 1)
	go func() { done <- classify(text, "stop") }()
	select {
	case got := <-done:
		if got != replyAnswer {
			t.Fatalf("classify = %s, want %s", got, replyAnswer)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("classify of 256 KB of nested objects did not finish within 60 s")
	}
}

func TestClassify(t *testing.T) {
	tests := map[string]struct{ text, reason, want string }{
		"answer":       {"Done. Changed a.go.", "stop", replyAnswer},
		"length":       {"Done", "length", replyTruncated},
		"empty":        {"  \n", "stop", replyEmpty},
		"think only":   {"<think>x</think>  ", "stop", replyEmpty},
		"unclosed":     {"<think>still thinking", "stop", replyEmpty},
		"think+answer": {"<think>x</think>All good", "stop", replyAnswer},
		"xml marker":   {"<function=read_file>", "stop", replyTextToolCall},
		"json call":    {`ok {"x":1} then {"name":"bash","arguments":{}}`, "stop", replyTextToolCall},
		"json no args": {`{"name":"bash"}`, "stop", replyAnswer},
		"name not str": {`{"name":1,"arguments":{}}`, "stop", replyAnswer},
		"args first":   {"see {\n  \"arguments\": {\"path\": \"a\"}, \"name\": \"read_file\"}", "stop", replyTextToolCall},
		"typed call":   {`{"type":"function","name":"bash","arguments":"{}"}`, "stop", replyTextToolCall},
		"nested call":  {`{"function":{"name":"bash","arguments":{}}}`, "stop", replyTextToolCall},
	}
	for name, tt := range tests {
		if got := classify(tt.text, tt.reason); got != tt.want {
			t.Errorf("%s: classify = %s, want %s", name, got, tt.want)
		}
	}
}
