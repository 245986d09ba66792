package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ServerInfo is what a model server says about itself and the model it
// serves: rows of one model label whose ServerInfo differs are two setups,
// and a summary never pools them.
type ServerInfo struct {
	// Server names the software: llama.cpp, lmstudio, ollama, vllm,
	// anthropic, or openai-compatible when nothing more could be told.
	Server  string `json:"server"`
	Version string `json:"version,omitempty"`
	// ContextLength is the context the server serves the model with (not
	// the model's trained maximum where the two differ and it says so).
	ContextLength int    `json:"context_length,omitempty"`
	Quantization  string `json:"quantization,omitempty"`
	// Slots is how many requests the server runs at once, when it says.
	Slots int `json:"slots,omitempty"`
}

// probeTimeout bounds each question a probe asks a server.
const probeTimeout = 3 * time.Second

// ProbeServer asks the server at baseURL (an OpenAI-compatible base URL,
// ending in /v1 as a run is given it) about itself and model, trying each
// dialect's own endpoint in turn: llama.cpp's /props, LM Studio's
// /api/v0/models, Ollama's /api/show, then /v1/models (vLLM's carries
// max_model_len). Nothing it learns is trusted for anything but the
// record; a server that answers none of them is "openai-compatible".
func ProbeServer(ctx context.Context, hc *http.Client, provider, baseURL, model string) ServerInfo {
	if provider == "anthropic" {
		return ServerInfo{Server: "anthropic"}
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	root := strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1")
	for _, probe := range []func(context.Context, *http.Client, string, string, string) (ServerInfo, bool){
		probeLlamaCpp, probeLMStudio, probeOllama, probeModels,
	} {
		if info, ok := probe(ctx, hc, root, strings.TrimRight(baseURL, "/"), model); ok {
			return info
		}
	}
	return ServerInfo{Server: "openai-compatible"}
}

// getJSON fetches u (POSTing body when not nil) into v; false on any
// failure, a non-2xx status or a body that is not JSON.
func getJSON(ctx context.Context, hc *http.Client, u string, body, v any) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	method, rd := http.MethodGet, io.Reader(nil)
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return false
		}
		method, rd = http.MethodPost, bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }() // read-only
	if resp.StatusCode/100 != 2 {
		return false
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v) == nil
}

// quantInName finds a GGUF quantization tag in a file or model name.
var quantInName = regexp.MustCompile(`(?i)\b(I?Q\d(?:_[A-Z0-9]+)*|F16|BF16|F32)\b`)

func probeLlamaCpp(ctx context.Context, hc *http.Client, root, _, _ string) (ServerInfo, bool) {
	var p struct {
		Settings *struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots int    `json:"total_slots"`
		ModelPath  string `json:"model_path"`
		BuildInfo  string `json:"build_info"`
	}
	if !getJSON(ctx, hc, root+"/props", nil, &p) || p.Settings == nil {
		return ServerInfo{}, false
	}
	info := ServerInfo{Server: "llama.cpp", Version: p.BuildInfo, ContextLength: p.Settings.NCtx, Slots: p.TotalSlots}
	if m := quantInName.FindString(p.ModelPath[strings.LastIndexAny(p.ModelPath, `/\`)+1:]); m != "" {
		info.Quantization = strings.ToUpper(m)
	}
	return info, true
}

func probeLMStudio(ctx context.Context, hc *http.Client, root, _, model string) (ServerInfo, bool) {
	var m struct {
		ID                  string `json:"id"`
		Quantization        string `json:"quantization"`
		MaxContextLength    int    `json:"max_context_length"`
		LoadedContextLength int    `json:"loaded_context_length"`
	}
	if !getJSON(ctx, hc, root+"/api/v0/models/"+url.PathEscape(model), nil, &m) || m.ID == "" {
		return ServerInfo{}, false
	}
	ctxLen := m.LoadedContextLength
	if ctxLen == 0 {
		ctxLen = m.MaxContextLength
	}
	return ServerInfo{Server: "lmstudio", ContextLength: ctxLen, Quantization: m.Quantization}, true
}

func probeOllama(ctx context.Context, hc *http.Client, root, _, model string) (ServerInfo, bool) {
	var v struct {
		Version string `json:"version"`
	}
	if !getJSON(ctx, hc, root+"/api/version", nil, &v) || v.Version == "" {
		return ServerInfo{}, false
	}
	info := ServerInfo{Server: "ollama", Version: v.Version}
	var show struct {
		Details struct {
			Quantization string `json:"quantization_level"`
		} `json:"details"`
		ModelInfo  map[string]any `json:"model_info"`
		Parameters string         `json:"parameters"`
	}
	if getJSON(ctx, hc, root+"/api/show", map[string]string{"model": model}, &show) {
		info.Quantization = show.Details.Quantization
		// The served context is num_ctx when the model sets it, else the
		// model's own length.
		for _, line := range strings.Split(show.Parameters, "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "num_ctx" {
				var n float64
				if _, err := fmt.Sscan(f[1], &n); err == nil && tokenCount(n) {
					info.ContextLength = int(n)
				}
			}
		}
		if info.ContextLength == 0 {
			info.ContextLength = ollamaContextLength(show.ModelInfo)
		}
	}
	return info, true
}

// ollamaContextLength is the model's own context length from Ollama's
// model_info: "<architecture>.context_length" for the architecture it
// names, else the first (by name) "<x>.context_length" of one dot, so a
// vision tower's "<x>.vision.context_length" never stands for the model
// and the answer never depends on map order; 0 when none is a count.
func ollamaContextLength(info map[string]any) int {
	if arch, ok := info["general.architecture"].(string); ok {
		if n, ok := info[arch+".context_length"].(float64); ok && tokenCount(n) {
			return int(n)
		}
	}
	keys := make([]string, 0, len(info))
	for k := range info {
		if strings.Count(k, ".") == 1 && strings.HasSuffix(k, ".context_length") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if n, ok := info[k].(float64); ok && tokenCount(n) {
			return int(n)
		}
	}
	return 0
}

// tokenCount reports whether n can be a context length: a whole number
// of tokens, at least one and at most 2^30 (no model comes near; a
// float-to-int conversion of anything larger overflows).
func tokenCount(n float64) bool {
	return n >= 1 && n <= 1<<30 && n == math.Trunc(n)
}

func probeModels(ctx context.Context, hc *http.Client, root, base, model string) (ServerInfo, bool) {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if !getJSON(ctx, hc, base+"/models", nil, &list) {
		return ServerInfo{}, false
	}
	for _, m := range list.Data {
		if m.ID != model {
			continue
		}
		if m.OwnedBy == "vllm" {
			info := ServerInfo{Server: "vllm", ContextLength: m.MaxModelLen}
			var v struct {
				Version string `json:"version"`
			}
			if getJSON(ctx, hc, root+"/version", nil, &v) {
				info.Version = v.Version
			}
			return info, true
		}
		return ServerInfo{Server: "openai-compatible", ContextLength: m.MaxModelLen}, true
	}
	return ServerInfo{}, false
}
