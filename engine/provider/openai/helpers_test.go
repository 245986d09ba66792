package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// sleeps records the waits a retry policy asked for, without waiting.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return nil
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// testConfig is a Config for base whose retries never wait and whose
// requests are counted (see sent).
func testConfig(base string, rec *sleeps) Config {
	if rec == nil {
		rec = &sleeps{}
	}
	return Config{
		BaseURL:    base,
		HTTPClient: &http.Client{Transport: &countingTransport{next: http.DefaultTransport}},
		Retry:      provider.RetryPolicy{Sleep: rec.sleep},
	}
}

// countingTransport counts the requests a provider sends.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// sent is the number of requests p has sent.
func sent(t *testing.T, p *Provider) int {
	t.Helper()
	ct, ok := p.client.Transport.(*countingTransport)
	if !ok {
		t.Fatal("provider not built by testConfig")
	}
	return int(ct.n.Load())
}

// requests returns what the scripted server recorded of p's requests,
// waiting (at most 5 s) for the server to record all p has sent.
func requests(t *testing.T, srv *scripted.Server, p *Provider) []scripted.Request {
	t.Helper()
	n := sent(t, p)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	reqs, err := srv.AwaitRequests(ctx, n)
	if err != nil || len(reqs) != n {
		t.Fatalf("server recorded %d of %d requests: %v", len(reqs), n, err)
	}
	return reqs
}

// chatRequests is requests decoded as chat requests.
func chatRequests(t *testing.T, srv *scripted.Server, p *Provider) []*scripted.ChatRequest {
	t.Helper()
	var out []*scripted.ChatRequest
	for _, r := range requests(t, srv, p) {
		if r.Chat != nil {
			out = append(out, r.Chat)
		}
	}
	return out
}

// serve starts the scripted server on script and returns it with a
// provider pointed at it.
func serve(t *testing.T, script scripted.Script) (*scripted.Server, *Provider, *sleeps) {
	t.Helper()
	if err := script.Validate(); err != nil {
		t.Fatal(err)
	}
	srv := scripted.New(script)
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	rec := &sleeps{}
	return srv, New(testConfig(base, rec)), rec
}

// fixture returns a testdata file's text.
func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// rawTurn is a script of one turn answered with body verbatim.
func rawTurn(body string) scripted.Script {
	return scripted.Script{Turns: []scripted.Turn{{RawBody: body}}}
}

// ask is a request for the scripted model's first turn.
func ask() provider.Request {
	return provider.Request{
		Model: scripted.DefaultModel,
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Content: "You are a coding agent."},
			{Role: provider.RoleUser, Content: "Fix the bug."},
		},
	}
}

// route is one canned answer of a fixture server.
type route struct {
	status int
	body   string
}

// fixtureServer answers "METHOD /path" keys with canned bodies and 404
// otherwise, counting requests per key.
func fixtureServer(t *testing.T, routes map[string]route) (origin string, hits func(key string) int) {
	t.Helper()
	var mu sync.Mutex
	count := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		mu.Lock()
		count[key]++
		mu.Unlock()
		rt, ok := routes[key]
		if !ok {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rt.status)
		_, _ = w.Write([]byte(rt.body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return count[key]
	}
}

// mustError asserts err is a *provider.Error and returns it.
func mustError(t *testing.T, err error) *provider.Error {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	pe, ok := provider.AsError(err)
	if !ok {
		t.Fatalf("error %T %v is not a *provider.Error", err, err)
	}
	return pe
}
