package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// fuzzTarget is the URL the fuzzed non-streamed replies claim to come
// from.
const fuzzTarget = "http://127.0.0.1:1/v1/messages"

// addFixtures adds every testdata file matching pattern as a seed.
func addFixtures(f *testing.F, pattern string) {
	names, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(names) == 0 {
		f.Fatalf("no fixtures %s: %v", pattern, err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// checkReply asserts what every parsed reply guarantees the engine: a
// provider error and nothing else, or counts that are not negative, a
// finish reason in the OpenAI path's words for the stop reasons it maps,
// and tool calls that are either addressable and decoded (their arguments
// the object their raw text holds, which is what the next request sends
// back as the call's input) or carry the adapter's complaint and no
// arguments.
func checkReply(t *testing.T, r provider.Response, err error) {
	t.Helper()
	if err != nil {
		if _, ok := provider.AsError(err); !ok {
			t.Fatalf("error %T %v is not a *provider.Error", err, err)
		}
		if !reflect.DeepEqual(r, provider.Response{}) {
			t.Fatalf("a failed reply holds %+v", r)
		}
		return
	}
	if r.Usage.PromptTokens < 0 || r.Usage.CompletionTokens < 0 {
		t.Fatalf("usage %+v", r.Usage)
	}
	switch r.FinishReason {
	case "end_turn", "stop_sequence", "refusal", "pause_turn", "tool_use", "max_tokens", "model_context_window_exceeded":
		t.Fatalf("stop reason %q passed through unmapped", r.FinishReason)
	}
	for i, c := range r.ToolCalls {
		if c.Error == errMalformedEntry {
			if c.Arguments != nil || c.ID != "" {
				t.Fatalf("call %d: %+v", i, c)
			}
			continue
		}
		if c.ID == "" || c.Name == "" || c.RawArguments == "" {
			t.Fatalf("call %d without id, name or arguments: %+v", i, c)
		}
		args, msg := decodeArguments(c.RawArguments)
		if msg != c.Error || !reflect.DeepEqual(args, c.Arguments) {
			t.Fatalf("call %d: its raw arguments %q decode to %#v (%q), the call holds %#v (%q)",
				i, c.RawArguments, args, msg, c.Arguments, c.Error)
		}
		if c.Error != "" {
			if c.Arguments != nil || !strings.HasPrefix(c.Error, malformedArgsPrefix) {
				t.Fatalf("call %d: %+v", i, c)
			}
			continue
		}
		if c.Arguments == nil {
			t.Fatalf("call %d: addressable without arguments: %+v", i, c)
		}
		// The next request carries the call back as a tool_use block whose
		// input is the object the call holds.
		dec := json.NewDecoder(bytes.NewReader(callInput(c)))
		dec.UseNumber()
		var input map[string]any
		if err := dec.Decode(&input); err != nil || !reflect.DeepEqual(input, c.Arguments) {
			t.Fatalf("call %d goes back with input %s (%v), holds %#v", i, callInput(c), err, c.Arguments)
		}
	}
}

// finiteLines is what finiteBody makes of data: finiteJSON line by line.
func finiteLines(data []byte) []byte {
	var out []byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n') + 1
		if i == 0 {
			i = len(data)
		}
		out = append(out, finiteJSON(data[:i])...)
		data = data[i:]
	}
	return out
}

// FuzzParseMessage feeds arbitrary bodies to the parse of a non-streamed
// Messages reply, through the body cleaning every answer gets (NaN and
// Infinity read as null). The cleaning is finiteJSON line by line, is
// idempotent and leaves valid JSON as it is; the parse never panics and
// holds checkReply's guarantees, and parses a body the same way twice.
func FuzzParseMessage(f *testing.F) {
	addFixtures(f, "*.json")
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`,
		`{"content":[{"type":"tool_use","id":"t","name":"bash","input":null}],"stop_reason":"tool_use"}`,
		`{"content":[{"type":"tool_use","id":"t","name":"bash","input":{"command":NaN}}],"usage":{"input_tokens":-Infinity}}`,
		`{"content":"text"}`, `{"content":null}`, `[]`, `nope`, "",
		"{\"content\":[],\n\"usage\":{\"output_tokens\":Infinity}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		cleaned, err := io.ReadAll(newFiniteBody(io.NopCloser(bytes.NewReader(body))))
		if err != nil {
			t.Fatalf("cleaning a body in memory failed: %v", err)
		}
		if want := finiteLines(body); !bytes.Equal(cleaned, want) {
			t.Fatalf("cleaned %q to %q, want %q", body, cleaned, want)
		}
		if !bytes.Equal(finiteLines(cleaned), cleaned) {
			t.Fatalf("cleaning is not idempotent: %q", cleaned)
		}
		if json.Valid(body) && !bytes.Equal(cleaned, body) {
			t.Fatalf("cleaning changed valid JSON %q to %q", body, cleaned)
		}
		r, err := parseMessage(cleaned, fuzzTarget)
		checkReply(t, r, err)
		again, errAgain := parseMessage(cleaned, fuzzTarget)
		if !reflect.DeepEqual(again, r) || (errAgain == nil) != (err == nil) {
			t.Fatalf("parsed twice: %+v, %v\nthen %+v, %v", r, err, again, errAgain)
		}
	})
}

// streamServer answers every request with the current iteration's body as
// an event stream.
type streamServer struct {
	mu   sync.Mutex
	body []byte
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	body := s.body
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = w.Write(body)
}

// FuzzChatStream serves arbitrary event streams to a streamed Chat from
// one local server (the stream is only reachable through the SDK's HTTP
// client): events out of order, blocks never started, deltas of unknown
// types, input_json_delta fragments that never make JSON, error events,
// non-finite counts. Chat never panics, holds checkReply's guarantees,
// and answers a stream served again the same way, with CRLF line ends
// for LF ones.
func FuzzChatStream(f *testing.F) {
	addFixtures(f, "*.sse")
	for _, s := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":9,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" +
			"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":NaN}}\n\n",
		"data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"bash\",\"input\":[1]}}\n\n" +
			"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"}}\n\n",
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"prompt is too long: 300000 tokens > 200000 maximum\"}}\n\n",
		"data: {\"type\":\"message_start\",\"message\":{}}\n\n",
		"",
	} {
		f.Add([]byte(s))
	}
	srv := &streamServer{}
	ts := httptest.NewServer(srv)
	f.Cleanup(ts.Close)
	p := New(Config{
		BaseURL: ts.URL, APIKey: testKey,
		HTTPClient: &http.Client{Timeout: 10 * time.Second},
		Retry:      provider.RetryPolicy{Attempts: 1},
	})
	chat := func(t *testing.T, body []byte) (provider.Response, error) {
		srv.mu.Lock()
		srv.body = body
		srv.mu.Unlock()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		req := ask(true)
		req.OnProgress = func(pr provider.Progress) {
			if pr.Tokens < 0 || pr.Tail == nil {
				t.Fatalf("progress %+v", pr)
			}
		}
		r, err := p.Chat(ctx, req)
		if ctx.Err() != nil {
			t.Fatalf("the local exchange did not end within its deadline: a hang")
		}
		return r, err
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := chat(t, body)
		checkReply(t, r, err)
		// The same stream again, with CRLF line ends where it has none
		// (the SSE decoder takes both): the same answer. Each exchange is
		// costly, so the body served twice as it is covers determinism.
		again := body
		if bytes.IndexByte(body, '\r') < 0 {
			again = bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n"))
		}
		r2, err2 := chat(t, again)
		if !reflect.DeepEqual(r2, r) || errorText(err2) != errorText(err) {
			t.Fatalf("served again (CRLF line ends: %v): %+v, %v\nfirst: %+v, %v", !bytes.Equal(again, body), r2, err2, r, err)
		}
	})
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
