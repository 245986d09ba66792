package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// Adapter complaints about tool calls (E-58), shown to the model.
const (
	errMalformedEntry   = "malformed tool call entry (missing or invalid id/function fields)"
	malformedArgsPrefix = "malformed tool arguments: "
)

// parseToolCalls applies E-58's entry rules to a tool_calls value, keeping
// the order. A value that is not a list means no calls.
//
// Two server quirks are accepted where E-58 would refuse the entry:
//   - an id that is absent, null or "" (Ollama, some llama.cpp builds) gets
//     a made-up id, so the call can be answered;
//   - arguments sent as a JSON object instead of its text (Ollama) are
//     taken as that object's JSON text.
//
// An id of another type, a missing or nameless function, or arguments of
// another type still make the entry unaddressable.
func (p *Provider) parseToolCalls(v any) []provider.ToolCall {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil
	}
	calls := make([]provider.ToolCall, 0, len(list))
	for _, e := range list {
		calls = append(calls, p.parseToolCall(e))
	}
	return calls
}

func (p *Provider) parseToolCall(e any) provider.ToolCall {
	entry, ok := object(e)
	if !ok {
		return provider.ToolCall{Error: errMalformedEntry}
	}
	fn, ok := object(entry["function"])
	if !ok {
		return provider.ToolCall{Error: errMalformedEntry}
	}
	name, ok := nonEmptyString(fn["name"])
	if !ok {
		return provider.ToolCall{Error: errMalformedEntry}
	}
	raw, ok := rawArguments(fn["arguments"])
	if !ok {
		return provider.ToolCall{Error: errMalformedEntry}
	}
	var id string
	switch v := entry["id"].(type) {
	case nil:
		id = p.newCallID()
	case string:
		id = v
		if id == "" {
			id = p.newCallID()
		}
	default:
		return provider.ToolCall{Error: errMalformedEntry}
	}
	call := provider.ToolCall{ID: id, Name: name, RawArguments: raw}
	call.Arguments, call.Error = decodeArguments(raw)
	return call
}

// rawArguments returns the arguments text of a call: "{}" for absent, null
// or empty arguments, the text of a string, the JSON of an object. Other
// types are not arguments.
func rawArguments(v any) (string, bool) {
	switch a := v.(type) {
	case nil:
		return "{}", true
	case string:
		if a == "" {
			return "{}", true
		}
		return a, true
	case map[string]any:
		data, err := json.Marshal(a)
		if err != nil {
			return "", false
		}
		return string(data), true
	default:
		return "", false
	}
}

// decodeArguments decodes a call's arguments text into an object, or says
// why it cannot.
func decodeArguments(raw string) (map[string]any, string) {
	v, err := decodeJSON([]byte(raw))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, malformedArgsPrefix + "unexpected end of JSON input"
		}
		return nil, malformedArgsPrefix + err.Error()
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, malformedArgsPrefix + "must be a JSON object, got " + jsonKind(v)
	}
	return args, ""
}

// newCallID makes up an id for a call the server sent without one. Nine
// letters and digits, because Mistral's chat templates (Devstral) refuse
// any other tool-call id.
func (p *Provider) newCallID() string {
	return fmt.Sprintf("dw%07d", p.callSeq.Add(1)%10_000_000)
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	default:
		return "object"
	}
}
