package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/respjson"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// Complaints about a reply, worded as on the OpenAI path (E-58, E-60).
const (
	errNoContent        = "malformed response from server (no content blocks)"
	errMalformedEntry   = "malformed tool call entry (missing or invalid id/function fields)"
	malformedArgsPrefix = "malformed tool arguments: "
)

// Finish reasons, in the OpenAI path's words: the engine reads "length"
// as a reply cut off at the token limit.
const (
	finishStop      = "stop"
	finishToolCalls = "tool_calls"
	finishLength    = "length"
)

// finishReason maps a stop_reason (E-60). model_context_window_exceeded,
// newer than the contract, is a reply cut off like max_tokens. Unknown
// reasons pass through.
func finishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence", "refusal", "pause_turn":
		return finishStop
	case "tool_use":
		return finishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return finishLength
	}
	return stop
}

// parseMessage parses a non-streamed reply body.
func parseMessage(data []byte, target string) (provider.Response, error) {
	if !json.Valid(data) {
		err := json.Unmarshal(data, new(any))
		return provider.Response{}, &provider.Error{Msg: fmt.Sprintf("invalid JSON from %s: %v", target, err), Err: err}
	}
	var msg sdk.Message
	if err := msg.UnmarshalJSON(data); err != nil || !isList(msg.JSON.Content) {
		return provider.Response{}, malformedReply()
	}
	var text strings.Builder
	var calls []provider.ToolCall
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			calls = append(calls, toolCall(b.JSON.ID, b.JSON.Name, b.JSON.Input.Raw()))
		}
	}
	return provider.Response{
		Text:         text.String(),
		ToolCalls:    calls,
		FinishReason: finishReason(stringField(msg.JSON.StopReason)),
		Usage:        usageOf(msg.Usage),
	}, nil
}

// isList reports whether a field holds a JSON array.
func isList(f respjson.Field) bool {
	return strings.HasPrefix(strings.TrimSpace(f.Raw()), "[")
}

// stringField is a string field's value, "" when it is absent, null or
// not a string.
func stringField(f respjson.Field) string {
	var s string
	if json.Unmarshal([]byte(f.Raw()), &s) != nil {
		return ""
	}
	return s
}

// toolCall applies E-60's rules to one tool_use block, from its raw
// fields: without a string id and name it is unaddressable; input that is
// not an object makes it addressable but malformed. Absent or null input
// reads as {}, as absent arguments do on the OpenAI path.
func toolCall(idField, nameField respjson.Field, input string) provider.ToolCall {
	id, name := stringField(idField), stringField(nameField)
	if id == "" || name == "" {
		return provider.ToolCall{Error: errMalformedEntry}
	}
	raw := strings.TrimSpace(input)
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	call := provider.ToolCall{ID: id, Name: name, RawArguments: raw}
	call.Arguments, call.Error = decodeArguments(raw)
	return call
}

// decodeArguments decodes a call's input text into an object, or says why
// it cannot. Numbers stay json.Number, as on the OpenAI path.
func decodeArguments(raw string) (map[string]any, string) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, malformedArgsPrefix + "unexpected end of JSON input"
		}
		return nil, malformedArgsPrefix + err.Error()
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, malformedArgsPrefix + "invalid character after top-level value"
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, malformedArgsPrefix + "must be a JSON object, got " + jsonKind(v)
	}
	return args, ""
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

// usageOf reads a reply's usage: the prompt is every input token, whether
// read from the cache, written to it or neither; each count that is not a
// finite, non-negative number counts as 0 (E-56).
func usageOf(u sdk.Usage) provider.Usage {
	return provider.Usage{
		PromptTokens: count(u.JSON.InputTokens) + count(u.JSON.CacheCreationInputTokens) +
			count(u.JSON.CacheReadInputTokens),
		CompletionTokens: count(u.JSON.OutputTokens),
	}
}

// count reads a token count from its raw JSON: only finite, non-negative
// numbers count (fractions truncated); anything else, NaN (read as null),
// booleans and strings included, is 0.
func count(f respjson.Field) int {
	raw := bytes.TrimSpace([]byte(f.Raw()))
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	if v >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(v)
}

func malformedReply() *provider.Error {
	return &provider.Error{Msg: errNoContent, Malformed: true}
}
