package bench

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// dialect serves the given paths with JSON bodies; everything else is 404.
func dialect(t *testing.T, routes map[string]any) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := routes[r.Method+" "+r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestProbeServerDialects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		routes map[string]any
		want   ServerInfo
	}{
		{"llama.cpp", map[string]any{
			"GET /props": map[string]any{
				"default_generation_settings": map[string]any{"n_ctx": 16384},
				"total_slots":                 4, "build_info": "b5000-abc", "model_path": "/models/qwen2.5-coder-7b-instruct-q4_k_m.gguf",
			},
		}, ServerInfo{Server: "llama.cpp", Version: "b5000-abc", ContextLength: 16384, Quantization: "Q4_K_M", Slots: 4}},
		{"lmstudio", map[string]any{
			"GET /api/v0/models/qwen": map[string]any{"id": "qwen", "quantization": "Q8_0", "max_context_length": 32768, "loaded_context_length": 8192},
		}, ServerInfo{Server: "lmstudio", ContextLength: 8192, Quantization: "Q8_0"}},
		{"ollama", map[string]any{
			"GET /api/version": map[string]any{"version": "0.9.0"},
			"POST /api/show": map[string]any{
				"details":    map[string]any{"quantization_level": "Q4_0"},
				"model_info": map[string]any{"qwen2.context_length": 32768},
				"parameters": "stop \"<|im_end|>\"\nnum_ctx 8192",
			},
		}, ServerInfo{Server: "ollama", Version: "0.9.0", ContextLength: 8192, Quantization: "Q4_0"}},
		// Without num_ctx, the model's own length: the architecture's, never
		// a vision tower's, whatever the map order; a length no model has
		// (too large to be an int, negative, fractional) is unknown.
		{"ollama without num_ctx", map[string]any{
			"GET /api/version": map[string]any{"version": "0.9.0"},
			"POST /api/show": map[string]any{
				"model_info": map[string]any{
					"general.architecture": "gemma3", "gemma3.vision.context_length": 4096, "gemma3.context_length": 131072,
					"a.context_length": 2048,
				},
				"parameters": "num_ctx -3.5",
			},
		}, ServerInfo{Server: "ollama", Version: "0.9.0", ContextLength: 131072}},
		{"ollama by name", map[string]any{
			"GET /api/version": map[string]any{"version": "0.9.0"},
			"POST /api/show": map[string]any{
				"model_info": map[string]any{"b.context_length": 4096, "a.context_length": 1e300, "c.vision.context_length": 512},
			},
		}, ServerInfo{Server: "ollama", Version: "0.9.0", ContextLength: 4096}},
		{"vllm", map[string]any{
			"GET /v1/models": map[string]any{"data": []any{map[string]any{"id": "qwen", "owned_by": "vllm", "max_model_len": 32768}}},
			"GET /version":   map[string]any{"version": "0.8.5"},
		}, ServerInfo{Server: "vllm", Version: "0.8.5", ContextLength: 32768}},
		{"other", map[string]any{
			"GET /v1/models": map[string]any{"data": []any{map[string]any{"id": "qwen", "owned_by": "me"}}},
		}, ServerInfo{Server: "openai-compatible"}},
		{"nothing answers", map[string]any{}, ServerInfo{Server: "openai-compatible"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ProbeServer(t.Context(), nil, "openai", dialect(t, tt.routes), "qwen")
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := ProbeServer(t.Context(), nil, "anthropic", "http://127.0.0.1:1", "claude"); got.Server != "anthropic" {
		t.Fatalf("anthropic: %+v", got)
	}
}
