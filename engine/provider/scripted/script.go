// Package scripted is an OpenAI-compatible chat-completions server (and an
// Anthropic Messages API, see anthropic.go) that replays a script of
// assistant turns. It speaks real HTTP and real
// tool-call JSON (non-streaming and server-sent-event streaming), records
// every request for assertions, and can misbehave on cue: malformed bodies,
// truncated replies, delays and HTTP errors. Tests, the demo and anyone
// testing an orchestration use it in place of a model.
package scripted

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Script is a scripted conversation. Turn k answers a request whose history
// holds k assistant messages, so a retried request gets the same answer and
// the server needs no memory of earlier requests to stay in step.
type Script struct {
	// Name and Description are for people.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Model is the id /v1/models lists (default DefaultModel).
	Model string `json:"model,omitempty"`
	// Task is the task text the script was written for (informational).
	Task string `json:"task,omitempty"`
	// ContextLength is what the LM Studio endpoint reports as the loaded
	// context length (0 = field absent).
	ContextLength int `json:"context_length,omitempty"`
	// Turns are the replies, in order.
	Turns []Turn `json:"turns"`
	// OnExhausted says what to answer past the last turn: "finish" (a
	// finish call), "answer" (a plain text reply) or "error" (HTTP 500,
	// the default).
	OnExhausted string `json:"on_exhausted,omitempty"`
}

// DefaultModel is the model id served when a script names none.
const DefaultModel = "scripted/model"

// Turn is one assistant reply, or one way of failing to give it.
type Turn struct {
	// Text is the assistant's message content.
	Text string `json:"text,omitempty"`
	// ContentNull sends "content": null (as some servers do with tool calls).
	ContentNull bool `json:"content_null,omitempty"`
	// ToolCalls are the calls the reply makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Finish, when set, makes the reply a single finish(summary=Finish) call.
	Finish *string `json:"finish,omitempty"`
	// FinishReason overrides the computed one ("tool_calls" or "stop");
	// "length" simulates a reply cut off at the token limit.
	FinishReason string `json:"finish_reason,omitempty"`
	// Usage overrides the token counts reported for the reply.
	Usage *Usage `json:"usage,omitempty"`
	// DelayMS delays the reply (before the first byte).
	DelayMS int `json:"delay_ms,omitempty"`
	// Hold makes the reply wait (before the first byte, after any delay)
	// until the server's Release is called, so a test can act while a
	// request is surely in flight instead of guessing with a delay.
	Hold bool `json:"hold,omitempty"`
	// ChunkDelayMS paces streamed chunks.
	ChunkDelayMS int `json:"chunk_delay_ms,omitempty"`
	// Errors are answered, one per attempt, before the reply itself: a
	// turn with two 503s succeeds on the third request for it.
	Errors []HTTPError `json:"errors,omitempty"`
	// RawBody, when set, is sent verbatim as a 200 application/json body
	// instead of a well-formed completion (malformed replies, NaN literals).
	RawBody string `json:"raw_body,omitempty"`
	// CutAfterBytes closes the connection after that many body bytes.
	CutAfterBytes int `json:"cut_after_bytes,omitempty"`
	// RawStream, when set, is sent verbatim as a 200 text/event-stream
	// body, whether or not the request asked to stream (recorded
	// server-sent-event transcripts of real servers).
	RawStream string `json:"raw_stream,omitempty"`
	// DripMS sends a non-streamed body one byte every DripMS milliseconds,
	// like a server that keeps a connection alive without ever finishing.
	DripMS int `json:"drip_ms,omitempty"`
	// PadBytes puts that many spaces before a non-streamed JSON body (still
	// valid JSON), for oversized replies.
	PadBytes int `json:"pad_bytes,omitempty"`
}

// ToolCall is one scripted call.
type ToolCall struct {
	// ID is the call id; empty means "call_<turn>_<index>". OmitID sends
	// no id at all (as some servers do).
	ID     string `json:"id,omitempty"`
	OmitID bool   `json:"omit_id,omitempty"`
	Name   string `json:"name"`
	// Arguments is a JSON object (encoded to a string on the wire, as the
	// protocol says) or a JSON string sent as the raw arguments text,
	// which may be invalid JSON on purpose.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ArgumentsAsObject sends the arguments as a JSON object instead of a
	// string (a known server quirk).
	ArgumentsAsObject bool `json:"arguments_as_object,omitempty"`
}

// Usage is a reply's token accounting.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// HTTPError is a scripted failed attempt.
type HTTPError struct {
	Status int    `json:"status"`
	Body   string `json:"body,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string `json:"retry_after,omitempty"`
}

// LoadScript reads a script from a JSON file.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("read script: %w", err)
	}
	return ParseScript(data)
}

// ParseScript decodes and checks a script.
func ParseScript(data []byte) (Script, error) {
	var s Script
	if err := json.Unmarshal(data, &s); err != nil {
		return Script{}, fmt.Errorf("parse script: %w", err)
	}
	if err := s.Validate(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// Validate reports the first problem that would make the script unplayable.
func (s Script) Validate() error {
	switch s.OnExhausted {
	case "", "finish", "answer", "error":
	default:
		return fmt.Errorf("script: on_exhausted must be finish, answer or error, got %q", s.OnExhausted)
	}
	for i, t := range s.Turns {
		if t.Finish != nil && len(t.ToolCalls) > 0 {
			return fmt.Errorf("script: turn %d has both finish and tool_calls", i)
		}
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return fmt.Errorf("script: turn %d call %d has no name", i, j)
			}
			if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
				return fmt.Errorf("script: turn %d call %d: arguments are not JSON", i, j)
			}
		}
		if t.DripMS < 0 || t.PadBytes < 0 {
			return fmt.Errorf("script: turn %d: drip_ms and pad_bytes must not be negative", i)
		}
		for j, e := range t.Errors {
			if e.Status < 400 || e.Status > 599 {
				return fmt.Errorf("script: turn %d error %d: status %d is not an HTTP error", i, j, e.Status)
			}
		}
	}
	return nil
}

// ModelID returns the served model id (DefaultModel when the script names none).
func (s Script) ModelID() string {
	if s.Model == "" {
		return DefaultModel
	}
	return s.Model
}

// rawArguments renders a call's arguments as the protocol's string form:
// a JSON string in the script is the raw text itself (which may be invalid
// JSON on purpose); anything else is sent as its JSON text.
func (c ToolCall) rawArguments() string {
	if len(c.Arguments) == 0 {
		return "{}"
	}
	var str string
	if err := json.Unmarshal(c.Arguments, &str); err == nil {
		return str
	}
	return string(c.Arguments)
}

// errExhausted is what a request past the last turn gets by default.
var errExhausted = errors.New("script exhausted")
