package anthropic

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider"
)

func TestStreamedText(t *testing.T) {
	t.Parallel()
	api, p, _ := serve(t, reply{file: "text.sse"})
	var mu sync.Mutex
	var progress []int
	var tail string
	req := ask(true)
	req.OnProgress = func(pr provider.Progress) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, pr.Tokens)
		tail = pr.Tail.String()
	}
	resp, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Done: the off-by-one in pager.py is fixed." || resp.FinishReason != "stop" ||
		resp.Usage != (provider.Usage{PromptTokens: 1250, CompletionTokens: 15}) {
		t.Errorf("reply %+v", resp)
	}
	if body := decodeBody(t, api.requests()[0]); body["stream"] != true {
		t.Errorf("streamed request without stream: true: %v", body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) < 2 || progress[len(progress)-1] != 15 {
		t.Errorf("progress %v: want estimates while the text arrives, then the server's count", progress)
	}
	if tail != resp.Text {
		t.Errorf("the last progress's tail %q, want the whole (short) text %q", tail, resp.Text)
	}
}

func TestToolCall(t *testing.T) {
	t.Parallel()
	_, p, _ := serve(t, reply{file: "tool_use.sse"})
	resp, err := p.Chat(t.Context(), ask(true))
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.ToolCall{{
		ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "read_file",
		Arguments:    map[string]any{"path": "src/pager.py", "limit": json.Number("200")},
		RawArguments: `{"path": "src/pager.py", "limit": 200}`,
	}}
	if !reflect.DeepEqual(resp.ToolCalls, want) || resp.Text != "Let me read the file first." || resp.FinishReason != "tool_calls" {
		t.Errorf("reply %+v", resp)
	}
}

// TestParallelToolCalls: two calls in one reply come back in order, whole,
// from a stream and from a plain reply alike; the prompt counts the cache
// tokens too.
func TestParallelToolCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file   string
		stream bool
		text   string
	}{{"parallel_tools.sse", true, ""}, {"parallel_tools.json", false, "Reading both."}} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			_, p, _ := serve(t, reply{file: tc.file})
			resp, err := p.Chat(t.Context(), ask(tc.stream))
			if err != nil {
				t.Fatal(err)
			}
			want := []provider.ToolCall{
				{ID: "toolu_01A09q90qw90lq917835lq9", Name: "read_file", Arguments: map[string]any{"path": "a.py"}},
				{ID: "toolu_01B19r01rx01mr028946mr0", Name: "bash", Arguments: map[string]any{"command": "pytest -q", "timeout": json.Number("120")}},
			}
			if len(resp.ToolCalls) != 2 {
				t.Fatalf("calls %+v", resp.ToolCalls)
			}
			for i := range want {
				got := resp.ToolCalls[i]
				if got.ID != want[i].ID || got.Name != want[i].Name || !reflect.DeepEqual(got.Arguments, want[i].Arguments) || got.Error != "" {
					t.Errorf("call %d: %+v, want %+v", i, got, want[i])
				}
			}
			if resp.FinishReason != "tool_calls" || resp.Text != tc.text || resp.Usage != (provider.Usage{PromptTokens: 5100, CompletionTokens: 74}) {
				t.Errorf("reply %+v", resp)
			}
		})
	}
}

// TestMalformedToolInput: broken input JSON makes its call addressable
// but malformed, with the text kept, as on the OpenAI path; the other
// call of the reply is unharmed.
func TestMalformedToolInput(t *testing.T) {
	t.Parallel()
	_, p, _ := serve(t, reply{file: "malformed_input.sse"})
	resp, err := p.Chat(t.Context(), ask(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 {
		t.Fatalf("calls %+v", resp.ToolCalls)
	}
	bad, good := resp.ToolCalls[0], resp.ToolCalls[1]
	if bad.ID != "toolu_01Bad" || bad.Name != "write_file" || bad.Arguments != nil ||
		bad.RawArguments != `{"path": "a.py", "content": "x" "extra"}` ||
		!strings.HasPrefix(bad.Error, "malformed tool arguments: invalid character") {
		t.Errorf("bad call %+v", bad)
	}
	if good.ID != "toolu_01Good" || good.Error != "" || good.Arguments["path"] != "." {
		t.Errorf("good call %+v", good)
	}
}

// TestMalformedBlocks: tool_use blocks without a string id or name are
// unaddressable; input that is not an object is an addressable call with
// an error; blocks of other kinds are passed over (E-60).
func TestMalformedBlocks(t *testing.T) {
	t.Parallel()
	_, p, _ := serve(t, reply{file: "malformed_blocks.json"})
	resp, err := p.Chat(t.Context(), ask(false))
	if err != nil {
		t.Fatal(err)
	}
	type call struct{ id, name, raw, err string }
	var got []call
	for _, c := range resp.ToolCalls {
		got = append(got, call{c.ID, c.Name, c.RawArguments, c.Error})
	}
	entry := "malformed tool call entry (missing or invalid id/function fields)"
	want := []call{
		{"", "", "", entry},
		{"", "", "", entry},
		{"", "", "", entry},
		{"toolu_01Array", "read_file", "[1, 2]", "malformed tool arguments: must be a JSON object, got array"},
		{"toolu_01Str", "bash", `"ls -la"`, "malformed tool arguments: must be a JSON object, got string"},
		{"toolu_01Ok", "list_dir", `{"path": "."}`, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("calls\n got %+v\nwant %+v", got, want)
	}
}

// TestMalformedReplies: valid JSON of the wrong shape is a
// MalformedResponse with E-60's text; JSON that does not parse is a
// plain failure naming the URL.
func TestMalformedReplies(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		rp        reply
		stream    bool
		malformed bool
		text      string
	}{
		"content a string":       {reply{file: "no_content.json"}, false, true, errNoContent},
		"no content":             {reply{body: `{"type":"message","role":"assistant","stop_reason":"end_turn"}`}, false, true, errNoContent},
		"a list":                 {reply{body: `[1, 2]`}, false, true, errNoContent},
		"a number":               {reply{body: `42`}, false, true, errNoContent},
		"not JSON":               {reply{body: `{"content": [`}, false, false, "invalid JSON from "},
		"html":                   {reply{body: `<html>bad gateway</html>`}, false, false, "invalid JSON from "},
		"stream without a start": {reply{body: "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", sse: true}, true, true, errNoContent},
		"stream cut short": {
			reply{body: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[],\"usage\":{}}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", sse: true},
			true, false, "ended before the reply was complete",
		},
		"stream of bad JSON": {reply{body: "event: message_start\ndata: {\"type\":\"message_start\",\n\n", sse: true}, true, false, "invalid JSON from "},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, p, _ := serve(t, tc.rp)
			_, err := p.Chat(t.Context(), ask(tc.stream))
			pe := mustError(t, err)
			if pe.Malformed != tc.malformed || !strings.Contains(pe.Error(), tc.text) || pe.Transient {
				t.Errorf("error %+v (%q)", pe, pe.Error())
			}
			if tc.malformed && pe.Error() != errNoContent {
				t.Errorf("message %q, want %q", pe.Error(), errNoContent)
			}
		})
	}
}

// TestUsageSanitised: NaN, Infinity, negative, boolean and fractional
// counts (E-56) count as 0 or are truncated, never fail the reply, and
// the same words inside strings are left alone.
func TestUsageSanitised(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file   string
		stream bool
		text   string
		usage  provider.Usage
	}{
		{"nan_usage.json", false, "NaN is not a number, and Infinity is a word here.", provider.Usage{PromptTokens: 0, CompletionTokens: 12}},
		{"nan_usage.sse", true, "All done.", provider.Usage{PromptTokens: 300, CompletionTokens: 0}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			_, p, _ := serve(t, reply{file: tc.file})
			resp, err := p.Chat(t.Context(), ask(tc.stream))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.text || resp.Usage != tc.usage || resp.FinishReason != "stop" {
				t.Errorf("reply %+v", resp)
			}
		})
	}
}

// TestMaxTokensTruncation: stop_reason max_tokens is the "length" the
// engine treats as a cut-off reply, and a call cut off mid-input keeps its
// id and reports its arguments as malformed.
func TestMaxTokensTruncation(t *testing.T) {
	t.Parallel()
	_, p, _ := serve(t, reply{file: "max_tokens.sse"}, reply{file: "max_tokens.json"})
	resp, err := p.Chat(t.Context(), ask(true))
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "length" || len(resp.ToolCalls) != 1 || resp.Usage.CompletionTokens != 4096 {
		t.Fatalf("reply %+v", resp)
	}
	c := resp.ToolCalls[0]
	if c.ID != "toolu_01CutOff" || c.Name != "write_file" || c.Error != "malformed tool arguments: unexpected end of JSON input" ||
		!strings.HasPrefix(c.RawArguments, `{"path": "big.py"`) {
		t.Errorf("cut-off call %+v", c)
	}
	resp, err = p.Chat(t.Context(), ask(false))
	if err != nil || resp.FinishReason != "length" || resp.Text != "Here is the plan, step one is to" {
		t.Errorf("plain reply %+v, %v", resp, err)
	}
}

func TestFinishReasons(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "refusal": "stop", "pause_turn": "stop",
		"tool_use": "tool_calls", "max_tokens": "length", "model_context_window_exceeded": "length",
		"something_new": "something_new", "": "",
	} {
		if got := finishReason(in); got != want {
			t.Errorf("finishReason(%q) = %q, want %q", in, got, want)
		}
	}
}
