package openai

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// Error bodies: at most errorBodyShown bytes go into the message, but a
// little more is read so context-overflow wording further in is still
// recognised. Nothing beyond errorBodyRead is ever read.
const (
	errorBodyShown = 500
	errorBodyRead  = 4 << 10
)

// HTTPStatusError is the cause of a *provider.Error for a non-2xx answer.
type HTTPStatusError struct {
	// Code is the HTTP status.
	Code int
	// URL is the request URL.
	URL string
	// Body is the start of the answer's body, at most 500 bytes.
	Body string

	retryAfter    time.Duration
	hasRetryAfter bool
}

func (e *HTTPStatusError) Error() string {
	return fmt.Sprintf("HTTP %d on %s: %s", e.Code, e.URL, e.Body)
}

// RetryAfter returns the pause the server asked for with Retry-After.
func (e *HTTPStatusError) RetryAfter() (time.Duration, bool) { return e.retryAfter, e.hasRetryAfter }

var _ provider.RetryHinter = (*HTTPStatusError)(nil)

// statusError reads the start of a non-2xx answer and classifies it.
func statusError(resp *http.Response, target string) *provider.Error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyRead))
	se := &HTTPStatusError{Code: resp.StatusCode, URL: target, Body: clipBytes(data, errorBodyShown)}
	se.retryAfter, se.hasRetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return &provider.Error{
		Msg:             se.Error(),
		StatusCode:      resp.StatusCode,
		Transient:       resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
		ContextOverflow: isOverflowStatus(resp.StatusCode) && mentionsContextOverflow(string(data)),
		Err:             se,
	}
}

// clipBytes returns at most n bytes of data as text: invalid UTF-8
// replaced, cut on a character boundary, surrounding space trimmed.
func clipBytes(data []byte, n int) string {
	text := strings.ToValidUTF8(string(data[:min(len(data), n)]), "\uFFFD")
	for len(text) > n {
		// A cut that split a character left invalid bytes, now replaced
		// and possibly longer: drop characters from the end until it fits.
		_, size := utf8.DecodeLastRuneInString(text)
		text = text[:len(text)-size]
	}
	return strings.TrimSpace(text)
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP
// date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// isOverflowStatus reports the statuses servers refuse an oversized prompt
// with: 400 everywhere, 413 behind some proxies.
func isOverflowStatus(code int) bool {
	return code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge
}

// overflowPhrases are how servers say a prompt does not fit, lowercased:
// vLLM and OpenAI ("This model's maximum context length is 32768 tokens"),
// llama.cpp ("the request exceeds the available context size",
// type exceed_context_size_error), LM Studio ("the model is loaded with
// context length of only 4096 tokens"), Ollama ("input length exceeds the
// context length") and generic gateways.
var overflowPhrases = []string{
	"context length",
	"context_length",
	"context window",
	"context size",
	"maximum context",
	"exceed_context_size",
	"too many tokens",
	"prompt is too long",
}

// mentionsContextOverflow reports whether an error text says the prompt
// did not fit the context window.
func mentionsContextOverflow(text string) bool {
	low := strings.ToLower(text)
	for _, p := range overflowPhrases {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}
