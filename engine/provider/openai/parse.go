package openai

import (
	"fmt"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// errNoMessage is E-58's complaint about a reply of the wrong shape.
const errNoMessage = "malformed response from server (no choices[0].message)"

// parseCompletion parses a non-streamed chat-completions body (E-58).
func (p *Provider) parseCompletion(data []byte, target string) (provider.Response, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return provider.Response{}, &provider.Error{Msg: fmt.Sprintf("invalid JSON from %s: %v", target, err), Err: err}
	}
	top, choice, ok := firstChoice(v)
	msg, isObj := object(choice["message"])
	if !ok || !isObj {
		return provider.Response{}, malformedReply()
	}
	text, _ := msg["content"].(string) // null, lists of parts and other shapes read as ""
	finish, _ := choice["finish_reason"].(string)
	return provider.Response{
		Text:         text,
		ToolCalls:    p.parseToolCalls(msg["tool_calls"]),
		FinishReason: finish,
		Usage:        parseUsage(top["usage"]),
	}, nil
}

// firstChoice returns the top-level object and its choices[0] object.
func firstChoice(v any) (top, choice map[string]any, ok bool) {
	top, ok = object(v)
	if !ok {
		return nil, nil, false
	}
	choices, _ := top["choices"].([]any)
	if len(choices) == 0 {
		return top, nil, false
	}
	choice, ok = object(choices[0])
	return top, choice, ok
}

// parseUsage reads a usage object; bad fields count as 0 (E-56).
func parseUsage(v any) provider.Usage {
	u, _ := object(v)
	return provider.Usage{
		PromptTokens:     countField(u["prompt_tokens"]),
		CompletionTokens: countField(u["completion_tokens"]),
	}
}

func malformedReply() *provider.Error {
	return &provider.Error{Msg: errNoMessage, Malformed: true}
}
