// Package provider talks to the model servers a run uses. Each provider
// turns the engine's history into its wire format and a reply back into a
// Response; the engine never sees HTTP.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Provider is a model server protocol.
type Provider interface {
	// Name is the provider's name in the contract ("openai", "anthropic").
	Name() string
	// BaseURL is the resolved base URL the provider talks to.
	BaseURL() string
	// ListModels returns the ids of the models the server offers.
	ListModels(ctx context.Context) ([]string, error)
	// ProbeContextWindow asks the server for the context window the model
	// is loaded with. ok is false when the server does not say.
	ProbeContextWindow(ctx context.Context, model string) (tokens int, ok bool)
	// Chat sends one request and returns the parsed reply.
	Chat(ctx context.Context, req Request) (Response, error)
}

// Request is one chat request.
type Request struct {
	Model       string
	Messages    []Message
	Tools       []Tool
	Temperature *float64
	MaxTokens   int
	// Stream asks for a streamed reply where the server supports it.
	Stream bool
	// OnProgress, when set, is called while a streamed reply arrives with
	// how far it has come. Calls come from the goroutine running Chat.
	OnProgress func(Progress)
}

// Role of a message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of the history.
type Message struct {
	Role    string
	Content string
	// ToolCalls are the addressable calls of an assistant message.
	ToolCalls []ToolCall
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object.
	Parameters json.RawMessage
}

// ToolCall is one call the model made. A call without an ID is
// unaddressable: no tool message can answer it.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the decoded arguments object; nil when they did not
	// decode (Error says why).
	Arguments map[string]any
	// RawArguments is the arguments text as the server sent it.
	RawArguments string
	// Error is the adapter's complaint about a malformed call.
	Error string
}

// Response is a parsed reply.
type Response struct {
	Text         string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
}

// Usage is the token accounting of one reply.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Error is a failure to get a reply (the original's LLMError).
type Error struct {
	// Msg is the user-facing text, e.g. "HTTP 500 on <url>: <body>".
	Msg string
	// Timeout marks a request that ran out of time.
	Timeout bool
	// Transient marks failures worth retrying: connection refused or
	// reset, HTTP 429 and 5xx.
	Transient bool
	// ContextOverflow marks a server refusing the prompt as too long for
	// its context window.
	ContextOverflow bool
	// Malformed marks valid JSON of the wrong shape.
	Malformed bool
	// StatusCode is the HTTP status, 0 when there was none.
	StatusCode int
	Err        error
}

func (e *Error) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return "model request failed"
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message.
func Errorf(format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Msg: err.Error(), Err: errors.Unwrap(err)}
}

// AsError returns err as an *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var pe *Error
	ok := errors.As(err, &pe)
	return pe, ok
}
