package openai

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// assembler builds a reply from streamed chunks. Content arrives in
// pieces; each tool call is keyed by its index, its id and name usually
// arrive once and its arguments in fragments. Servers that only send tool
// calls in deltas (never in a final message) need nothing more.
type assembler struct {
	text   strings.Builder
	calls  []*partialCall
	byKey  map[string]*partialCall
	finish string
	usage  provider.Usage
	// sawChoice records a chunk with a choice: a stream without one is a
	// reply of the wrong shape.
	sawChoice bool
	// tail is the end of what was generated so far, for a live view.
	tail provider.Tail
	// chars counts the characters generated so far (content, reasoning and
	// arguments), for the progress estimate.
	chars int
	// serverTokens is the completion-token count a server reports while
	// streaming (vLLM's continuous usage), 0 when it does not.
	serverTokens int
}

// partialCall is one tool call being assembled. Values of the wrong type
// are remembered as such so the finished entry fails E-58's rules exactly
// as the same entry would in a non-streamed reply.
type partialCall struct {
	notObject bool
	id        any
	badFunc   bool
	name      any
	args      strings.Builder
	hasArgs   bool
	// argsValue holds arguments sent as something other than a string
	// fragment (an object, by a known quirk; anything else is invalid).
	argsValue any
}

func newAssembler() *assembler {
	return &assembler{byKey: map[string]*partialCall{}}
}

// add folds one chunk in and reports whether it carried anything new.
func (a *assembler) add(chunk map[string]any) bool {
	changed := false
	if u, ok := object(chunk["usage"]); ok {
		a.usage = parseUsage(u)
		if n := a.usage.CompletionTokens; n > 0 && n != a.serverTokens {
			a.serverTokens = n
			changed = true
		}
	}
	choices, _ := chunk["choices"].([]any)
	if len(choices) == 0 {
		return changed
	}
	choice, ok := object(choices[0])
	if !ok {
		return changed
	}
	if f, ok := choice["finish_reason"].(string); ok && f != "" {
		a.finish = f
	}
	delta, ok := object(choice["delta"])
	if !ok {
		if delta, ok = object(choice["message"]); !ok {
			return changed
		}
	}
	a.sawChoice = true
	if s, ok := delta["content"].(string); ok && s != "" {
		a.text.WriteString(s)
		a.tail.Add(s)
		a.chars += utf8.RuneCountInString(s)
		changed = true
	}
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if s, ok := delta[key].(string); ok && s != "" {
			a.tail.Add(s)
			a.chars += utf8.RuneCountInString(s)
			changed = true
		}
	}
	if list, ok := delta["tool_calls"].([]any); ok {
		for _, d := range list {
			a.addCall(d)
			changed = true
		}
	}
	return changed
}

// addCall folds in one tool-call delta.
func (a *assembler) addCall(d any) {
	entry, ok := object(d)
	if !ok {
		a.calls = append(a.calls, &partialCall{notObject: true})
		return
	}
	pc := a.callFor(entry)
	switch id := entry["id"].(type) {
	case nil:
	case string:
		// Some servers repeat the id on every fragment: the first one
		// names the call.
		if s, isStr := pc.id.(string); id != "" && (pc.id == nil || (isStr && s == "")) {
			pc.id = id
		}
	default:
		pc.id = id
	}
	fnValue, present := entry["function"]
	if !present || fnValue == nil {
		return
	}
	fn, ok := object(fnValue)
	if !ok {
		pc.badFunc = true
		return
	}
	switch name := fn["name"].(type) {
	case nil:
	case string:
		if s, isStr := pc.name.(string); name != "" && (pc.name == nil || (isStr && s == "")) {
			pc.name = name
		}
	default:
		pc.name = name
	}
	switch args := fn["arguments"].(type) {
	case nil:
	case string:
		pc.args.WriteString(args)
		pc.hasArgs = true
		a.tail.Add(args)
		a.chars += utf8.RuneCountInString(args)
	default:
		pc.argsValue = args
	}
}

// callFor finds the call a delta belongs to. Deltas name it by index; a
// delta without one starts a new call when it brings an id or a name and
// continues the last call otherwise.
func (a *assembler) callFor(entry map[string]any) *partialCall {
	if idx, ok := entry["index"].(json.Number); ok {
		key := idx.String()
		if pc, ok := a.byKey[key]; ok {
			return pc
		}
		pc := &partialCall{}
		a.byKey[key] = pc
		a.calls = append(a.calls, pc)
		return pc
	}
	_, hasID := nonEmptyString(entry["id"])
	fn, _ := object(entry["function"])
	_, hasName := nonEmptyString(fn["name"])
	if hasID || hasName || len(a.calls) == 0 {
		pc := &partialCall{}
		a.calls = append(a.calls, pc)
		return pc
	}
	return a.calls[len(a.calls)-1]
}

// entry renders the assembled call as the entry a non-streamed reply would
// have held, for the same parse rules.
func (pc *partialCall) entry() any {
	if pc.notObject {
		return "not an object"
	}
	e := map[string]any{}
	if pc.id != nil {
		e["id"] = pc.id
	}
	if pc.badFunc {
		e["function"] = "not an object"
		return e
	}
	fn := map[string]any{}
	if pc.name != nil {
		fn["name"] = pc.name
	}
	switch {
	case pc.argsValue != nil:
		fn["arguments"] = pc.argsValue
	case pc.hasArgs:
		fn["arguments"] = pc.args.String()
	}
	e["function"] = fn
	return e
}

// tokens is the completion-token count so far: the server's when it says,
// else four characters to the token.
func (a *assembler) tokens() int {
	if a.serverTokens > 0 {
		return a.serverTokens
	}
	return a.chars / 4
}

// response finishes the reply.
func (a *assembler) response(p *Provider) provider.Response {
	entries := make([]any, 0, len(a.calls))
	for _, pc := range a.calls {
		entries = append(entries, pc.entry())
	}
	return provider.Response{
		Text:         a.text.String(),
		ToolCalls:    p.parseToolCalls(entries),
		FinishReason: a.finish,
		Usage:        a.usage,
	}
}
