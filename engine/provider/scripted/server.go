package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Request is one request the server received, kept for assertions.
type Request struct {
	Time time.Time `json:"time"`
	// Done is when the server finished answering.
	Done   time.Time `json:"done"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// Header holds the request headers (for checking what a client sends,
	// such as Authorization).
	Header http.Header `json:"header,omitempty"`
	// Body is the raw request body.
	Body json.RawMessage `json:"body,omitempty"`
	// Chat is the decoded body of a chat-completions request.
	Chat *ChatRequest `json:"-"`
	// Messages is the decoded body of a Messages API request.
	Messages *MessagesRequest `json:"-"`
	// Turn is the script turn the request was answered with (-1 when not a
	// chat request or undecodable).
	Turn int `json:"turn"`
	// Status is the HTTP status the server answered with.
	Status int `json:"status"`
}

// ChatRequest is the part of a chat-completions request the server reads.
type ChatRequest struct {
	Model         string          `json:"model"`
	Messages      []Message       `json:"messages"`
	Tools         json.RawMessage `json:"tools,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	MaxTokens     *int            `json:"max_tokens,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
}

// Message is one chat message as a client sent it.
type Message struct {
	Role       string          `json:"role"`
	Content    *string         `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// AssistantTurns counts the assistant messages in the history: the index of
// the script turn that answers this request.
func (c *ChatRequest) AssistantTurns() int {
	n := 0
	for _, m := range c.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// Server replays a Script over HTTP — or several, one per model and
// task (NewMulti), as a server hosting several models does. Its zero value
// is not usable; call New or NewMulti.
type Server struct {
	scripts []Script
	// LogTo, when set before Start, receives every request as a JSON line.
	LogTo io.Writer

	mu       sync.Mutex
	attempts map[attemptKey]int
	// inFlight counts chat requests being answered; maxInFlight is the
	// most there ever were at once.
	inFlight, maxInFlight int
	requests              []Request
	// recorded is closed and replaced whenever a request is recorded.
	recorded chan struct{}
	// arrived counts the chat requests that arrived (decoded, before any
	// scripted delay); arrival is closed and replaced at each.
	arrived int
	arrival chan struct{}
	// released is closed by Release; held turns wait for it.
	released chan struct{}

	httpSrv  *http.Server
	listener net.Listener
}

// attemptKey counts the attempts at one turn of one script.
type attemptKey struct{ script, turn int }

// New returns a server for script.
func New(script Script) *Server { return NewMulti(script) }

// NewMulti returns a server for several scripts. A chat request is
// answered by the first script whose model is the request's and whose
// Task (when set) appears in the request's first user message, so one
// server can play several models, each with a script per task. /v1/models
// lists every script's model once.
func NewMulti(scripts ...Script) *Server {
	return &Server{
		scripts: scripts, attempts: map[attemptKey]int{},
		recorded: make(chan struct{}), arrival: make(chan struct{}),
		released: make(chan struct{}),
	}
}

// Release lets every held turn (Turn.Hold) answer, now and from then on.
// Calling it again does nothing.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.released:
	default:
		close(s.released)
	}
}

// wait holds a reply for the turn's delay and, for a held turn, until
// Release. It reports false when the client gave up first.
func (s *Server) wait(r *http.Request, turn Turn) bool {
	if turn.DelayMS > 0 {
		select {
		case <-time.After(time.Duration(turn.DelayMS) * time.Millisecond):
		case <-r.Context().Done():
			return false
		}
	}
	if turn.Hold {
		select {
		case <-s.released:
		case <-r.Context().Done():
			return false
		}
	}
	return true
}

// MaxInFlight is the most chat requests the server was answering at once.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// pick is the index of the script that answers req, -1 when none does.
func (s *Server) pick(req *ChatRequest) int {
	firstUser := ""
	for _, m := range req.Messages {
		if m.Role == "user" && m.Content != nil {
			firstUser = *m.Content
			break
		}
	}
	return s.pickFor(req.Model, firstUser)
}

// pickFor is the index of the script for model whose task is in
// firstUser (the conversation's first user message), -1 when none is.
func (s *Server) pickFor(model, firstUser string) int {
	for i, sc := range s.scripts {
		if sc.ModelID() == model && (sc.Task == "" || len(s.scripts) == 1 || strings.Contains(firstUser, sc.Task)) {
			return i
		}
	}
	return -1
}

// models lists every script's model id once, in script order.
func (s *Server) models() []string {
	var ids []string
	for _, sc := range s.scripts {
		if !slices.Contains(ids, sc.ModelID()) {
			ids = append(ids, sc.ModelID())
		}
	}
	return ids
}

// Start listens on addr (for example "127.0.0.1:0") and serves in the
// background. It returns the OpenAI base URL, ending in /v1.
func (s *Server) Start(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("scripted model server: listen on %s: %w", addr, err)
	}
	s.listener = ln
	s.httpSrv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.httpSrv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/v1", nil
}

// Close stops the server and closes every open connection.
func (s *Server) Close() error {
	if s.httpSrv == nil {
		return nil
	}
	return s.httpSrv.Close()
}

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// AwaitRequests waits until at least n requests are recorded and returns
// them all. A request is recorded when its handler returns, which can be a
// moment after the client has read the whole answer, so a test that has
// just got its reply waits here rather than reading Requests at once.
func (s *Server) AwaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			out := append([]Request(nil), s.requests...)
			s.mu.Unlock()
			return out, nil
		}
		next := s.recorded
		s.mu.Unlock()
		select {
		case <-next:
		case <-ctx.Done():
			return s.Requests(), fmt.Errorf("scripted model server: waiting for %d requests: %w", n, ctx.Err())
		}
	}
}

// AwaitArrivals waits until at least n chat requests have arrived: read
// and decoded, while their replies may still be scripted to come late. A
// test that must act while the run waits on a reply waits here, on the
// event, not on a clock.
func (s *Server) AwaitArrivals(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		if s.arrived >= n {
			s.mu.Unlock()
			return nil
		}
		next := s.arrival
		s.mu.Unlock()
		select {
		case <-next:
		case <-ctx.Done():
			return fmt.Errorf("scripted model server: waiting for %d chat requests to arrive: %w", n, ctx.Err())
		}
	}
}

// arrive counts a chat request that arrived.
func (s *Server) arrive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.arrived++
	close(s.arrival)
	s.arrival = make(chan struct{})
}

// ChatRequests returns the decoded chat-completions requests, in order.
func (s *Server) ChatRequests() []*ChatRequest {
	var out []*ChatRequest
	for _, r := range s.Requests() {
		if r.Chat != nil {
			out = append(out, r.Chat)
		}
	}
	return out
}

// ServeHTTP answers the OpenAI, LM Studio and Anthropic endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Turn: -1}
	if json.Valid(body) {
		rec.Body = body
	}
	// Recorded in a defer: a scripted cut-off aborts the handler by panicking.
	defer s.record(&rec)
	rec.Status = http.StatusOK // what a cut-off reply had sent
	rec.Status = s.route(w, r, body, &rec)
}

func (s *Server) record(rec *Request) {
	rec.Done = time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, *rec)
	close(s.recorded)
	s.recorded = make(chan struct{})
	if s.LogTo != nil {
		line, _ := json.Marshal(rec)
		_, _ = s.LogTo.Write(append(line, '\n'))
	}
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && (path == "/v1/models" || path == "/models"):
		data := []any{}
		for _, id := range s.models() {
			data = append(data, map[string]any{"id": id, "object": "model", "type": "model", "owned_by": "scripted"})
		}
		// One list for both APIs: Anthropic's pager reads has_more.
		return writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": false})
	case r.Method == http.MethodGet && path == "/api/v0/models":
		data := []any{}
		for _, id := range s.models() {
			entry := map[string]any{"id": id, "object": "model", "type": "llm", "state": "loaded"}
			for _, sc := range s.scripts {
				if sc.ModelID() == id && sc.ContextLength > 0 {
					entry["loaded_context_length"] = sc.ContextLength
					entry["max_context_length"] = sc.ContextLength
					break
				}
			}
			data = append(data, entry)
		}
		return writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	case r.Method == http.MethodPost && (path == "/v1/chat/completions" || path == "/chat/completions"):
		return s.chat(w, r, body, rec)
	case r.Method == http.MethodPost && path == "/v1/messages":
		return s.messages(w, r, body, rec)
	default:
		return writeError(w, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	var req ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
	}
	rec.Chat = &req
	defer s.enter()() // in flight before it counts as arrived
	s.arrive()
	si := s.pick(&req)
	if si < 0 {
		return writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", req.Model))
	}
	script := s.scripts[si]
	k := req.AssistantTurns()
	rec.Turn = k

	turn, err := turnOf(script, k)
	if err != nil {
		return writeError(w, http.StatusInternalServerError, fmt.Sprintf("scripted model: %v at turn %d", err, k))
	}
	if failure, ok := s.nextFailure(attemptKey{si, k}, turn); ok {
		if failure.RetryAfter != "" {
			w.Header().Set("Retry-After", failure.RetryAfter)
		}
		return writeRaw(w, failure.Status, failureBody(failure))
	}
	if !s.wait(r, turn) {
		return 499 // client gave up
	}
	if turn.RawStream != "" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, turn.RawStream)
		return http.StatusOK
	}
	if turn.RawBody != "" {
		return writeBody(r.Context(), w, []byte(turn.RawBody), turn)
	}
	reply := buildReply(k, turn, estimateTokens(body))
	if req.Stream {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		return streamReply(r.Context(), w, script.ModelID(), reply, turn, includeUsage)
	}
	data, _ := json.Marshal(completion(script.ModelID(), reply))
	return writeBody(r.Context(), w, data, turn)
}

// writeBody sends a 200 JSON body the way the turn says: padded, dripped
// or cut off.
func writeBody(ctx context.Context, w http.ResponseWriter, data []byte, t Turn) int {
	if t.PadBytes > 0 {
		data = append(bytes.Repeat([]byte(" "), t.PadBytes), data...)
	}
	if t.DripMS > 0 {
		return writeDrip(ctx, w, data, time.Duration(t.DripMS)*time.Millisecond)
	}
	return writeCut(w, http.StatusOK, data, t.CutAfterBytes)
}

// writeDrip sends data one byte per interval until it is all sent or the
// client goes away.
func writeDrip(ctx context.Context, w http.ResponseWriter, data []byte, interval time.Duration) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := range data {
		if _, err := w.Write(data[i : i+1]); err != nil {
			return 499
		}
		if flusher != nil {
			flusher.Flush()
		}
		if i == len(data)-1 {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return 499 // client gave up
		}
	}
	return http.StatusOK
}

// enter counts a chat request in flight until the returned func is called.
func (s *Server) enter() func() {
	s.mu.Lock()
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}
}

// turnOf returns script's turn for index k, or what to do past the end.
func turnOf(script Script, k int) (Turn, error) {
	if k < len(script.Turns) {
		return script.Turns[k], nil
	}
	switch script.OnExhausted {
	case "finish":
		summary := "script exhausted"
		return Turn{Finish: &summary}, nil
	case "answer":
		return Turn{Text: "script exhausted"}, nil
	default:
		return Turn{}, errExhausted
	}
}

// nextFailure returns the scripted error for this attempt at turn k, if
// any remain.
func (s *Server) nextFailure(k attemptKey, t Turn) (HTTPError, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.attempts[k]
	s.attempts[k] = n + 1
	if n < len(t.Errors) {
		return t.Errors[n], true
	}
	return HTTPError{}, false
}

func failureBody(e HTTPError) []byte {
	if e.Body != "" {
		return []byte(e.Body)
	}
	data, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": http.StatusText(e.Status), "type": "scripted_error", "code": e.Status,
	}})
	return data
}

// reply is a turn rendered into protocol values.
type reply struct {
	id           string
	content      *string
	calls        []wireCall
	finishReason string
	usage        Usage
}

type wireCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	} `json:"function"`
	raw string // the arguments text, for streaming
}

func buildReply(k int, t Turn, promptTokens int) reply {
	rp := reply{id: fmt.Sprintf("chatcmpl-scripted-%d", k)}
	calls := t.ToolCalls
	if t.Finish != nil {
		args, _ := json.Marshal(map[string]string{"summary": *t.Finish})
		calls = []ToolCall{{Name: "finish", Arguments: args}}
	}
	for i, c := range calls {
		var wc wireCall
		wc.Type = "function"
		wc.Function.Name = c.Name
		switch {
		case c.OmitID:
		case c.ID != "":
			wc.ID = c.ID
		default:
			wc.ID = fmt.Sprintf("call_%d_%d", k, i)
		}
		wc.raw = c.rawArguments()
		wc.Function.Arguments = wc.raw
		if c.ArgumentsAsObject && len(c.Arguments) > 0 {
			wc.Function.Arguments = c.Arguments
		}
		rp.calls = append(rp.calls, wc)
	}
	if !t.ContentNull {
		text := t.Text
		rp.content = &text
	}
	rp.finishReason = t.FinishReason
	if rp.finishReason == "" {
		rp.finishReason = "stop"
		if len(rp.calls) > 0 {
			rp.finishReason = "tool_calls"
		}
	}
	if t.Usage != nil {
		rp.usage = *t.Usage
	} else {
		out := utf8.RuneCountInString(t.Text)
		for _, c := range rp.calls {
			out += utf8.RuneCountInString(c.raw) + len(c.Function.Name)
		}
		rp.usage = Usage{PromptTokens: promptTokens, CompletionTokens: out/4 + 1}
	}
	return rp
}

// estimateTokens is the prompt size the server reports: a deterministic
// four-characters-per-token estimate of the request body.
func estimateTokens(body []byte) int {
	return utf8.RuneCount(body)/4 + 1
}

func completion(model string, rp reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": rp.content}
	if len(rp.calls) > 0 {
		msg["tool_calls"] = rp.calls
	}
	return map[string]any{
		"id":      rp.id,
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rp.finishReason}},
		"usage": map[string]any{
			"prompt_tokens":     rp.usage.PromptTokens,
			"completion_tokens": rp.usage.CompletionTokens,
			"total_tokens":      rp.usage.PromptTokens + rp.usage.CompletionTokens,
		},
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	data, _ := json.Marshal(v)
	return writeRaw(w, status, data)
}

func writeError(w http.ResponseWriter, status int, msg string) int {
	return writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "scripted_error"}})
}

func writeRaw(w http.ResponseWriter, status int, data []byte) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
	return status
}

// writeCut writes data, or only its first cut bytes and then drops the
// connection, so the client sees a truncated body.
func writeCut(w http.ResponseWriter, status int, data []byte, cut int) int {
	if cut <= 0 || cut >= len(data) {
		return writeRaw(w, status, data)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.WriteHeader(status)
	_, _ = io.Copy(w, bytes.NewReader(data[:cut]))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	// The documented way to abort a response mid-body: the server closes
	// the connection without logging.
	panic(http.ErrAbortHandler)
}
