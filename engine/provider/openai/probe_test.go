package openai

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

func TestProbeAsksLMStudioFirstWithATwoSecondTimeout(t *testing.T) {
	rec := &deadlineRecorder{}
	cfg := testConfig("http://fake/v1", nil)
	cfg.HTTPClient = &http.Client{Transport: rec}
	if n, ok := New(cfg).ProbeContextWindow(t.Context(), "m"); ok {
		t.Fatalf("probe answered %d", n)
	}
	if len(rec.urls) == 0 || rec.urls[0] != "http://fake/api/v0/models" {
		t.Fatalf("probe URLs = %v", rec.urls)
	}
	for i, left := range rec.left {
		if left <= 1500*time.Millisecond || left > ProbeTimeout {
			t.Errorf("%s had %v left, want about 2 s", rec.urls[i], left)
		}
	}
}

func TestLMStudioProbe(t *testing.T) {
	entry := func(fields string) string {
		return `{"object":"list","data":[{"id":"other","state":"loaded","loaded_context_length":999},{"id":"m","type":"llm"` + fields + `}]}`
	}
	for name, tc := range map[string]struct {
		body string
		want int // 0: no answer
	}{
		"loaded":                  {entry(`,"state":"loaded","max_context_length":131072,"loaded_context_length":16384`), 16384},
		"no state key":            {entry(`,"loaded_context_length":4096`), 4096},
		"not loaded":              {entry(`,"state":"not-loaded","loaded_context_length":4096`), 0},
		"state null":              {entry(`,"state":null,"loaded_context_length":4096`), 0},
		"only max_context_length": {entry(`,"state":"loaded","max_context_length":131072`), 0},
		"length a string":         {entry(`,"state":"loaded","loaded_context_length":"65536"`), 0},
		"length a boolean":        {entry(`,"state":"loaded","loaded_context_length":true`), 0},
		"length fractional":       {entry(`,"state":"loaded","loaded_context_length":65536.0`), 0},
		"length zero":             {entry(`,"state":"loaded","loaded_context_length":0`), 0},
		"length negative":         {entry(`,"state":"loaded","loaded_context_length":-1`), 0},
		"model absent":            {`{"data":[{"id":"other","state":"loaded","loaded_context_length":999}]}`, 0},
		"data not a list":         {`{"data":{"id":"m"}}`, 0},
		"not JSON":                {`nope`, 0},
	} {
		t.Run(name, func(t *testing.T) {
			origin, _ := fixtureServer(t, map[string]route{"GET /api/v0/models": {200, tc.body}})
			n, ok := New(testConfig(origin+"/v1", nil)).ProbeContextWindow(t.Context(), "m")
			if ok != (tc.want > 0) || n != tc.want {
				t.Fatalf("probe = %d, %v; want %d", n, ok, tc.want)
			}
		})
	}
}

func TestLMStudioProbeFixture(t *testing.T) {
	origin, _ := fixtureServer(t, map[string]route{"GET /api/v0/models": {200, fixture(t, "lmstudio_api_v0_models.json")}})
	p := New(testConfig(origin+"/v1", nil))
	w, ok := p.ProbeServedWindow(t.Context(), "qwen/qwen3-coder-next")
	want := provider.ServedWindow{Tokens: 65536, Server: "lmstudio", Reported: true, ModelMax: 262144}
	if !ok || w != want {
		t.Fatalf("window = %+v, %v", w, ok)
	}
	if _, ok := p.ProbeContextWindow(t.Context(), "mistralai/devstral-small-2-2512"); ok {
		t.Fatal("a model that is not loaded answered")
	}
}

func TestScriptedServerProbe(t *testing.T) {
	_, p, _ := serve(t, scripted.Script{ContextLength: 12288})
	if n, ok := p.ProbeContextWindow(t.Context(), scripted.DefaultModel); !ok || n != 12288 {
		t.Fatalf("probe = %d, %v", n, ok)
	}
}

func TestOllamaProbe(t *testing.T) {
	const model = "qwen3-coder:30b"
	for name, tc := range map[string]struct {
		routes map[string]route
		model  string
		want   provider.ServedWindow
	}{
		"loaded: the running context length": {
			map[string]route{
				"GET /api/ps":    {200, fixture(t, "ollama_ps.json")},
				"POST /api/show": {200, fixture(t, "ollama_show_default.json")},
			},
			model,
			provider.ServedWindow{Tokens: 16384, Server: "ollama", Reported: true, ModelMax: 262144},
		},
		"bare name matches the latest tag": {
			map[string]route{
				"GET /api/ps":    {200, `{"models":[{"name":"devstral:latest","model":"devstral:latest","context_length":8192}]}`},
				"POST /api/show": {200, fixture(t, "ollama_show_default.json")},
			},
			"devstral",
			provider.ServedWindow{Tokens: 8192, Server: "ollama", Reported: true, ModelMax: 262144},
		},
		"not loaded: num_ctx from the parameters": {
			map[string]route{
				"GET /api/ps":    {200, fixture(t, "ollama_ps_empty.json")},
				"POST /api/show": {200, fixture(t, "ollama_show_num_ctx.json")},
			},
			"qwen2.5-coder:7b",
			provider.ServedWindow{Tokens: 32768, Server: "ollama", Reported: true, ModelMax: 32768},
		},
		"no num_ctx: Ollama's default, unreported": {
			map[string]route{
				"GET /api/ps":    {200, fixture(t, "ollama_ps_empty.json")},
				"POST /api/show": {200, fixture(t, "ollama_show_default.json")},
			},
			model,
			provider.ServedWindow{Tokens: 4096, Server: "ollama", ModelMax: 262144},
		},
		"old Ollama without /api/ps": {
			map[string]route{"POST /api/show": {200, fixture(t, "ollama_show_num_ctx.json")}},
			"qwen2.5-coder:7b",
			provider.ServedWindow{Tokens: 32768, Server: "ollama", Reported: true, ModelMax: 32768},
		},
	} {
		t.Run(name, func(t *testing.T) {
			origin, _ := fixtureServer(t, tc.routes)
			p := New(testConfig(origin+"/v1", nil))
			w, ok := p.ProbeServedWindow(t.Context(), tc.model)
			if !ok || w != tc.want {
				t.Fatalf("window = %+v, %v; want %+v", w, ok, tc.want)
			}
			n, ok := p.ProbeContextWindow(t.Context(), tc.model)
			if ok != tc.want.Reported || (ok && n != tc.want.Tokens) {
				t.Fatalf("context window = %d, %v", n, ok)
			}
		})
	}
}

func TestOllamaShowRequest(t *testing.T) {
	var mu sync.Mutex
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/api/show" {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = string(body)
			mu.Unlock()
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	New(testConfig(srv.URL+"/v1", nil)).ProbeServedWindow(t.Context(), "qwen3-coder:30b")
	mu.Lock()
	defer mu.Unlock()
	if got != `{"model":"qwen3-coder:30b"}` {
		t.Fatalf("/api/show body = %q", got)
	}
}

func TestLlamaCppAndVLLMProbes(t *testing.T) {
	for name, tc := range map[string]struct {
		routes map[string]route
		want   provider.ServedWindow
	}{
		"llama.cpp": {
			map[string]route{"GET /props": {200, fixture(t, "llamacpp_props.json")}},
			provider.ServedWindow{Tokens: 8192, Server: "llama.cpp", Reported: true},
		},
		"vllm": {
			map[string]route{"GET /v1/models": {200, fixture(t, "vllm_models.json")}},
			provider.ServedWindow{Tokens: 65536, Server: "vllm", Reported: true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			origin, _ := fixtureServer(t, tc.routes)
			w, ok := New(testConfig(origin+"/v1", nil)).ProbeServedWindow(t.Context(), "Qwen/Qwen3-Coder-30B-A3B-Instruct")
			if !ok || w != tc.want {
				t.Fatalf("window = %+v, %v", w, ok)
			}
		})
	}
}

func TestProbeAsksOncePerModel(t *testing.T) {
	origin, hits := fixtureServer(t, map[string]route{"GET /api/v0/models": {200, fixture(t, "lmstudio_api_v0_models.json")}})
	p := New(testConfig(origin+"/v1", nil))
	for range 3 {
		if n, ok := p.ProbeContextWindow(t.Context(), "qwen/qwen3-coder-next"); !ok || n != 65536 {
			t.Fatalf("probe = %d, %v", n, ok)
		}
	}
	if _, ok := p.ProbeServedWindow(t.Context(), "qwen/qwen3-coder-next"); !ok {
		t.Fatal("served window forgotten")
	}
	if n := hits("GET /api/v0/models"); n != 1 {
		t.Fatalf("asked %d times", n)
	}
}

func TestProbeStopsAtAServerThatHangs(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	start := time.Now()
	if _, ok := New(testConfig(srv.URL+"/v1", nil)).ProbeServedWindow(t.Context(), "m"); ok {
		t.Fatal("a hanging server answered")
	}
	// The server holds the request until the test ends: returning at
	// all is ProbeTimeout's doing (a liveness bound, not speed).
	if elapsed := time.Since(start); elapsed > ProbeTimeout+30*time.Second {
		t.Fatalf("probing took %v", elapsed)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 {
		t.Fatalf("asked %v after the first probe timed out", asked)
	}
}

// failingTransport fails every request with err, recording the URLs.
type failingTransport struct {
	err  error
	urls []string
}

func (f *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.urls = append(f.urls, r.URL.String())
	return nil, f.err
}

func TestProbeStopsAtAnUnreachableServer(t *testing.T) {
	for _, tc := range []struct {
		err  error
		asks int
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, 1},
		// Not a connection failure: every kind of server is still asked.
		{errRecorded, 5},
	} {
		ft := &failingTransport{err: tc.err}
		cfg := testConfig("http://fake:1234/v1", nil)
		cfg.HTTPClient = &http.Client{Transport: ft}
		if _, ok := New(cfg).ProbeServedWindow(t.Context(), "m"); ok {
			t.Fatal("a failing server answered")
		}
		if len(ft.urls) != tc.asks {
			t.Errorf("%v: asked %v", tc.err, ft.urls)
		}
	}
}
