package anthropic

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// requestCount is the number of requests the fake API received.
func requestCount(api *fakeAPI) int { return len(api.requests()) }

// TestOverloadedIsRetried: an overloaded_error event in a stream, then a
// 529, then a good stream: the reply comes back, after the OpenAI path's
// waits.
func TestOverloadedIsRetried(t *testing.T) {
	t.Parallel()
	api, p, rec := serve(t,
		reply{file: "overloaded.sse"},
		reply{status: 529, file: "overloaded_529.json"},
		reply{file: "text.sse"},
	)
	resp, err := p.Chat(t.Context(), ask(true))
	if err != nil || resp.Text != "Done: the off-by-one in pager.py is fixed." {
		t.Fatalf("chat: %v %+v", err, resp)
	}
	if n := requestCount(api); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if got := rec.all(); !reflect.DeepEqual(got, []time.Duration{time.Second, 2 * time.Second}) {
		t.Errorf("waits = %v", got)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	api, p, rec := serve(t,
		reply{status: http.StatusTooManyRequests, file: "rate_limit_429.json", header: map[string]string{"Retry-After": "7"}},
		reply{file: "text.json"},
	)
	if _, err := p.Chat(t.Context(), ask(false)); err != nil {
		t.Fatal(err)
	}
	if got := rec.all(); !reflect.DeepEqual(got, []time.Duration{7 * time.Second}) || requestCount(api) != 2 {
		t.Errorf("waits = %v after %d requests", got, requestCount(api))
	}
}

func TestRetriesStopAfterThreeTries(t *testing.T) {
	t.Parallel()
	api, p, _ := serve(t,
		reply{status: 529, file: "overloaded_529.json"},
		reply{status: 500, body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`},
		reply{status: 529, file: "overloaded_529.json"},
		reply{file: "text.json"},
	)
	_, err := p.Chat(t.Context(), ask(false))
	pe := mustError(t, err)
	var se *HTTPStatusError
	if pe.StatusCode != 529 || !pe.Transient || !errors.As(err, &se) || se.Type != "overloaded_error" ||
		!strings.HasPrefix(pe.Error(), "HTTP 529 on "+p.BaseURL()+"/v1/messages: {\"type\":\"error\"") {
		t.Fatalf("error %+v (%q)", pe, pe.Error())
	}
	if n := requestCount(api); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// TestStreamErrorsGiveUp: an overloaded stream every time ends in the
// stream's error, transient, after three tries.
func TestStreamErrorsGiveUp(t *testing.T) {
	t.Parallel()
	api, p, _ := serve(t, reply{file: "overloaded.sse"}, reply{file: "overloaded.sse"}, reply{file: "overloaded.sse"})
	_, err := p.Chat(t.Context(), ask(true))
	pe := mustError(t, err)
	if !pe.Transient || pe.Error() != "error in the stream from "+p.BaseURL()+"/v1/messages: Overloaded" || requestCount(api) != 3 {
		t.Fatalf("error %+v (%q) after %d requests", pe, pe.Error(), requestCount(api))
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		file   string
	}{{http.StatusBadRequest, "invalid_request.json"}, {http.StatusUnauthorized, "unauthorized.json"}, {http.StatusNotFound, ""}} {
		api, p, rec := serve(t, reply{status: tc.status, file: tc.file, body: `{"type":"error","error":{"type":"not_found_error","message":"model: nope"}}`}, reply{file: "text.json"})
		_, err := p.Chat(t.Context(), ask(true))
		pe := mustError(t, err)
		if pe.Transient || pe.ContextOverflow || pe.StatusCode != tc.status || requestCount(api) != 1 || len(rec.all()) != 0 {
			t.Errorf("HTTP %d: %+v after %d requests", tc.status, pe, requestCount(api))
		}
	}
}

// TestContextOverflow: Anthropic's 400 for a prompt over the window is a
// context overflow, the class the OpenAI path gives a server's overflow,
// and it is not retried.
func TestContextOverflow(t *testing.T) {
	t.Parallel()
	api, p, _ := serve(t, reply{status: http.StatusBadRequest, file: "context_overflow.json"}, reply{file: "text.json"})
	_, err := p.Chat(t.Context(), ask(true))
	pe := mustError(t, err)
	if !pe.ContextOverflow || pe.Transient || provider.Retryable(err) || pe.StatusCode != 400 ||
		!strings.Contains(pe.Error(), "prompt is too long: 215442 tokens > 200000 maximum") {
		t.Fatalf("error %+v", pe)
	}
	if n := requestCount(api); n != 1 {
		t.Errorf("%d requests", n)
	}
}

// TestUnreachableIsRetried: connection refused is transient (the server
// may be starting); it is retried and then reported naming the URL.
func TestUnreachableIsRetried(t *testing.T) {
	t.Parallel()
	rec := &sleeps{}
	p := New(Config{BaseURL: "http://127.0.0.1:1", APIKey: testKey, Retry: provider.RetryPolicy{Sleep: rec.sleep}})
	_, err := p.Chat(t.Context(), ask(true))
	pe := mustError(t, err)
	if !pe.Transient || !strings.HasPrefix(pe.Error(), "cannot reach http://127.0.0.1:1/v1/messages: ") || len(rec.all()) != 2 {
		t.Fatalf("error %+v, waits %v", pe, rec.all())
	}
}

// TestTimeout: a server that never answers fails when the call's context
// ends, as a timeout, not after the SDK's own ten minutes.
func TestTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newHangingServer(t, release)
	p := New(Config{BaseURL: srv, APIKey: testKey})
	for _, stream := range []bool{false, true} {
		ctx, cancel := contextWithTimeout(t, 300*time.Millisecond)
		start := time.Now()
		_, err := p.Chat(ctx, ask(stream))
		cancel()
		pe := mustError(t, err)
		if !pe.Timeout || time.Since(start) > 10*time.Second {
			t.Errorf("stream %v: %+v after %v", stream, pe, time.Since(start))
		}
	}
	close(release)
}
