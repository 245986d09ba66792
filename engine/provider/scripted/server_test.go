package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// start serves script on a loopback port for the test's life and returns
// the server and a go-openai client pointed at it.
func start(t *testing.T, script Script) (*Server, *openai.Client) {
	t.Helper()
	if err := script.Validate(); err != nil {
		t.Fatal(err)
	}
	srv := New(script)
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = base
	return srv, openai.NewClientWithConfig(cfg)
}

func strptr(s string) *string { return &s }

// await returns the recorded requests once there are n, failing the test
// if they do not arrive within 5 s.
func await(t *testing.T, srv *Server, n int) []Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	reqs, err := srv.AwaitRequests(ctx, n)
	if err != nil {
		t.Fatalf("%v (have %d)", err, len(reqs))
	}
	return reqs
}

// history returns a request history holding n assistant messages.
func history(n int) []openai.ChatCompletionMessage {
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "system"},
		{Role: openai.ChatMessageRoleUser, Content: "task"},
	}
	for i := range n {
		msgs = append(msgs,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "a"},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "u" + string(rune('0'+i))},
		)
	}
	return msgs
}

var twoCalls = Script{
	Model: "m1",
	Turns: []Turn{
		{Text: "looking", ToolCalls: []ToolCall{
			{Name: "read_file", Arguments: json.RawMessage(`{"path":"README.md","offset":2}`)},
			{Name: "bash", Arguments: json.RawMessage(`{"command":"echo héllo wörld — a long enough command to be fragmented"}`)},
		}},
		{Finish: strptr("all done")},
	},
}

func TestListModels(t *testing.T) {
	_, client := start(t, twoCalls)
	list, err := client.ListModels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 1 || list.Models[0].ID != "m1" {
		t.Fatalf("models = %+v", list.Models)
	}
}

func TestChatNonStreamingToolCalls(t *testing.T) {
	srv, client := start(t, twoCalls)
	resp, err := client.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "m1", Messages: history(0)})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.Message.Content != "looking" || ch.FinishReason != openai.FinishReasonToolCalls {
		t.Fatalf("content %q finish %q", ch.Message.Content, ch.FinishReason)
	}
	if len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v", ch.Message.ToolCalls)
	}
	c0, c1 := ch.Message.ToolCalls[0], ch.Message.ToolCalls[1]
	if c0.ID != "call_0_0" || c0.Function.Name != "read_file" || c0.Function.Arguments != `{"path":"README.md","offset":2}` {
		t.Errorf("call 0 = %+v", c0)
	}
	if c1.ID != "call_0_1" || !strings.Contains(c1.Function.Arguments, "héllo wörld") {
		t.Errorf("call 1 = %+v", c1)
	}
	if resp.Usage.PromptTokens <= 0 || resp.Usage.CompletionTokens <= 0 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	reqs := await(t, srv, 1)
	if len(reqs) != 1 || reqs[0].Turn != 0 || reqs[0].Status != 200 || reqs[0].Header.Get("Authorization") != "Bearer test-key" {
		t.Fatalf("recorded = %+v", reqs)
	}
}

func TestTurnFollowsHistory(t *testing.T) {
	_, client := start(t, twoCalls)
	for _, n := range []int{1, 1, 0} { // a repeated request gets the same answer
		resp, err := client.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "m1", Messages: history(n)})
		if err != nil {
			t.Fatal(err)
		}
		calls := resp.Choices[0].Message.ToolCalls
		want := map[int]string{0: "read_file", 1: "finish"}[n]
		if calls[0].Function.Name != want {
			t.Fatalf("history %d answered with %q, want %q", n, calls[0].Function.Name, want)
		}
		if n == 1 && calls[0].Function.Arguments != `{"summary":"all done"}` {
			t.Fatalf("finish arguments = %s", calls[0].Function.Arguments)
		}
	}
}

func TestStreamingAssemblesToTheSameReply(t *testing.T) {
	_, client := start(t, twoCalls)
	stream, err := client.CreateChatCompletionStream(t.Context(), openai.ChatCompletionRequest{
		Model: "m1", Messages: history(0), Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	var text strings.Builder
	calls := map[int]*openai.ToolCall{}
	var finish openai.FinishReason
	var usage *openai.Usage
	chunks := 0
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		if resp.Usage != nil {
			usage = resp.Usage
		}
		for _, ch := range resp.Choices {
			text.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
			for _, d := range ch.Delta.ToolCalls {
				c, ok := calls[*d.Index]
				if !ok {
					c = &openai.ToolCall{}
					calls[*d.Index] = c
				}
				if d.ID != "" {
					c.ID = d.ID
				}
				if d.Function.Name != "" {
					c.Function.Name = d.Function.Name
				}
				c.Function.Arguments += d.Function.Arguments
			}
		}
	}
	if text.String() != "looking" || finish != openai.FinishReasonToolCalls || len(calls) != 2 {
		t.Fatalf("text %q finish %q calls %d", text.String(), finish, len(calls))
	}
	if calls[1].ID != "call_0_1" || calls[1].Function.Arguments != `{"command":"echo héllo wörld — a long enough command to be fragmented"}` {
		t.Fatalf("assembled call 1 = %+v", calls[1])
	}
	if chunks < 6 {
		t.Errorf("only %d chunks: arguments were not fragmented", chunks)
	}
	if usage == nil || usage.PromptTokens == 0 {
		t.Errorf("no usage chunk")
	}
}

func TestScriptedErrorsThenSuccess(t *testing.T) {
	srv, client := start(t, Script{Turns: []Turn{{
		Text:   "ok",
		Errors: []HTTPError{{Status: 503}, {Status: 400, Body: `{"error":{"message":"context length exceeded"}}`}},
	}}})
	req := openai.ChatCompletionRequest{Model: DefaultModel, Messages: history(0)}
	_, err := client.CreateChatCompletion(t.Context(), req)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 503 {
		t.Fatalf("first attempt: %v", err)
	}
	_, err = client.CreateChatCompletion(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "context length exceeded") {
		t.Fatalf("second attempt: %v", err)
	}
	resp, err := client.CreateChatCompletion(t.Context(), req)
	if err != nil || resp.Choices[0].Message.Content != "ok" {
		t.Fatalf("third attempt: %v %+v", err, resp)
	}
	var statuses []int
	for _, r := range await(t, srv, 3) {
		statuses = append(statuses, r.Status)
	}
	if len(statuses) != 3 || statuses[0] != 503 || statuses[1] != 400 || statuses[2] != 200 {
		t.Fatalf("statuses = %v", statuses)
	}
}

// rawPost sends a chat request with plain net/http, for replies a client
// library would reject. It returns the answer's header and body.
func rawPost(t *testing.T, srv *Server, body string) (http.Header, []byte, error) {
	t.Helper()
	addr := srv.listener.Addr().String()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	return resp.Header, data, err
}

func TestRawBodyAndCutOff(t *testing.T) {
	srv, _ := start(t, Script{Turns: []Turn{
		{RawBody: `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":NaN}}`},
		{Text: strings.Repeat("long reply ", 50), CutAfterBytes: 40},
	}})
	_, data, err := rawPost(t, srv, `{"model":"scripted/model","messages":[]}`)
	if err != nil || !strings.Contains(string(data), "NaN") {
		t.Fatalf("raw body: %v %q", err, data)
	}
	_, data, err = rawPost(t, srv, `{"model":"scripted/model","messages":[{"role":"assistant","content":"a"}]}`)
	if err == nil {
		t.Fatalf("cut-off body read completely: %q", data)
	}
	if got := await(t, srv, 2); len(got) != 2 || got[1].Turn != 1 {
		t.Fatalf("cut-off request not recorded: %+v", got)
	}
}

func TestExhaustionAndUnknownModel(t *testing.T) {
	srv, client := start(t, Script{Turns: []Turn{{Text: "only"}}})
	_, err := client.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: DefaultModel, Messages: history(1)})
	if err == nil || !strings.Contains(err.Error(), "script exhausted") {
		t.Fatalf("past the end: %v", err)
	}
	_, err = client.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "other", Messages: history(0)})
	if err == nil || !strings.Contains(err.Error(), "model 'other' not found") {
		t.Fatalf("unknown model: %v", err)
	}
	if n := len(await(t, srv, 2)); n != 2 {
		t.Fatalf("%d requests recorded", n)
	}

	_, client = start(t, Script{OnExhausted: "finish"})
	resp, err := client.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: DefaultModel, Messages: history(0)})
	if err != nil || resp.Choices[0].Message.ToolCalls[0].Function.Name != "finish" {
		t.Fatalf("on_exhausted finish: %v", err)
	}
}

func TestQuirks(t *testing.T) {
	srv, _ := start(t, Script{Turns: []Turn{{
		ContentNull: true,
		ToolCalls: []ToolCall{
			{Name: "read_file", OmitID: true, Arguments: json.RawMessage(`{"path":"a"}`), ArgumentsAsObject: true},
			{Name: "grep", Arguments: json.RawMessage(`"{\"pattern\": unterminated"`)},
		},
	}}})
	_, data, err := rawPost(t, srv, `{"model":"scripted/model","messages":[]}`)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       *string `json:"id"`
					Function struct {
						Arguments json.RawMessage `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatal(err)
	}
	m := body.Choices[0].Message
	if m.Content != nil {
		t.Errorf("content = %q, want null", *m.Content)
	}
	if m.ToolCalls[0].ID != nil || string(m.ToolCalls[0].Function.Arguments) != `{"path":"a"}` {
		t.Errorf("quirky call 0 = id %v args %s", m.ToolCalls[0].ID, m.ToolCalls[0].Function.Arguments)
	}
	if string(m.ToolCalls[1].Function.Arguments) != `"{\"pattern\": unterminated"` {
		t.Errorf("raw invalid arguments = %s", m.ToolCalls[1].Function.Arguments)
	}
}

func TestLMStudioEndpoint(t *testing.T) {
	srv, _ := start(t, Script{Model: "q", ContextLength: 8192})
	addr := srv.listener.Addr().String()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/api/v0/models", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Data []struct {
			ID    string `json:"id"`
			State string `json:"state"`
			CL    int    `json:"loaded_context_length"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Data) != 1 || body.Data[0].ID != "q" || body.Data[0].State != "loaded" || body.Data[0].CL != 8192 {
		t.Fatalf("lm studio models = %+v", body.Data)
	}
}

func TestParseScript(t *testing.T) {
	s, err := LoadScript("testdata/std20.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Turns) != 20 || s.Model != "fake/perf-model" || s.Turns[19].Finish == nil {
		t.Fatalf("std20 parsed as %d turns, model %q", len(s.Turns), s.Model)
	}
	for name, bad := range map[string]string{
		"not json":         `{`,
		"bad on_exhausted": `{"turns":[],"on_exhausted":"loop"}`,
		"finish and calls": `{"turns":[{"finish":"x","tool_calls":[{"name":"a"}]}]}`,
		"nameless call":    `{"turns":[{"tool_calls":[{"arguments":{}}]}]}`,
		"bad status":       `{"turns":[{"errors":[{"status":200}]}]}`,
	} {
		if _, err := ParseScript([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRetryAfterRawStreamPadAndDrip(t *testing.T) {
	stream := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	srv, _ := start(t, Script{Turns: []Turn{
		{Text: "after", Errors: []HTTPError{{Status: 429, RetryAfter: "3"}}},
		{RawStream: stream},
		{RawBody: `{"a":1}`, PadBytes: 5},
		{RawBody: `{"dripped":true}`, DripMS: 20},
	}})
	history := func(n int) string {
		return `{"model":"scripted/model","messages":[` + strings.TrimSuffix(strings.Repeat(`{"role":"assistant","content":"a"},`, n), ",") + `]}`
	}
	header, _, err := rawPost(t, srv, history(0))
	if err != nil || header.Get("Retry-After") != "3" || await(t, srv, 1)[0].Status != 429 {
		t.Fatalf("429: %v %+v", err, header)
	}
	header, data, err := rawPost(t, srv, history(1))
	if err != nil || header.Get("Content-Type") != "text/event-stream" || string(data) != stream {
		t.Fatalf("raw stream: %v %q", err, data)
	}
	_, data, err = rawPost(t, srv, history(2))
	if err != nil || string(data) != `     {"a":1}` {
		t.Fatalf("padded body: %v %q", err, data)
	}
	begin := time.Now()
	_, data, err = rawPost(t, srv, history(3))
	// Sixteen bytes with a 20 ms pause between each: at least 300 ms.
	if err != nil || string(data) != `{"dripped":true}` || time.Since(begin) < 300*time.Millisecond {
		t.Fatalf("dripped body: %v %q after %v", err, data, time.Since(begin))
	}
	if _, err := ParseScript([]byte(`{"turns":[{"drip_ms":-1}]}`)); err == nil {
		t.Fatal("negative drip accepted")
	}
}

func TestAwaitRequestsGivesUpWithItsContext(t *testing.T) {
	srv, _ := start(t, Script{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if reqs, err := srv.AwaitRequests(ctx, 1); !errors.Is(err, context.DeadlineExceeded) || len(reqs) != 0 {
		t.Fatalf("await on an idle server: %v %v", reqs, err)
	}
}

// One server plays several models, each with a script per task, and
// counts the requests it answers at once; held turns answer only after
// Release.
func TestMultiScriptServer(t *testing.T) {
	t.Parallel()
	srv := NewMulti(
		Script{Model: "solver", Task: "fix bug 1", Turns: []Turn{{Text: "solver on bug 1", Hold: true}}},
		Script{Model: "solver", Task: "fix bug 2", Turns: []Turn{{Text: "solver on bug 2", Hold: true}}},
		Script{Model: "failer", Turns: []Turn{{Text: "failer, any task", Hold: true}}},
	)
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = base
	cl := openai.NewClientWithConfig(cfg)

	models, err := cl.ListModels(t.Context())
	if err != nil || len(models.Models) != 2 || models.Models[0].ID != "solver" || models.Models[1].ID != "failer" {
		t.Fatalf("models %+v %v", models, err)
	}
	ask := func(model, task string) (string, error) {
		resp, err := cl.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{
			Model: model, Messages: []openai.ChatCompletionMessage{{Role: "system", Content: "s"}, {Role: "user", Content: "Please " + task + " now."}},
		})
		if err != nil {
			return "", err
		}
		return resp.Choices[0].Message.Content, nil
	}
	type answer struct {
		got, want string
		err       error
	}
	answers := make(chan answer, 3)
	for _, c := range [][3]string{{"solver", "fix bug 2", "solver on bug 2"}, {"solver", "fix bug 1", "solver on bug 1"}, {"failer", "fix bug 2", "failer, any task"}} {
		go func() {
			got, err := ask(c[0], c[1])
			answers <- answer{got, c[2], err}
		}()
	}
	// All three are in flight, and held, before any reply is given.
	if err := srv.AwaitArrivals(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		t.Fatalf("a held turn answered before Release: %+v", a)
	default:
	}
	if n := srv.MaxInFlight(); n != 3 {
		t.Errorf("max in flight %d while held", n)
	}
	srv.Release()
	srv.Release() // a second call does nothing
	for range 3 {
		a := <-answers
		if a.err != nil || a.got != a.want {
			t.Errorf("got %q (%v), want %q", a.got, a.err, a.want)
		}
	}
	if n := srv.MaxInFlight(); n != 3 {
		t.Errorf("max in flight %d", n)
	}
	if _, err := ask("solver", "fix bug 3"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a task no script of the model covers: %v", err)
	}
}
