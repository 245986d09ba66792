package openai

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// errStreamRefused marks a server that will not stream; the caller asks
// again without streaming.
var errStreamRefused = errors.New("server does not stream")

// chatStream sends a streamed request and assembles the reply. A server
// that refuses to stream gets errStreamRefused back to the caller; one that
// answers with a plain JSON completion instead has that answer parsed, and
// the provider stops asking it for streams.
func (p *Provider) chatStream(ctx context.Context, target string, req provider.Request) (provider.Response, error) {
	body, err := encodeRequest(req, true)
	if err != nil {
		return provider.Response{}, err
	}
	resp, err := p.send(ctx, http.MethodPost, target, body, "text/event-stream")
	if err != nil {
		if refusesStreaming(err) {
			return provider.Response{}, fmt.Errorf("%w: %w", errStreamRefused, err)
		}
		return provider.Response{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	if isPlainJSON(resp.Header.Get("Content-Type"), br) {
		p.noStream.Store(true)
		data, err := readBody(ctx, br, target)
		if err != nil {
			return provider.Response{}, err
		}
		return p.parseCompletion(data, target)
	}
	return p.readStream(ctx, &sseReader{r: br}, target, req.OnProgress)
}

// readStream reads events until the stream ends.
func (p *Provider) readStream(ctx context.Context, events *sseReader, target string, onProgress func(provider.Progress)) (provider.Response, error) {
	asm := newAssembler()
	for {
		ev, err := events.next()
		if errors.Is(err, io.EOF) {
			// No [DONE]: a stream that stopped before its finish reason
			// was cut off, not finished.
			if asm.finish == "" {
				return provider.Response{}, &provider.Error{Msg: fmt.Sprintf("stream from %s ended before the reply was complete", target)}
			}
			break
		}
		if err != nil {
			return provider.Response{}, requestError(ctx, target, err, true)
		}
		if bytes.Equal(bytes.TrimSpace(ev.data), doneData) {
			break
		}
		v, err := decodeJSON(ev.data)
		if err != nil {
			return provider.Response{}, &provider.Error{Msg: fmt.Sprintf("invalid JSON in the stream from %s: %v", target, err), Err: err}
		}
		chunk, _ := object(v)
		if ev.failure || (chunk != nil && chunk["error"] != nil && chunk["choices"] == nil) {
			return provider.Response{}, streamFailure(target, v, ev.data)
		}
		if chunk != nil && asm.add(chunk) && onProgress != nil {
			onProgress(provider.Progress{Tokens: asm.tokens(), Tail: &asm.tail})
		}
	}
	if !asm.sawChoice {
		return provider.Response{}, malformedReply()
	}
	return asm.response(p), nil
}

// streamFailure turns an error event into a *provider.Error.
func streamFailure(target string, v any, raw []byte) *provider.Error {
	text := clipBytes(raw, errorBodyShown)
	transient := false
	if m, ok := object(v); ok {
		detail := m
		if inner, ok := object(m["error"]); ok {
			detail = inner
		}
		if msg, ok := nonEmptyString(detail["message"]); ok {
			text = clipBytes([]byte(msg), errorBodyShown)
		} else if msg, ok := nonEmptyString(m["error"]); ok {
			text = clipBytes([]byte(msg), errorBodyShown)
		}
		code := countField(detail["code"])
		transient = code == http.StatusTooManyRequests || code >= 500
	}
	return &provider.Error{
		Msg:             fmt.Sprintf("error in the stream from %s: %s", target, text),
		Transient:       transient,
		ContextOverflow: mentionsContextOverflow(text),
	}
}

// refusesStreaming reports an HTTP refusal that is about streaming itself.
func refusesStreaming(err error) bool {
	pe, ok := provider.AsError(err)
	if !ok || pe.ContextOverflow {
		return false
	}
	switch pe.StatusCode {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusNotImplemented:
		var se *HTTPStatusError
		return errors.As(err, &se) && strings.Contains(strings.ToLower(se.Body), "stream")
	}
	return false
}

// isPlainJSON reports whether a reply to a streamed request is a plain
// JSON body rather than an event stream: by its type, else by its first
// non-blank byte.
func isPlainJSON(contentType string, br *bufio.Reader) bool {
	ct := strings.ToLower(contentType)
	if strings.Contains(ct, "text/event-stream") {
		return false
	}
	if strings.Contains(ct, "json") {
		return true
	}
	for n := 1; n <= 512; n++ {
		b, err := br.Peek(n)
		if err != nil {
			return false
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true
		default:
			return false
		}
	}
	return false
}
