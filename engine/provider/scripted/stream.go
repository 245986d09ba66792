package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// Streamed replies follow the OpenAI server-sent-event format: a role
// chunk, content in small pieces, each tool call's id and name in one chunk
// and its arguments in fragments, a chunk with the finish reason, an
// optional usage chunk, then "data: [DONE]". The pieces are small on
// purpose, so clients must really assemble deltas.
const (
	contentPiece   = 16 // runes of content per chunk
	argumentsPiece = 24 // bytes of arguments per chunk
)

func streamReply(ctx context.Context, w http.ResponseWriter, model string, rp reply, t Turn, includeUsage bool) int {
	flusher, ok := w.(http.Flusher)
	if !ok {
		return writeError(w, http.StatusInternalServerError, "streaming unsupported")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	pause := time.Duration(t.ChunkDelayMS) * time.Millisecond
	sent := 0
	send := func(v any) bool {
		data, _ := json.Marshal(v)
		frame := fmt.Sprintf("data: %s\n\n", data)
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
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": rp.id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}

	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return 499
	}
	if rp.content != nil {
		runes := []rune(*rp.content)
		for i := 0; i < len(runes); i += contentPiece {
			piece := string(runes[i:min(i+contentPiece, len(runes))])
			if !send(chunk(map[string]any{"content": piece}, nil)) {
				return 499
			}
		}
	}
	for i, c := range rp.calls {
		head := map[string]any{"index": i, "type": "function", "function": map[string]any{"name": c.Function.Name, "arguments": ""}}
		if c.ID != "" {
			head["id"] = c.ID
		}
		if !send(chunk(map[string]any{"tool_calls": []any{head}}, nil)) {
			return 499
		}
		for j := 0; j < len(c.raw); {
			end := min(j+argumentsPiece, len(c.raw))
			for end < len(c.raw) && !utf8.RuneStart(c.raw[end]) {
				end++ // never split a character: each fragment is valid UTF-8
			}
			frag := c.raw[j:end]
			j = end
			part := map[string]any{"index": i, "function": map[string]any{"arguments": frag}}
			if !send(chunk(map[string]any{"tool_calls": []any{part}}, nil)) {
				return 499
			}
		}
	}
	if !send(chunk(map[string]any{}, rp.finishReason)) {
		return 499
	}
	if includeUsage {
		send(map[string]any{
			"id": rp.id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{},
			"usage": map[string]any{
				"prompt_tokens": rp.usage.PromptTokens, "completion_tokens": rp.usage.CompletionTokens,
				"total_tokens": rp.usage.PromptTokens + rp.usage.CompletionTokens,
			},
		})
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	flusher.Flush()
	return http.StatusOK
}
