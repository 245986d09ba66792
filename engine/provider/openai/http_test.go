package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

func TestDripFedBodyFailsOnTime(t *testing.T) {
	_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{
		RawBody: completionWith(`{"role":"assistant","content":"a reply that takes forever"}`, `"stop"`, `{}`),
		DripMS:  500,
	}}})
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := p.Chat(ctx, ask())
	elapsed := time.Since(start)
	pe := mustError(t, err)
	if !pe.Timeout || pe.Transient || !errors.Is(err, context.DeadlineExceeded) ||
		pe.Error() != "request to "+p.BaseURL()+"/chat/completions timed out" {
		t.Fatalf("error = %+v", pe)
	}
	// The body drips a byte every half second and would take minutes:
	// ending within 30 s is the deadline's doing (a liveness bound).
	if elapsed >= 30*time.Second {
		t.Fatalf("a 1 s deadline took %v against a drip-fed body", elapsed)
	}
	if n := sent(t, p); n != 1 {
		t.Fatalf("a timeout was retried: %d requests", n)
	}
}

func TestErrorBodyIsClippedTo500Bytes(t *testing.T) {
	body := strings.Repeat("é", 400) // 800 bytes of two-byte characters
	srv, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{
		Errors: []scripted.HTTPError{{Status: http.StatusForbidden, Body: body}},
	}}})
	_, err := p.Chat(t.Context(), ask())
	pe := mustError(t, err)
	prefix := "HTTP 403 on " + p.BaseURL() + "/chat/completions: "
	if !strings.HasPrefix(pe.Error(), prefix) {
		t.Fatalf("message %q lacks prefix %q", pe.Error(), prefix)
	}
	if shown := strings.TrimPrefix(pe.Error(), prefix); shown != strings.Repeat("é", 250) {
		t.Fatalf("shown body has %d bytes: %q", len(shown), shown)
	}
	if pe.StatusCode != 403 || pe.Transient || pe.ContextOverflow || len(requests(t, srv, p)) != 1 {
		t.Fatalf("error = %+v after %d requests", pe, sent(t, p))
	}
}

// countingBody counts the bytes read from an endless body.
type countingBody struct{ n int }

func (c *countingBody) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 'x'
	}
	c.n += len(b)
	return len(b), nil
}

func (c *countingBody) Close() error { return nil }

func TestErrorBodyReadIsBounded(t *testing.T) {
	body := &countingBody{}
	resp := &http.Response{StatusCode: 502, Header: http.Header{}, Body: body}
	pe := statusError(resp, "http://h/v1/chat/completions")
	if body.n > errorBodyRead {
		t.Fatalf("read %d bytes of an endless error body", body.n)
	}
	if got := len(strings.TrimPrefix(pe.Error(), "HTTP 502 on http://h/v1/chat/completions: ")); got != errorBodyShown {
		t.Fatalf("message shows %d bytes", got)
	}
}

func TestExplicitEmptyBaseURLIsKept(t *testing.T) {
	if got := DefaultConfig().BaseURL; got != "http://localhost:1234/v1" {
		t.Fatalf("default base URL = %q", got)
	}
	p := New(Config{BaseURL: ""})
	if p.BaseURL() != "" {
		t.Fatalf("base URL = %q", p.BaseURL())
	}
	_, err := p.ListModels(t.Context())
	pe := mustError(t, err)
	if !errors.Is(err, ErrBadBaseURL) || !strings.Contains(pe.Error(), `invalid base URL ""`) {
		t.Fatalf("list models: %v", err)
	}
	_, err = p.Chat(t.Context(), ask())
	if !errors.Is(err, ErrBadBaseURL) {
		t.Fatalf("chat: %v", err)
	}
	if _, ok := p.ProbeContextWindow(t.Context(), "m"); ok {
		t.Fatal("probe answered without a base URL")
	}
}

func TestResponseLargerThan64MiBFails(t *testing.T) {
	_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{Text: "hi", PadBytes: MaxResponseBytes}}})
	_, err := p.Chat(t.Context(), ask())
	pe := mustError(t, err)
	if !errors.Is(err, errResponseTooLarge) || pe.Transient || pe.Malformed || !strings.Contains(pe.Error(), "64 MiB") {
		t.Fatalf("error = %+v", pe)
	}
}

func TestCappedBodyAllowsExactlyTheLimit(t *testing.T) {
	for _, tc := range []struct {
		body string
		err  error
	}{{"0123456789", nil}, {"0123456789a", errResponseTooLarge}} {
		c := &cappedBody{rc: io.NopCloser(strings.NewReader(tc.body)), left: 10}
		data, err := io.ReadAll(c)
		if !errors.Is(err, tc.err) {
			t.Errorf("%d-byte body: %v", len(tc.body), err)
		}
		if tc.err == nil && string(data) != tc.body {
			t.Errorf("read %q", data)
		}
	}
}

func TestUnreachableServerIsTransient(t *testing.T) {
	rec := &sleeps{}
	// Port 1 on loopback refuses connections.
	p := New(testConfig("http://127.0.0.1:1/v1", rec))
	_, err := p.Chat(t.Context(), ask())
	pe := mustError(t, err)
	if !pe.Transient || pe.Timeout || !strings.HasPrefix(pe.Error(), "cannot reach http://127.0.0.1:1/v1/chat/completions: ") {
		t.Fatalf("error = %+v", pe)
	}
	if got := len(rec.all()); got != 2 {
		t.Fatalf("%d waits between tries, want 2 (3 tries)", got)
	}
}

func TestSlowServerTimesOutWithoutRetry(t *testing.T) {
	_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{Text: "late", DelayMS: 10_000}}})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := p.Chat(ctx, ask())
	pe := mustError(t, err)
	if !pe.Timeout || provider.Retryable(err) {
		t.Fatalf("error = %+v", pe)
	}
	if n := sent(t, p); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestCancelledIsNotFailed(t *testing.T) {
	_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{Text: "late", DelayMS: 10_000}}})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := p.Chat(ctx, ask())
	pe := mustError(t, err)
	if !errors.Is(err, context.Canceled) || pe.Timeout || pe.Transient || !strings.HasSuffix(pe.Error(), " was cancelled") {
		t.Fatalf("error = %+v", pe)
	}
}
