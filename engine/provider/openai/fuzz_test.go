package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// fuzzTarget is the URL the fuzzed replies claim to come from.
const fuzzTarget = "http://127.0.0.1:1234/v1/chat/completions"

// fuzzContentTypes are the Content-Type headers a reply to a streamed
// request is fuzzed with: an event stream, plain JSON, and none (the first
// byte decides).
var fuzzContentTypes = []string{"text/event-stream", "application/json", ""}

// addFixtures adds every testdata file matching pattern as a seed, under
// each content type.
func addFixtures(f *testing.F, pattern string, add func(data []byte)) {
	names, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(names) == 0 {
		f.Fatalf("no fixtures %s: %v", pattern, err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		add(data)
	}
}

// streamReply parses body as chatStream does once the server answered a
// streamed request with contentType: a plain JSON completion, or an event
// stream assembled chunk by chunk. Every progress report is checked.
func streamReply(t *testing.T, body []byte, contentType string) (provider.Response, error) {
	p := New(Config{BaseURL: "http://127.0.0.1:1234/v1"})
	br := bufio.NewReaderSize(bytes.NewReader(body), 64<<10)
	if isPlainJSON(contentType, br) {
		data, err := readBody(t.Context(), br, fuzzTarget)
		if err != nil {
			t.Fatalf("reading from memory failed: %v", err)
		}
		return p.parseCompletion(data, fuzzTarget)
	}
	return p.readStream(t.Context(), &sseReader{r: br}, fuzzTarget, func(pr provider.Progress) {
		if pr.Tokens < 0 || pr.Tail == nil {
			t.Fatalf("progress %+v", pr)
		}
	})
}

// checkReply asserts what every parsed reply guarantees the engine: a
// provider error, or counts that are not negative and tool calls that are
// either addressable and decoded (their arguments the object their raw
// text holds) or carry the adapter's complaint and no arguments. An
// addressable call put back into the history is re-sent as the server
// sent it, and reads back as the same call.
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
	p := New(Config{BaseURL: "http://127.0.0.1:1234/v1"})
	for i, c := range r.ToolCalls {
		if c.Error != "" {
			if c.Arguments != nil || (c.Error != errMalformedEntry && !strings.HasPrefix(c.Error, malformedArgsPrefix)) {
				t.Fatalf("call %d: %+v", i, c)
			}
			if c.Error == errMalformedEntry {
				continue
			}
		}
		if c.ID == "" || c.Name == "" || c.RawArguments == "" {
			t.Fatalf("call %d without id, name or arguments: %+v", i, c)
		}
		args, msg := decodeArguments(c.RawArguments)
		if msg != c.Error || !reflect.DeepEqual(args, c.Arguments) {
			t.Fatalf("call %d: its raw arguments %q decode to %#v (%q), the call holds %#v (%q)",
				i, c.RawArguments, args, msg, c.Arguments, c.Error)
		}
		if c.Error == "" && c.Arguments == nil {
			t.Fatalf("call %d: addressable without arguments: %+v", i, c)
		}
		// The next request carries the call back; the server's echo of it
		// is the same call.
		wire := encodeMessage(provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{c}})
		if len(wire.ToolCalls) != 1 || wire.ToolCalls[0].Function.Arguments != c.RawArguments {
			t.Fatalf("call %d goes back as %+v", i, wire.ToolCalls)
		}
		data, err := json.Marshal(wire.ToolCalls)
		if err != nil {
			t.Fatalf("call %d does not encode: %v", i, err)
		}
		v, err := decodeJSON(data)
		if err != nil {
			t.Fatalf("call %d encodes to %s: %v", i, data, err)
		}
		back := p.parseToolCalls(v)
		if len(back) != 1 || !reflect.DeepEqual(back[0], c) {
			t.Fatalf("call %d goes back as %s and reads as %+v, was %+v", i, data, back, c)
		}
	}
}

// FuzzStream feeds arbitrary bodies to the parse of a streamed reply, as
// each server dialect sends it: event streams of chunks with tool-call
// deltas (by index, without index, without id, ids and names repeated,
// arguments as fragments or whole objects, error events), and plain JSON
// completions from servers that do not stream. Beyond checkReply's
// guarantees, the parse is deterministic, and an event stream with CRLF
// line ends parses as with LF ones.
func FuzzStream(f *testing.F) {
	add := func(data []byte) {
		for ct := range fuzzContentTypes {
			f.Add(data, uint8(ct))
		}
	}
	addFixtures(f, "*_stream_*.sse", add)
	addFixtures(f, "*_chat_*.json", add)
	addFixtures(f, "nan_usage.json", add)
	addFixtures(f, "*_context_overflow.json", add)
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"cut\"}}]}\n\n",
		"error: {\"error\":{\"code\":500,\"message\":\"slot unavailable\"}}\n\n",
		"event: error\ndata: {\"message\":\"the request exceeds the available context size\"}\n\n",
		"data: {\"error\":{\"message\":\"overloaded\",\"code\":503}}\n\n",
		": keep-alive\r\nid: 1\r\nretry: 10\r\ndata: {\"choices\":[{\"message\":{\"content\":\"whole\"},\"finish_reason\":\"stop\"}]}\r\n\r\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":7,\"function\":{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\"\"}},{\"function\":{\"arguments\":\":\\\"x\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[1,{\"index\":1,\"function\":\"x\"}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":NaN,\"completion_tokens\":-Infinity}}\n\n",
		"data: [DONE]\n\n",
		"\n\n{\"choices\":[{\"message\":{\"content\":\"plain\"},\"finish_reason\":\"stop\"}]}",
		"",
	} {
		add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte, ct uint8) {
		contentType := fuzzContentTypes[int(ct)%len(fuzzContentTypes)]
		r, err := streamReply(t, body, contentType)
		checkReply(t, r, err)
		again, errAgain := streamReply(t, body, contentType)
		if !reflect.DeepEqual(again, r) || errorText(errAgain) != errorText(err) {
			t.Fatalf("parsed twice: %+v, %v\nthen %+v, %v", r, err, again, errAgain)
		}
		if bytes.IndexByte(body, '\r') >= 0 {
			return
		}
		if lead := len(body) - len(bytes.TrimLeft(body, " \t\n")); contentType == "" && 2*lead >= 512 {
			return // the sniff sees 512 bytes: doubled, the blank lead hides the first byte
		}
		crlf := bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n"))
		br := bufio.NewReaderSize(bytes.NewReader(body), 64<<10)
		if isPlainJSON(contentType, br) {
			// CRLF is white space to JSON; only the errors' wording may
			// name the other character.
			rc, errc := streamReply(t, crlf, contentType)
			if !reflect.DeepEqual(rc, r) || (errc == nil) != (err == nil) {
				t.Fatalf("CRLF line ends: %+v, %v\nLF: %+v, %v", rc, errc, r, err)
			}
			return
		}
		rc, errc := streamReply(t, crlf, contentType)
		if !reflect.DeepEqual(rc, r) || errorText(errc) != errorText(err) {
			t.Fatalf("CRLF line ends: %+v, %v\nLF: %+v, %v", rc, errc, r, err)
		}
	})
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzDecodeJSON feeds arbitrary bytes to the JSON reading every reply,
// probe answer and model list goes through. finiteJSON is idempotent,
// changes nothing in text without a non-finite literal nor in valid JSON,
// and decodeJSON accepts exactly what is one valid JSON value once those
// literals are null. The model list parse never panics, and a list it
// accepts has one id per entry.
func FuzzDecodeJSON(f *testing.F) {
	addFixtures(f, "*.json", func(data []byte) { f.Add(data) })
	for _, s := range []string{
		`{"a":NaN,"b":Infinity,"c":-Infinity}`, `[NaN, -Infinity ,Infinity]`, `{"s":"NaN Infinity -Infinity"}`,
		`{"s":"quote \" NaN \\","t":NaN}`, `{"NaN":1,"Infinity":[Infinity]}`, ` {"big":9007199254740993,"f":1.50} `,
		``, `{`, `{} []`, `nan`, `"\`, `-NaN`, `--Infinity`, `{"data":[{"id":"m"},{"id":1}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fin := finiteJSON(data)
		if !bytes.Equal(finiteJSON(fin), fin) {
			t.Fatalf("finiteJSON is not idempotent: %q -> %q -> %q", data, fin, finiteJSON(fin))
		}
		if (!bytes.Contains(data, literalNaN) && !bytes.Contains(data, literalInf) || json.Valid(data)) && !bytes.Equal(fin, data) {
			t.Fatalf("finiteJSON changed %q to %q", data, fin)
		}
		v, err := decodeJSON(data)
		if (err == nil) != json.Valid(fin) {
			t.Fatalf("decodeJSON(%q): %v, but the text with null for the literals is valid: %v", data, err, json.Valid(fin))
		}
		if err == nil {
			var want any
			dec := json.NewDecoder(bytes.NewReader(fin))
			dec.UseNumber()
			if dec.Decode(&want) != nil || !reflect.DeepEqual(v, want) {
				t.Fatalf("decodeJSON(%q) = %#v, want %#v", data, v, want)
			}
		}
		ids, err := parseModelList(data, "http://127.0.0.1:1234/v1/models")
		if err != nil {
			if _, ok := provider.AsError(err); !ok {
				t.Fatalf("model list error %T %v", err, err)
			}
			return
		}
		top, _ := object(v)
		if list, _ := top["data"].([]any); len(list) != len(ids) {
			t.Fatalf("%d ids from %d entries", len(ids), len(list))
		}
	})
}

// probeBodies are the answers of the fuzzed probe server, by request.
type probeBodies map[string][]byte

// probeServer answers the probe requests of every dialect with the bodies
// of the current iteration: 404 for an empty one.
type probeServer struct {
	mu     sync.Mutex
	bodies probeBodies
}

func (s *probeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body := s.bodies[r.Method+" "+r.URL.Path]
	s.mu.Unlock()
	if len(body) == 0 {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// FuzzProbeServedWindow serves arbitrary answers to the context-window
// probes of every dialect (LM Studio's /api/v0/models, Ollama's /api/ps
// and /api/show, llama.cpp's /props, vLLM's /v1/models) from one local
// server and checks the window the provider makes of them: never a
// non-positive or implausible window, a dialect it knows, a reported
// window only from a server that reported one, and the same answer twice
// (and from ProbeContextWindow).
func FuzzProbeServedWindow(f *testing.F) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	lms, ps, psEmpty := read("lmstudio_api_v0_models.json"), read("ollama_ps.json"), read("ollama_ps_empty.json")
	show, showCtx, props, vllm := read("ollama_show_default.json"), read("ollama_show_num_ctx.json"), read("llamacpp_props.json"), read("vllm_models.json")
	none := []byte{}
	f.Add(lms, none, none, none, none)
	f.Add(none, ps, show, none, none)
	f.Add(none, psEmpty, showCtx, none, none)
	f.Add(none, psEmpty, show, none, none)
	f.Add(none, none, none, props, none)
	f.Add(none, none, none, none, vllm)
	f.Add(lms, ps, show, props, vllm)
	f.Add([]byte(`{"data":[{"id":"m","state":"not-loaded","loaded_context_length":8192}]}`), []byte(`{"models":[]}`), none, []byte(`{"default_generation_settings":{"n_ctx":1.5e3}}`), []byte(`{"data":[{"id":"m","max_model_len":-1}]}`))
	srv := &probeServer{}
	ts := httptest.NewServer(srv)
	f.Cleanup(ts.Close)
	client := &http.Client{Timeout: 5 * time.Second}
	const model = "m"
	f.Fuzz(func(t *testing.T, lmstudio, running, shown, llamacpp, models []byte) {
		srv.mu.Lock()
		srv.bodies = probeBodies{
			"GET /api/v0/models": lmstudio, "GET /api/ps": running, "POST /api/show": shown,
			"GET /props": llamacpp, "GET /v1/models": models,
		}
		srv.mu.Unlock()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		p := New(Config{BaseURL: ts.URL + "/v1", HTTPClient: client})
		w, ok := p.ProbeServedWindow(ctx, model)
		if ctx.Err() != nil {
			t.Fatalf("the probes did not end within their deadline: a hang")
		}
		if !ok {
			if !reflect.DeepEqual(w, provider.ServedWindow{}) {
				t.Fatalf("no answer, but a window %+v", w)
			}
		} else {
			switch {
			case w.Tokens <= 0 || w.ModelMax < 0:
				t.Fatalf("window %+v", w)
			case w.Server != "lmstudio" && w.Server != "ollama" && w.Server != "llama.cpp" && w.Server != "vllm":
				t.Fatalf("window from server %q", w.Server)
			case !w.Reported && (w.Server != "ollama" || w.Tokens != ollamaDefaultContext):
				t.Fatalf("an unreported window that is not Ollama's default: %+v", w)
			}
		}
		if again, okAgain := p.ProbeServedWindow(ctx, model); again != w || okAgain != ok {
			t.Fatalf("asked again: %+v %v, first %+v %v", again, okAgain, w, ok)
		}
		n, reported := p.ProbeContextWindow(ctx, model)
		if reported != (ok && w.Reported) || (reported && n != w.Tokens) {
			t.Fatalf("ProbeContextWindow = %d %v for %+v %v", n, reported, w, ok)
		}
		if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the probes did not end within their deadline: a hang")
		}
	})
}
