package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// chatRequest is the chat-completions request body (E-58): model,
// messages, max_tokens, tools when there are any, temperature when set
// (0 included), and the streaming fields when streaming.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []wireMessage  `json:"messages"`
	MaxTokens     int            `json:"max_tokens"`
	Tools         []wireTool     `json:"tools,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireMessage always carries content, "" included: llama.cpp refuses an
// assistant message without content unless it has tool calls.
type wireMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string           `json:"type"`
	Function wireToolFunction `json:"function"`
}

type wireToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptyParameters is the schema of a tool without parameters.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// encodeRequest renders req as a request body.
func encodeRequest(req provider.Request, stream bool) ([]byte, error) {
	body := chatRequest{
		Model:       req.Model,
		Messages:    make([]wireMessage, 0, len(req.Messages)),
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
	}
	if body.MaxTokens <= 0 {
		body.MaxTokens = DefaultMaxTokens
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, encodeMessage(m))
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = emptyParameters
		}
		body.Tools = append(body.Tools, wireTool{
			Type:     "function",
			Function: wireToolFunction{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	if stream {
		body.Stream = true
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Prompts are code: keep <, > and & as they are.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, &provider.Error{Msg: fmt.Sprintf("encode chat request: %v", err), Err: err}
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// encodeMessage renders one history entry. An assistant message carries
// its addressable calls with their arguments as the server sent them (or
// the JSON of the decoded object when there is no raw text).
func encodeMessage(m provider.Message) wireMessage {
	w := wireMessage{Role: m.Role, Content: m.Content}
	switch m.Role {
	case provider.RoleAssistant:
		for _, c := range m.ToolCalls {
			if c.ID == "" {
				continue
			}
			w.ToolCalls = append(w.ToolCalls, wireToolCall{
				ID:       c.ID,
				Type:     "function",
				Function: wireFunction{Name: c.Name, Arguments: argumentsText(c)},
			})
		}
	case provider.RoleTool:
		w.ToolCallID = m.ToolCallID
	}
	return w
}

func argumentsText(c provider.ToolCall) string {
	if c.RawArguments != "" {
		return c.RawArguments
	}
	if c.Arguments == nil {
		return "{}"
	}
	data, err := json.Marshal(c.Arguments)
	if err != nil {
		return "{}"
	}
	return string(data)
}
