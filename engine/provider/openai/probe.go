package openai

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// probeResult is a remembered probe answer.
type probeResult struct {
	window provider.ServedWindow
	ok     bool
}

// windowProbe asks one kind of server for its served window. ok says the
// server answered with a window; err only decides whether probing goes on.
type windowProbe func(ctx context.Context, model string) (w provider.ServedWindow, ok bool, err error)

// ProbeContextWindow returns the window the server says it serves model
// with (E-54's provider:openai:server): LM Studio's loaded_context_length
// (E-59), Ollama's running context length or num_ctx, llama.cpp's n_ctx,
// vLLM's max_model_len. A default the server does not state (Ollama's
// 4096) is not an answer here; ProbeServedWindow reports it.
func (p *Provider) ProbeContextWindow(ctx context.Context, model string) (int, bool) {
	w, ok := p.ProbeServedWindow(ctx, model)
	if !ok || !w.Reported {
		return 0, false
	}
	return w.Tokens, true
}

// ProbeServedWindow returns the window the server serves model with,
// including Ollama's unstated default, so the engine can warn before a
// server silently truncates prompts. Servers are asked once per model per
// provider, each request bounded by ProbeTimeout; every failure just means
// no answer.
func (p *Provider) ProbeServedWindow(ctx context.Context, model string) (provider.ServedWindow, bool) {
	p.probeMu.Lock()
	defer p.probeMu.Unlock()
	if r, ok := p.probed[model]; ok {
		return r.window, r.ok
	}
	var r probeResult
	for _, probe := range []windowProbe{p.probeLMStudio, p.probeOllama, p.probeLlamaCpp, p.probeVLLM} {
		w, ok, err := probe(ctx, model)
		if ok {
			r = probeResult{window: w, ok: true}
			break
		}
		// A server that could not be reached or let a probe time out will
		// do the same to the next one; only an answer (even a 404) is
		// worth following up.
		if pe, isPE := provider.AsError(err); (isPE && pe.StatusCode == 0 && (pe.Timeout || pe.Transient)) || ctx.Err() != nil {
			break
		}
	}
	p.probed[model] = r
	return r.window, r.ok
}

// probeOrigin GETs path on the server's origin (not under /v1) and returns
// the JSON object it answers, empty when the answer is no object.
func (p *Provider) probeOrigin(ctx context.Context, path string) (map[string]any, error) {
	origin, err := p.origin()
	if err != nil {
		return nil, err
	}
	v, err := p.probeJSON(ctx, origin+path, nil)
	if err != nil {
		return nil, err
	}
	top, _ := object(v)
	return top, nil
}

// probeJSON sends one probe request (GET, or POST when body is set) to
// target and decodes the answer.
func (p *Provider) probeJSON(ctx context.Context, target string, body any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	method := http.MethodGet
	var data []byte
	if body != nil {
		method = http.MethodPost
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	raw, err := p.fetch(ctx, method, target, data)
	if err != nil {
		return nil, err
	}
	return decodeJSON(raw)
}

// findByID returns the first object in list whose key equals id.
func findByID(list []any, key, id string) (map[string]any, bool) {
	for _, e := range list {
		if entry, ok := object(e); ok && entry[key] == id {
			return entry, true
		}
	}
	return nil, false
}
