package anthropic

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// testKey is the key the tests' providers send.
const testKey = "sk-ant-test-0123456789"

// reply is one recorded answer the fake Messages API replays: a file from
// testdata (its extension picks the content type) or a literal body.
type reply struct {
	status int
	file   string
	body   string
	// sse sends body as an event stream.
	sse    bool
	header map[string]string
}

// seen is a request the fake API received.
type seen struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// fakeAPI replays replies in order, one per request, and records every
// request. A request past the last reply gets a 500 that names it.
type fakeAPI struct {
	t       *testing.T
	mu      sync.Mutex
	replies []reply
	reqs    []seen
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, seen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
	var rp *reply
	if len(f.replies) > 0 {
		rp = &f.replies[0]
		f.replies = f.replies[1:]
	}
	f.mu.Unlock()
	if rp == nil {
		http.Error(w, "no recorded reply left for "+r.URL.Path, http.StatusInternalServerError)
		return
	}
	data := []byte(rp.body)
	ctype := "application/json"
	if rp.sse {
		ctype = "text/event-stream"
	}
	if rp.file != "" {
		var err error
		if data, err = os.ReadFile(filepath.Join("testdata", rp.file)); err != nil {
			f.t.Errorf("fixture: %v", err)
		}
		if strings.HasSuffix(rp.file, ".sse") {
			ctype = "text/event-stream"
		}
	}
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", ctype)
	status := rp.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// requests returns what the fake API received so far.
func (f *fakeAPI) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

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

// serve starts a fake API replaying replies and a provider for it whose
// retries never wait.
func serve(t *testing.T, replies ...reply) (*fakeAPI, *Provider, *sleeps) {
	t.Helper()
	api := &fakeAPI{t: t, replies: replies}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	rec := &sleeps{}
	p := New(Config{BaseURL: srv.URL, APIKey: testKey, Retry: provider.RetryPolicy{Sleep: rec.sleep}})
	return api, p, rec
}

// ask is a small request.
func ask(stream bool) provider.Request {
	return provider.Request{
		Model:    "claude-sonnet-4-5-20250929",
		Messages: []provider.Message{{Role: provider.RoleSystem, Content: "sys"}, {Role: provider.RoleUser, Content: "fix it"}},
		Stream:   stream,
	}
}

// mustError returns err as a *provider.Error, failing the test otherwise.
func mustError(t *testing.T, err error) *provider.Error {
	t.Helper()
	pe, ok := provider.AsError(err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *provider.Error", err, err)
	}
	return pe
}

// decodeBody decodes a recorded request body.
func decodeBody(t *testing.T, s seen) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(s.body)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("request body %q: %v", s.body, err)
	}
	return m
}

// canonical re-encodes a JSON text so texts can be compared.
func canonical(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(x)
	return string(out)
}

// newHangingServer starts a server that sends headers and then nothing
// until release is closed or the client leaves.
func newHangingServer(t *testing.T, release <-chan struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// contextWithTimeout is the test's context with a deadline d away.
func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}
