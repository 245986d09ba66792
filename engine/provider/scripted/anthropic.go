package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// The server also speaks Anthropic's Messages API (POST /v1/messages, the
// model list at GET /v1/models), so a run or a sweep with
// --provider anthropic can be scripted like an OpenAI one: point its base
// URL at the server's root, without the /v1 Start returns. A turn renders
// as content blocks (text, then one tool_use per call), its finish reason
// as a stop_reason (tool_calls → tool_use, stop → end_turn, length →
// max_tokens), its usage as input_tokens and output_tokens. A streamed
// reply sends the documented events with text and tool input in small
// pieces; raw_body and raw_stream are sent verbatim as for the OpenAI
// endpoint, and scripted errors likewise.

// MessagesRequest is the part of a Messages API request the server reads.
type MessagesRequest struct {
	Model       string          `json:"model"`
	Messages    []AnthropicMsg  `json:"messages"`
	System      json.RawMessage `json:"system,omitempty"`
	Tools       json.RawMessage `json:"tools,omitempty"`
	Stream      bool            `json:"stream,omitempty"`
	MaxTokens   *int            `json:"max_tokens,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
}

// AnthropicMsg is one message of a Messages API request; Content is a
// string or a list of blocks.
type AnthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// firstUserText is the text of the first user message: its string
// content, or its text blocks joined.
func (m *MessagesRequest) firstUserText() string {
	for _, msg := range m.Messages {
		if msg.Role != "user" {
			continue
		}
		var text string
		if json.Unmarshal(msg.Content, &text) == nil {
			return text
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(msg.Content, &blocks)
		var b strings.Builder
		for _, bl := range blocks {
			if bl.Type == "text" {
				b.WriteString(bl.Text)
			}
		}
		return b.String()
	}
	return ""
}

// AssistantTurns counts the assistant messages in the history: the index
// of the script turn that answers this request.
func (m *MessagesRequest) AssistantTurns() int {
	n := 0
	for _, msg := range m.Messages {
		if msg.Role == "assistant" {
			n++
		}
	}
	return n
}

// MessagesRequests returns the decoded Messages API requests, in order.
func (s *Server) MessagesRequests() []*MessagesRequest {
	var out []*MessagesRequest
	for _, r := range s.Requests() {
		if r.Messages != nil {
			out = append(out, r.Messages)
		}
	}
	return out
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	var req MessagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
	}
	rec.Messages = &req
	defer s.enter()() // in flight before it counts as arrived
	s.arrive()
	si := s.pickFor(req.Model, req.firstUserText())
	if si < 0 {
		return writeAnthropicError(w, http.StatusNotFound, "not_found_error", "model: "+req.Model)
	}
	script := s.scripts[si]
	k := req.AssistantTurns()
	rec.Turn = k
	turn, err := turnOf(script, k)
	if err != nil {
		return writeAnthropicError(w, http.StatusInternalServerError, "api_error", fmt.Sprintf("scripted model: %v at turn %d", err, k))
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
	rp := buildReply(k, turn, estimateTokens(body))
	rp.id = fmt.Sprintf("msg_scripted_%d", k)
	for i := range rp.calls {
		if rp.calls[i].ID != "" {
			rp.calls[i].ID = strings.Replace(rp.calls[i].ID, "call_", "toolu_", 1)
		}
	}
	if req.Stream {
		return streamMessage(r.Context(), w, script.ModelID(), rp, turn)
	}
	data, _ := json.Marshal(anthropicMessage(script.ModelID(), rp))
	return writeBody(r.Context(), w, data, turn)
}

// stopReason is a finish reason in the Messages API's words.
func stopReason(finish string) string {
	switch finish {
	case "stop":
		return "end_turn"
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	}
	return finish
}

// toolInput is a call's input as a JSON value: the object its arguments
// name, or, for arguments scripted as invalid JSON, that text as a string
// (a non-streamed reply cannot carry broken JSON otherwise).
func toolInput(c wireCall) json.RawMessage {
	if json.Valid([]byte(c.raw)) {
		return json.RawMessage(c.raw)
	}
	data, _ := json.Marshal(c.raw)
	return data
}

func anthropicMessage(model string, rp reply) map[string]any {
	content := []any{}
	if rp.content != nil && *rp.content != "" {
		content = append(content, map[string]any{"type": "text", "text": *rp.content})
	}
	for _, c := range rp.calls {
		block := map[string]any{"type": "tool_use", "name": c.Function.Name, "input": toolInput(c)}
		if c.ID != "" {
			block["id"] = c.ID
		}
		content = append(content, block)
	}
	return map[string]any{
		"id": rp.id, "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stopReason(rp.finishReason), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": rp.usage.PromptTokens, "output_tokens": rp.usage.CompletionTokens},
	}
}

// streamMessage sends a reply as Messages API events: message_start, each
// block's start, deltas and stop, message_delta with the stop reason and
// the output count, message_stop.
func streamMessage(ctx context.Context, w http.ResponseWriter, model string, rp reply, t Turn) int {
	flusher, ok := w.(http.Flusher)
	if !ok {
		return writeAnthropicError(w, http.StatusInternalServerError, "api_error", "streaming unsupported")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	pause := time.Duration(t.ChunkDelayMS) * time.Millisecond
	sent := 0
	send := func(v map[string]any) bool {
		data, _ := json.Marshal(v)
		frame := fmt.Sprintf("event: %s\ndata: %s\n\n", v["type"], data)
		if t.CutAfterBytes > 0 && sent+len(frame) > t.CutAfterBytes {
			_, _ = w.Write([]byte(frame[:t.CutAfterBytes-sent]))
			flusher.Flush()
			panic(http.ErrAbortHandler)
		}
		sent += len(frame)
		_, _ = w.Write([]byte(frame))
		flusher.Flush()
		if pause > 0 {
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return false
			}
		}
		return ctx.Err() == nil
	}
	start := anthropicMessage(model, rp)
	start["content"], start["stop_reason"] = []any{}, nil
	start["usage"] = map[string]any{"input_tokens": rp.usage.PromptTokens, "output_tokens": 1}
	if !send(map[string]any{"type": "message_start", "message": start}) {
		return 499
	}
	index := 0
	block := func(head map[string]any, deltaType, field, value string, piece int) bool {
		if !send(map[string]any{"type": "content_block_start", "index": index, "content_block": head}) {
			return false
		}
		for i := 0; i < len(value); {
			end := min(i+piece, len(value))
			for end < len(value) && !utf8.RuneStart(value[end]) {
				end++ // each piece is valid UTF-8
			}
			delta := map[string]any{"type": deltaType, field: value[i:end]}
			if !send(map[string]any{"type": "content_block_delta", "index": index, "delta": delta}) {
				return false
			}
			i = end
		}
		ok := send(map[string]any{"type": "content_block_stop", "index": index})
		index++
		return ok
	}
	if rp.content != nil && *rp.content != "" {
		if !block(map[string]any{"type": "text", "text": ""}, "text_delta", "text", *rp.content, contentPiece) {
			return 499
		}
	}
	for _, c := range rp.calls {
		head := map[string]any{"type": "tool_use", "name": c.Function.Name, "input": map[string]any{}}
		if c.ID != "" {
			head["id"] = c.ID
		}
		if !block(head, "input_json_delta", "partial_json", c.raw, argumentsPiece) {
			return 499
		}
	}
	if !send(map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(rp.finishReason), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rp.usage.CompletionTokens},
	}) {
		return 499
	}
	send(map[string]any{"type": "message_stop"})
	return http.StatusOK
}

func writeAnthropicError(w http.ResponseWriter, status int, kind, msg string) int {
	return writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}
