package openai

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// streamed is ask() with streaming on.
func streamed() provider.Request {
	req := ask()
	req.Stream = true
	return req
}

var parallelCalls = scripted.Script{Turns: []scripted.Turn{{
	Text: "Reading both files before I change anything — ünïcödé included.",
	ToolCalls: []scripted.ToolCall{
		{Name: "read_file", Arguments: json.RawMessage(`{"path":"internal/app/app.go","offset":120,"limit":80}`)},
		{Name: "bash", Arguments: json.RawMessage(`{"command":"go test ./... -run 'TestPager/next page' -count=1 2>&1 | tail -n 40"}`)},
		{Name: "grep", OmitID: true, Arguments: json.RawMessage(`"{\"pattern\": broken"`)},
	},
	Usage: &scripted.Usage{PromptTokens: 900, CompletionTokens: 80},
}}}

func TestStreamingAssemblesTheSameReply(t *testing.T) {
	_, plainP, _ := serve(t, parallelCalls)
	plain, err := plainP.Chat(t.Context(), ask())
	if err != nil {
		t.Fatal(err)
	}
	srv, streamP, _ := serve(t, parallelCalls)
	got, err := streamP.Chat(t.Context(), streamed())
	if err != nil {
		t.Fatal(err)
	}
	// The id-less call gets a made-up id from each provider's own counter.
	if plain.ToolCalls[2].ID == "" || got.ToolCalls[2].ID != plain.ToolCalls[2].ID {
		t.Fatalf("made-up ids %q and %q", plain.ToolCalls[2].ID, got.ToolCalls[2].ID)
	}
	if !reflect.DeepEqual(got, plain) {
		t.Fatalf("streamed  %+v\nplain     %+v", got, plain)
	}
	if plain.ToolCalls[2].Error == "" || plain.Usage.CompletionTokens != 80 || plain.FinishReason != "tool_calls" {
		t.Fatalf("reply = %+v", plain)
	}
	reqs := requests(t, srv, streamP)
	chat := reqs[0].Chat
	if !chat.Stream || chat.StreamOptions == nil || !chat.StreamOptions.IncludeUsage {
		t.Fatalf("streamed request = %+v", chat)
	}
	if accept := reqs[0].Header.Get("Accept"); accept != "text/event-stream" {
		t.Fatalf("Accept = %q", accept)
	}
}

func TestRecordedStreamsMatchTheirPlainReplies(t *testing.T) {
	for _, tc := range []struct{ stream, plain string }{
		{"vllm_stream_toolcalls.sse", "vllm_chat_toolcalls.json"},
		{"llamacpp_stream_toolcalls.sse", "llamacpp_chat_toolcalls.json"},
	} {
		t.Run(tc.stream, func(t *testing.T) {
			want, err := chatRaw(t, fixture(t, tc.plain))
			if err != nil {
				t.Fatal(err)
			}
			_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{RawStream: fixture(t, tc.stream)}}})
			got, err := p.Chat(t.Context(), streamed())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("streamed %+v\nplain    %+v", got, want)
			}
		})
	}
}

func TestRecordedStreams(t *testing.T) {
	for _, tc := range []struct {
		file  string
		check func(t *testing.T, r provider.Response)
	}{
		{"ollama_stream_toolcalls.sse", func(t *testing.T, r provider.Response) {
			want := provider.Response{
				Text: "I'll look at the file first.",
				ToolCalls: []provider.ToolCall{{
					ID: "call_x1kd83mq", Name: "read_file", RawArguments: `{"path":"internal/app/app.go","offset":0}`,
					Arguments: map[string]any{"path": "internal/app/app.go", "offset": json.Number("0")},
				}},
				FinishReason: "tool_calls", Usage: provider.Usage{PromptTokens: 3011, CompletionTokens: 52},
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("reply %+v\nwant  %+v", r, want)
			}
		}},
		{"ollama_stream_noindex.sse", func(t *testing.T, r provider.Response) {
			if len(r.ToolCalls) != 2 || r.ToolCalls[0].Name != "read_file" || r.ToolCalls[1].Name != "list_dir" ||
				r.ToolCalls[1].RawArguments != "{}" || r.FinishReason != "stop" {
				t.Fatalf("reply %+v", r)
			}
			if a, b := r.ToolCalls[0].ID, r.ToolCalls[1].ID; len(a) != 9 || len(b) != 9 || a == b {
				t.Fatalf("made-up ids %q %q", a, b)
			}
		}},
		{"lmstudio_stream_text.sse", func(t *testing.T, r provider.Response) {
			want := "<think>The tests pass.</think>\n\nFixed the off-by-one in `Pager.Next`; `go test ./...` passes."
			if r.Text != want || r.ToolCalls != nil || r.FinishReason != "stop" || r.Usage.CompletionTokens != 31 {
				t.Fatalf("reply %+v", r)
			}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{RawStream: fixture(t, tc.file)}}})
			r, err := p.Chat(t.Context(), streamed())
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}
}

func TestStreamRefusalSwitchesToPlainRequests(t *testing.T) {
	srv, p, rec := serve(t, scripted.Script{
		Turns: []scripted.Turn{{
			Text:   "plain reply",
			Errors: []scripted.HTTPError{{Status: 400, Body: `{"error":{"message":"Streaming is not supported for this model"}}`}},
		}},
	})
	resp, err := p.Chat(t.Context(), streamed())
	if err != nil || resp.Text != "plain reply" {
		t.Fatalf("chat: %v %+v", err, resp)
	}
	if _, err := p.Chat(t.Context(), streamed()); err != nil {
		t.Fatal(err)
	}
	var asked []bool
	for _, c := range chatRequests(t, srv, p) {
		asked = append(asked, c.Stream)
	}
	if !reflect.DeepEqual(asked, []bool{true, false, false}) {
		t.Fatalf("stream flags of the requests = %v", asked)
	}
	if !p.StreamingDisabled() || len(rec.all()) != 0 {
		t.Fatalf("disabled %v, waits %v", p.StreamingDisabled(), rec.all())
	}
}

func TestPlainJSONAnswerToAStreamSwitchesToPlainRequests(t *testing.T) {
	srv, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{
		RawBody: completionWith(`{"role":"assistant","content":"not streamed"}`, `"stop"`, `{"prompt_tokens":5,"completion_tokens":2}`),
	}}})
	resp, err := p.Chat(t.Context(), streamed())
	if err != nil || resp.Text != "not streamed" || resp.Usage.CompletionTokens != 2 {
		t.Fatalf("chat: %v %+v", err, resp)
	}
	if _, err := p.Chat(t.Context(), streamed()); err != nil {
		t.Fatal(err)
	}
	reqs := chatRequests(t, srv, p)
	if len(reqs) != 2 || !reqs[0].Stream || reqs[1].Stream {
		t.Fatalf("requests = %+v", reqs)
	}
}

func TestOtherRefusalsKeepStreaming(t *testing.T) {
	_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{
		Errors: []scripted.HTTPError{{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 4096 tokens (stream)"}}`}},
	}}})
	_, err := p.Chat(t.Context(), streamed())
	if pe := mustError(t, err); !pe.ContextOverflow || p.StreamingDisabled() {
		t.Fatalf("error %+v, streaming disabled %v", pe, p.StreamingDisabled())
	}
}

func TestProgressIsReportedWhileStreaming(t *testing.T) {
	text := strings.Repeat("abcd", 100) // 400 characters in 25 chunks
	_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{Text: text}}})
	var mu sync.Mutex
	var seen []int
	var tails []string
	req := streamed()
	req.OnProgress = func(pr provider.Progress) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, pr.Tokens)
		tails = append(tails, pr.Tail.String())
	}
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 20 {
		t.Fatalf("progress reported %d times: %v", len(seen), seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("progress went backwards: %v", seen)
		}
	}
	// The scripted usage chunk reports 101 completion tokens; before it
	// the estimate is four characters to the token.
	if seen[len(seen)-2] != 100 || seen[len(seen)-1] != 101 {
		t.Fatalf("progress = %v", seen)
	}
	// The tail is the end of the text so far: growing at first, then the
	// last TailBytes of it.
	if tails[0] == "" || !strings.HasPrefix(text, tails[0]) {
		t.Fatalf("first tail %q", tails[0])
	}
	if last := tails[len(tails)-1]; len(last) != provider.TailBytes || !strings.HasSuffix(text, last) {
		t.Fatalf("last tail %q (%d bytes)", last, len(last))
	}
}

func TestStreamFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		turn  scripted.Turn
		check func(t *testing.T, err error)
	}{
		"cut off mid-stream": {
			scripted.Turn{Text: strings.Repeat("long reply ", 40), CutAfterBytes: 700},
			func(t *testing.T, err error) {
				if pe := mustError(t, err); pe.Malformed || !strings.HasPrefix(pe.Error(), "reading the response from ") {
					t.Fatalf("error = %+v", pe)
				}
			},
		},
		"ends without finishing": {
			scripted.Turn{RawStream: "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n"},
			func(t *testing.T, err error) {
				if pe := mustError(t, err); !strings.Contains(pe.Error(), "ended before the reply was complete") {
					t.Fatalf("error = %+v", pe)
				}
			},
		},
		"no choices at all": {
			scripted.Turn{RawStream: "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\ndata: [DONE]\n\n"},
			func(t *testing.T, err error) {
				if pe := mustError(t, err); !pe.Malformed || pe.Error() != errNoMessage {
					t.Fatalf("error = %+v", pe)
				}
			},
		},
		"error event naming the context": {
			scripted.Turn{RawStream: "data: {\"error\":{\"message\":\"This model's maximum context length is 8192 tokens\",\"code\":400}}\n\n"},
			func(t *testing.T, err error) {
				if pe := mustError(t, err); !pe.ContextOverflow || pe.Transient || !strings.Contains(pe.Error(), "maximum context length") {
					t.Fatalf("error = %+v", pe)
				}
			},
		},
		"llama.cpp error line": {
			scripted.Turn{RawStream: "error: {\"code\":500,\"message\":\"slot unavailable\",\"type\":\"server_error\"}\n\n"},
			func(t *testing.T, err error) {
				if pe := mustError(t, err); !pe.Transient || !strings.HasSuffix(pe.Error(), ": slot unavailable") {
					t.Fatalf("error = %+v", pe)
				}
			},
		},
		"invalid chunk": {
			scripted.Turn{RawStream: "data: {\"choices\":[\n\n"},
			func(t *testing.T, err error) {
				if pe := mustError(t, err); pe.Malformed || !strings.HasPrefix(pe.Error(), "invalid JSON in the stream from ") {
					t.Fatalf("error = %+v", pe)
				}
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{tc.turn}})
			p.retry.Attempts = 1
			_, err := p.Chat(t.Context(), streamed())
			tc.check(t, err)
		})
	}
}
