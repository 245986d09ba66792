package anthropic

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider"
)

func TestListModels(t *testing.T) {
	t.Parallel()
	api, p, _ := serve(t, reply{file: "models.json"})
	ids, err := p.ListModels(t.Context())
	if err != nil || !reflect.DeepEqual(ids, []string{"claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"}) {
		t.Fatalf("ids %v, %v", ids, err)
	}
	r := api.requests()[0]
	if r.method != "GET" || r.path != "/v1/models" || r.header.Get("X-Api-Key") != testKey || r.header.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("request %s %s %v", r.method, r.path, r.header)
	}
}

// TestListModelsPages: every page is read, so a model past the first
// page is found.
func TestListModelsPages(t *testing.T) {
	t.Parallel()
	api, p, _ := serve(t, reply{file: "models_page1.json"}, reply{file: "models_page2.json"})
	ids, err := p.ListModels(t.Context())
	if err != nil || !reflect.DeepEqual(ids, []string{"claude-opus-4-1-20250805", "claude-3-5-haiku-20241022"}) {
		t.Fatalf("ids %v, %v", ids, err)
	}
	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	q, _ := url.ParseQuery(reqs[1].query)
	if q.Get("after_id") != "claude-opus-4-1-20250805" || q.Get("limit") != "1000" {
		t.Errorf("second page asked with %q", reqs[1].query)
	}
}

func TestListModelsMalformed(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"data": 5}`:    "malformed model list from ",
		`{"models": []}`: "(no data list)",
		`{"data": [{"id": 3}], "has_more": false}`: "(data[0] has no string id)",
	} {
		_, p, _ := serve(t, reply{body: body})
		_, err := p.ListModels(t.Context())
		if pe := mustError(t, err); !pe.Malformed || !strings.Contains(pe.Error(), want) {
			t.Errorf("%s: %v", body, pe)
		}
	}
	_, p, _ := serve(t, reply{status: http.StatusUnauthorized, file: "unauthorized.json"})
	_, err := p.ListModels(t.Context())
	if pe := mustError(t, err); pe.StatusCode != 401 || !strings.Contains(pe.Error(), "invalid x-api-key") {
		t.Errorf("401: %v", pe)
	}
}

// TestMissingKey: without a key nothing is sent, and the error says which
// variable to set (E-60).
func TestMissingKey(t *testing.T) {
	t.Parallel()
	api, _, _ := serve(t, reply{file: "models.json"}, reply{file: "text.json"})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	p := New(Config{BaseURL: srv.URL})
	_, lerr := p.ListModels(t.Context())
	_, cerr := p.Chat(t.Context(), ask(true))
	for _, err := range []error{lerr, cerr} {
		if pe := mustError(t, err); pe.Error() != "ANTHROPIC_API_KEY is not set" || !errors.Is(err, ErrNoKey) || pe.Transient {
			t.Errorf("error %+v", pe)
		}
	}
	if n := requestCount(api); n != 0 {
		t.Errorf("%d requests sent without a key", n)
	}
}

func TestBadBaseURL(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "api.anthropic.com", "ftp://api.anthropic.com", "http://"} {
		p := New(Config{BaseURL: base, APIKey: testKey})
		_, err := p.Chat(t.Context(), ask(false))
		if pe := mustError(t, err); !errors.Is(err, ErrBadBaseURL) || !strings.Contains(pe.Error(), "invalid base URL") {
			t.Errorf("%q: %v", base, err)
		}
		if p.BaseURL() != base {
			t.Errorf("base URL %q kept as %q", base, p.BaseURL())
		}
	}
}

// TestKeyGoesOnlyToTheBaseURL: the key reaches the configured server and
// nothing else: a redirect elsewhere is not followed (Go would carry
// x-api-key along), even with a client that would follow it, and the
// SDK's environment (ANTHROPIC_BASE_URL) changes nothing.
func TestKeyGoesOnlyToTheBaseURL(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	elsewhere := &fakeAPI{t: t, replies: []reply{{file: "text.json"}}}
	other := httptest.NewServer(elsewhere)
	t.Cleanup(other.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != testKey {
			t.Errorf("the configured server got key %q", r.Header.Get("X-Api-Key"))
		}
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	follows := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	p := New(Config{BaseURL: redirector.URL, APIKey: testKey, HTTPClient: follows, Retry: provider.RetryPolicy{Attempts: 1}})
	_, err := p.Chat(t.Context(), ask(false))
	if pe := mustError(t, err); pe.Transient || !strings.Contains(pe.Error(), "outside the configured base URL") {
		t.Errorf("redirect: %v", pe)
	}
	if n := requestCount(elsewhere); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
	if follows.CheckRedirect == nil {
		t.Error("the caller's client was changed")
	}

	// A request the SDK would build for another origin never leaves.
	called := false
	req, _ := http.NewRequest(http.MethodGet, other.URL+"/v1/models", nil)
	resp, err := p.guard(req, func(*http.Request) (*http.Response, error) { called = true; return nil, nil })
	if resp != nil {
		_ = resp.Body.Close()
	}
	if !errors.Is(err, errOffBase) || called {
		t.Errorf("off-base request: %v, sent %v", err, called)
	}
}

func TestFiniteBody(t *testing.T) {
	t.Parallel()
	in := "{\"a\": NaN, \"b\": [Infinity, -Infinity], \"s\": \"NaN \\\" Infinity\"}\n" +
		"data: {\"usage\":{\"output_tokens\":NaN}}\n\nno literal here\nlast NaN"
	want := "{\"a\": null, \"b\": [null, null], \"s\": \"NaN \\\" Infinity\"}\n" +
		"data: {\"usage\":{\"output_tokens\":null}}\n\nno literal here\nlast null"
	for _, size := range []int{1, 3, 4096} {
		fb := newFiniteBody(io.NopCloser(strings.NewReader(in)))
		var out bytes.Buffer
		buf := make([]byte, size)
		for {
			n, err := fb.Read(buf)
			out.Write(buf[:n])
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if out.String() != want {
			t.Errorf("read by %d:\n got %q\nwant %q", size, out.String(), want)
		}
	}
}

func TestCappedBody(t *testing.T) {
	t.Parallel()
	exact := &cappedBody{rc: io.NopCloser(strings.NewReader("12345")), left: 5}
	if data, err := io.ReadAll(exact); err != nil || string(data) != "12345" {
		t.Errorf("at the limit: %q %v", data, err)
	}
	over := &cappedBody{rc: io.NopCloser(strings.NewReader("123456")), left: 5}
	if _, err := io.ReadAll(over); !errors.Is(err, errResponseTooLarge) {
		t.Errorf("past the limit: %v", err)
	}
}
