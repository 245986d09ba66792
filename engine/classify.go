package engine

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Reply kinds of a reply without tool calls (E-43).
const (
	replyAnswer       = "answer"
	replyTruncated    = "truncated"
	replyEmpty        = "empty"
	replyTextToolCall = "text_tool_call"
)

// thinkBlock matches a reasoning block, closed or running to the end.
var thinkBlock = regexp.MustCompile(`(?s)<think>.*?(</think>|$)`)

// toolCallMarkers are what models write when they put a call in the text.
var toolCallMarkers = []string{"<tool_call>", "<function=", "<function_call>", "<|tool_call|>"}

// classify decides what a reply without tool calls is: an answer (the run
// completes), or a reply to nudge.
func classify(text, finishReason string) string {
	if finishReason == "length" {
		return replyTruncated
	}
	visible := strings.TrimSpace(thinkBlock.ReplaceAllString(text, ""))
	if visible == "" {
		return replyEmpty
	}
	for _, m := range toolCallMarkers {
		if strings.Contains(visible, m) {
			return replyTextToolCall
		}
	}
	if hasJSONToolCall(visible) {
		return replyTextToolCall
	}
	return replyAnswer
}

// hasJSONToolCall reports whether some "{" in s starts a JSON object with a
// string "name" and an "arguments" key.
//
// Decoding from every "{" is quadratic in a reply of nested, unclosed
// objects (a model repeating `{"a":` to its token limit took seconds at
// 64 KB), so only a "{" whose first key could begin a call is tried, and
// at most maxJSONCallTries of them.
func hasJSONToolCall(s string) bool {
	if !strings.Contains(s, `"arguments"`) || !strings.Contains(s, `"name"`) {
		return false
	}
	tries := 0
	for i := strings.IndexByte(s, '{'); i >= 0 && tries < maxJSONCallTries; {
		if callStart(s[i+1:]) {
			tries++
			dec := json.NewDecoder(strings.NewReader(s[i:]))
			var obj map[string]json.RawMessage
			if dec.Decode(&obj) == nil {
				var name string
				_, hasArgs := obj["arguments"]
				if json.Unmarshal(obj["name"], &name) == nil && obj["name"] != nil && hasArgs {
					return true
				}
			}
		}
		next := strings.IndexByte(s[i+1:], '{')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

// maxJSONCallTries bounds the objects hasJSONToolCall decodes in one reply.
const maxJSONCallTries = 256

// callKeys are the first keys of the objects a text tool call is written
// as: {"name": …, "arguments": …} in either order, or with its type or id
// first.
var callKeys = []string{`"name"`, `"arguments"`, `"type"`, `"id"`}

// callStart reports whether rest (what follows a "{") begins, after
// white space, with one of callKeys.
func callStart(rest string) bool {
	rest = strings.TrimLeft(rest, " \t\r\n")
	for _, k := range callKeys {
		if strings.HasPrefix(rest, k) {
			return true
		}
	}
	return false
}

// firstRunes returns s cut to n runes.
func firstRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// lastRunes returns the last n runes of s.
func lastRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[len(r)-n:])
}
