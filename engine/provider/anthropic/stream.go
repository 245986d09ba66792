package anthropic

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/respjson"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// chatStream sends a streamed request and assembles the reply from its
// events. The SDK decodes the events; the blocks are put together here
// rather than by its Message.Accumulate, which replaces a tool call's
// input that is not valid JSON with {}: a call cut off at max_tokens or
// sent with broken JSON must reach the engine as what it is.
func (p *Provider) chatStream(ctx context.Context, target string, params sdk.MessageNewParams,
	onProgress func(provider.Progress), opts []option.RequestOption,
) (provider.Response, error) {
	stream := p.client.Messages.NewStreaming(ctx, params, opts...)
	defer func() { _ = stream.Close() }()
	asm := &assembler{}
	events := 0
	for stream.Next() {
		events++
		if asm.add(stream.Current()) && onProgress != nil {
			onProgress(provider.Progress{Tokens: asm.tokens(), Tail: &asm.tail})
		}
	}
	if err := stream.Err(); err != nil {
		return provider.Response{}, classify(ctx, target, err, events > 0)
	}
	if !asm.started {
		return provider.Response{}, malformedReply()
	}
	if !asm.stopped && asm.stop == "" {
		// A stream that stopped before its stop reason was cut off, not
		// finished.
		if cerr := ctx.Err(); cerr != nil {
			return provider.Response{}, classify(ctx, target, cerr, true)
		}
		return provider.Response{}, &provider.Error{Msg: fmt.Sprintf("stream from %s ended before the reply was complete", target)}
	}
	return asm.response(), nil
}

// assembler builds a reply from stream events (message_start,
// content_block_start/delta/stop, message_delta, message_stop).
type assembler struct {
	started, stopped bool
	blocks           map[int64]*block
	stop             string
	usage            sdk.Usage
	// output is message_delta's output_tokens, the final count.
	output respjson.Field
	// chars counts the characters generated so far, for the progress
	// estimate.
	chars int
	// tail is the end of what was generated so far, for a live view.
	tail provider.Tail
}

// block is one content block being assembled.
type block struct {
	kind      string
	id, name  respjson.Field
	text      strings.Builder
	input     string // the start event's input, as JSON
	partial   strings.Builder
	hasDeltas bool
}

// add folds one event in and reports whether it brought generated text.
func (a *assembler) add(ev sdk.MessageStreamEventUnion) bool {
	switch ev.Type {
	case "message_start":
		a.started = true
		a.usage = ev.Message.Usage
	case "content_block_start":
		if a.blocks == nil {
			a.blocks = map[int64]*block{}
		}
		cb := ev.ContentBlock
		b := &block{kind: cb.Type, id: cb.JSON.ID, name: cb.JSON.Name, input: cb.JSON.Input.Raw()}
		b.text.WriteString(cb.Text)
		a.blocks[ev.Index] = b
	case "content_block_delta":
		b := a.blocks[ev.Index]
		if b == nil {
			return false
		}
		switch ev.Delta.Type {
		case "text_delta":
			b.text.WriteString(ev.Delta.Text)
			a.tail.Add(ev.Delta.Text)
			a.chars += utf8.RuneCountInString(ev.Delta.Text)
		case "input_json_delta":
			b.partial.WriteString(ev.Delta.PartialJSON)
			b.hasDeltas = true
			a.tail.Add(ev.Delta.PartialJSON)
			a.chars += utf8.RuneCountInString(ev.Delta.PartialJSON)
		case "thinking_delta":
			a.tail.Add(ev.Delta.Thinking)
			a.chars += utf8.RuneCountInString(ev.Delta.Thinking)
		default:
			return false
		}
		return true
	case "message_delta":
		a.stop = string(ev.Delta.StopReason)
		u := ev.Usage.JSON
		a.output = u.OutputTokens
		// Input counts come with message_start; a message_delta that
		// carries them has the final word.
		if u.InputTokens.Valid() {
			a.usage.JSON.InputTokens = u.InputTokens
		}
		if u.CacheCreationInputTokens.Valid() {
			a.usage.JSON.CacheCreationInputTokens = u.CacheCreationInputTokens
		}
		if u.CacheReadInputTokens.Valid() {
			a.usage.JSON.CacheReadInputTokens = u.CacheReadInputTokens
		}
		return count(a.output) > 0
	case "message_stop":
		a.stopped = true
	}
	return false
}

// tokens is the completion-token count so far: the server's once it
// says, else four characters to the token.
func (a *assembler) tokens() int {
	if n := count(a.output); n > 0 {
		return n
	}
	return a.chars / 4
}

// response finishes the reply: text blocks joined, tool_use blocks in
// index order.
func (a *assembler) response() provider.Response {
	var text strings.Builder
	var calls []provider.ToolCall
	indexes := make([]int64, 0, len(a.blocks))
	for i := range a.blocks {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		b := a.blocks[i]
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			input := b.input
			if b.hasDeltas {
				input = b.partial.String()
			}
			calls = append(calls, toolCall(b.id, b.name, input))
		}
	}
	usage := usageOf(a.usage)
	if a.output.Raw() != "" {
		usage.CompletionTokens = count(a.output)
	}
	return provider.Response{Text: text.String(), ToolCalls: calls, FinishReason: finishReason(a.stop), Usage: usage}
}
