package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// errorBodyShown is how much of an error body goes into the message
// (E-57).
const errorBodyShown = 500

// HTTPStatusError is the cause of a *provider.Error for a non-2xx answer
// or an error event in a stream.
type HTTPStatusError struct {
	// Code is the HTTP status (200 for an error event in a stream).
	Code int
	// URL is the request URL.
	URL string
	// Type is the API's error type, e.g. "overloaded_error".
	Type string
	// Body is the start of the answer's body, at most 500 bytes.
	Body string

	retryAfter    time.Duration
	hasRetryAfter bool
	cause         *sdk.Error
}

func (e *HTTPStatusError) Error() string {
	return fmt.Sprintf("HTTP %d on %s: %s", e.Code, e.URL, e.Body)
}

// Unwrap returns the SDK's error.
func (e *HTTPStatusError) Unwrap() error { return e.cause }

// RetryAfter returns the pause the server asked for with Retry-After.
func (e *HTTPStatusError) RetryAfter() (time.Duration, bool) { return e.retryAfter, e.hasRetryAfter }

var _ provider.RetryHinter = (*HTTPStatusError)(nil)

// transientTypes are the API's error types that a later try may not meet:
// an overloaded or failing server and rate limits. They matter for error
// events inside a stream, whose HTTP status was 200.
var transientTypes = map[string]bool{
	"overloaded_error": true,
	"api_error":        true,
	"rate_limit_error": true,
	"timeout_error":    true,
}

// classify turns whatever the SDK returned into a *provider.Error. inBody
// says whether the answer had started: a connection dropped before any
// byte of it is worth retrying, a body cut short is not.
func classify(ctx context.Context, target string, err error, inBody bool) error {
	if err == nil {
		return nil
	}
	if _, ok := provider.AsError(err); ok {
		return err
	}
	if errors.Is(err, errResponseTooLarge) {
		return &provider.Error{Msg: fmt.Sprintf("response from %s is larger than the %d MiB limit", target, MaxResponseBytes>>20), Err: err}
	}
	if errors.Is(err, errOffBase) {
		return &provider.Error{Msg: fmt.Sprintf("request to %s: %v", target, err), Err: err}
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return statusError(apiErr, target)
	}
	// The context's verdict comes first: a deadline that fires mid-read
	// surfaces as assorted read errors.
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return &provider.Error{Msg: fmt.Sprintf("request to %s timed out", target), Timeout: true, Err: cerr}
		}
		return &provider.Error{Msg: fmt.Sprintf("request to %s was cancelled", target), Err: cerr}
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) || strings.Contains(err.Error(), "received error while streaming") {
		return &provider.Error{Msg: fmt.Sprintf("invalid JSON from %s: %v", target, err), Err: err}
	}
	cause := err
	var uerr *url.Error
	if errors.As(err, &uerr) {
		cause = uerr.Err
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return &provider.Error{Msg: fmt.Sprintf("request to %s timed out: %v", target, cause), Timeout: true, Err: err}
	}
	if inBody {
		return &provider.Error{
			Msg:       fmt.Sprintf("reading the response from %s: %v", target, cause),
			Transient: errors.Is(err, syscall.ECONNRESET),
			Err:       err,
		}
	}
	return &provider.Error{
		Msg:       fmt.Sprintf("cannot reach %s: %v", target, cause),
		Transient: unreachable(err),
		Err:       err,
	}
}

// statusError classifies an HTTP error answer or an error event: 429,
// 5xx (529 is Anthropic's "overloaded") and the transient error types are
// retried; a 400 or 413 that says the prompt is too long is a context
// overflow, as on the OpenAI path.
func statusError(apiErr *sdk.Error, target string) *provider.Error {
	raw := apiErr.RawJSON()
	se := &HTTPStatusError{Code: apiErr.StatusCode, URL: target, Type: string(apiErr.Type()), Body: clip(raw, errorBodyShown), cause: apiErr}
	if apiErr.Response != nil {
		se.retryAfter, se.hasRetryAfter = parseRetryAfter(apiErr.Response.Header.Get("Retry-After"), time.Now())
	}
	msg := apiMessage(raw)
	if apiErr.StatusCode < 300 {
		// An error event in a stream that had begun with 200.
		text := msg
		if text == "" {
			text = se.Body
		}
		return &provider.Error{
			Msg:             fmt.Sprintf("error in the stream from %s: %s", target, clip(text, errorBodyShown)),
			Transient:       transientTypes[se.Type],
			ContextOverflow: mentionsContextOverflow(text),
			Err:             se,
		}
	}
	code := apiErr.StatusCode
	return &provider.Error{
		Msg:             se.Error(),
		StatusCode:      code,
		Transient:       code == http.StatusTooManyRequests || code >= 500,
		ContextOverflow: (code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge) && mentionsContextOverflow(raw),
		Err:             se,
	}
}

// apiMessage is error.message of an API error body, "" when it has none.
func apiMessage(raw string) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &body) != nil {
		return ""
	}
	return body.Error.Message
}

// overflowPhrases are how servers say a prompt does not fit, lowercased:
// Anthropic ("prompt is too long: 210000 tokens > 200000 maximum"), and
// the wordings of the proxies and gateways the OpenAI path knows.
var overflowPhrases = []string{
	"prompt is too long",
	"context length",
	"context_length",
	"context window",
	"maximum context",
	"too many tokens",
}

func mentionsContextOverflow(text string) bool {
	low := strings.ToLower(text)
	for _, p := range overflowPhrases {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}

// clip returns at most n bytes of s: invalid UTF-8 replaced, cut on a
// character boundary, surrounding space trimmed.
func clip(s string, n int) string {
	text := strings.ToValidUTF8(s[:min(len(s), n)], "\uFFFD")
	for len(text) > n {
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

// unreachable reports failures of the connection itself, which a server
// that is starting or restarting produces for a moment.
func unreachable(err error) bool {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTemporary || dnsErr.IsTimeout
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}
