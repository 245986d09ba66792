package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
)

func TestTrimOldestToolResultsFirstWithHysteresis(t *testing.T) {
	h := newHistory(1200) // budget 3600 chars, trimmed down to 2160
	h.add(provider.Message{Role: provider.RoleSystem, Content: strings.Repeat("s", 50)})
	h.add(provider.Message{Role: provider.RoleUser, Content: "task"})
	for i := range 10 {
		h.add(provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c", RawArguments: `{"path":"x"}`}}})
		h.add(provider.Message{Role: provider.RoleTool, Content: fmt.Sprintf("%d%s", i, strings.Repeat("r", 399))})
	}
	if h.total != 54+10*(12+400) {
		t.Fatalf("size %d: call arguments must count", h.total)
	}
	fits, n := h.trim()
	if !fits || n != 6 || h.total > 2160 {
		t.Fatalf("trim = (%v, %d), size %d; want to fit at 60%% of the budget", fits, n, h.total)
	}
	if h.msgs[3].Content != trimmedResult || h.msgs[21].Content == trimmedResult || h.msgs[0].Content == trimmedResult {
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

func TestBudgetAndCalibration(t *testing.T) {
	h := newHistory(65536)
	if h.budget() != 65536*3 {
		t.Fatalf("default budget %d, want window×3", h.budget())
	}
	h.calibrate(3000, 1000)
	if h.budget() != int(65536*0.75*3) {
		t.Fatalf("calibrated budget %d", h.budget())
	}
	h.calibrate(100, 1000) // absurd: clamped
	if h.charsPerToken != minCharsPerToken {
		t.Fatalf("clamp %v", h.charsPerToken)
	}
	h.calibrate(100, 0) // no count: unchanged
	if h.charsPerToken != minCharsPerToken {
		t.Fatal("a zero count changed the calibration")
	}
}

// A reply of nested, unclosed objects (a model repeating itself to its
// token limit) is classified at once: decoding from every "{" took
// seconds at 64 KB and minutes at 256 KB.
func TestClassifyNestedObjectsStaysLinear(t *testing.T) {
	text := `"name" "arguments" ` + strings.Repeat(`{"name":`, 32<<10) // 256 KB
	done := make(chan string, 1)
	go func() { done <- classify(text, "stop") }()
	select {
	case got := <-done:
		if got != replyAnswer {
			t.Fatalf("classify = %s, want %s", got, replyAnswer)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("classify of 256 KB of nested objects did not finish within 10 s")
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
