package openai

import (
	"context"
	"strconv"
	"strings"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// ollamaDefaultContext is the num_ctx Ollama serves a model with when
// neither its Modelfile nor the request sets one.
const ollamaDefaultContext = 4096

// probeLMStudio follows E-59: GET <origin>/api/v0/models, the first entry
// whose id is model; a "state" key, when present, must be "loaded"; the
// window is loaded_context_length when it is a positive integer, never
// max_context_length (what the model could take, not what is loaded).
func (p *Provider) probeLMStudio(ctx context.Context, model string) (provider.ServedWindow, bool, error) {
	top, err := p.probeOrigin(ctx, "/api/v0/models")
	if err != nil {
		return provider.ServedWindow{}, false, err
	}
	list, _ := top["data"].([]any)
	entry, found := findByID(list, "id", model)
	if !found {
		return provider.ServedWindow{}, false, nil
	}
	if state, has := entry["state"]; has && state != "loaded" {
		return provider.ServedWindow{}, false, nil
	}
	n, ok := positiveInt(entry["loaded_context_length"])
	if !ok {
		return provider.ServedWindow{}, false, nil
	}
	trained, _ := positiveInt(entry["max_context_length"])
	return provider.ServedWindow{Tokens: n, Server: "lmstudio", Reported: true, ModelMax: trained}, true, nil
}

// probeOllama asks Ollama's native API. A loaded model's window is in
// GET /api/ps (context_length); otherwise the model serves with the
// num_ctx of its parameters, or Ollama's default when none is set. The
// model's trained length comes from POST /api/show
// (model_info["<arch>.context_length"]).
func (p *Provider) probeOllama(ctx context.Context, model string) (provider.ServedWindow, bool, error) {
	origin, err := p.origin()
	if err != nil {
		return provider.ServedWindow{}, false, err
	}
	running, isOllama, err := p.ollamaRunning(ctx, origin, model)
	if pe, ok := provider.AsError(err); ok && pe.Timeout {
		return provider.ServedWindow{}, false, err
	}
	show, shown, err := p.ollamaShow(ctx, origin, model)
	if !isOllama && !shown {
		return provider.ServedWindow{}, false, err
	}
	w := provider.ServedWindow{Server: "ollama", ModelMax: show.trained}
	switch {
	case running > 0:
		w.Tokens, w.Reported = running, true
	case show.numCtx > 0:
		w.Tokens, w.Reported = show.numCtx, true
	default:
		w.Tokens = ollamaDefaultContext
	}
	return w, true, nil
}

// ollamaRunning reads GET /api/ps: the context length of model if it is
// loaded, and whether the server answered like Ollama at all.
func (p *Provider) ollamaRunning(ctx context.Context, origin, model string) (int, bool, error) {
	v, err := p.probeJSON(ctx, origin+"/api/ps", nil)
	if err != nil {
		return 0, false, err
	}
	top, _ := object(v)
	list, isOllama := top["models"].([]any)
	if !isOllama {
		return 0, false, nil
	}
	for _, name := range ollamaNames(model) {
		for _, key := range []string{"model", "name"} {
			if entry, ok := findByID(list, key, name); ok {
				n, _ := positiveInt(entry["context_length"])
				return n, true, nil
			}
		}
	}
	return 0, true, nil
}

// ollamaShowInfo is what /api/show says about a model's window.
type ollamaShowInfo struct {
	numCtx  int
	trained int
}

// ollamaShow reads POST /api/show; shown says the answer looked like
// Ollama's.
func (p *Provider) ollamaShow(ctx context.Context, origin, model string) (ollamaShowInfo, bool, error) {
	v, err := p.probeJSON(ctx, origin+"/api/show", map[string]string{"model": model})
	if err != nil {
		return ollamaShowInfo{}, false, err
	}
	top, _ := object(v)
	info, hasInfo := object(top["model_info"])
	params, hasParams := top["parameters"].(string)
	_, hasModelfile := top["modelfile"].(string)
	if !hasInfo && !hasParams && !hasModelfile {
		return ollamaShowInfo{}, false, nil
	}
	var out ollamaShowInfo
	if arch, ok := nonEmptyString(info["general.architecture"]); ok {
		out.trained, _ = positiveInt(info[arch+".context_length"])
	}
	for line := range strings.Lines(params) {
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == "num_ctx" {
			if n, err := strconv.Atoi(fields[1]); err == nil && n > 0 {
				out.numCtx = n
			}
		}
	}
	return out, true, nil
}

// ollamaNames are the names Ollama may list model under: as given, and
// with the ":latest" tag a bare name stands for.
func ollamaNames(model string) []string {
	if strings.Contains(model, ":") {
		return []string{model}
	}
	return []string{model, model + ":latest"}
}

// probeLlamaCpp reads llama.cpp's GET /props: default_generation_settings
// holds the per-slot n_ctx, the window each request gets.
func (p *Provider) probeLlamaCpp(ctx context.Context, _ string) (provider.ServedWindow, bool, error) {
	top, err := p.probeOrigin(ctx, "/props")
	if err != nil {
		return provider.ServedWindow{}, false, err
	}
	settings, _ := object(top["default_generation_settings"])
	n, ok := positiveInt(settings["n_ctx"])
	if !ok {
		return provider.ServedWindow{}, false, nil
	}
	return provider.ServedWindow{Tokens: n, Server: "llama.cpp", Reported: true}, true, nil
}

// probeVLLM reads vLLM's model list, whose entries carry max_model_len:
// the longest sequence the engine was started to serve.
func (p *Provider) probeVLLM(ctx context.Context, model string) (provider.ServedWindow, bool, error) {
	target, err := p.endpoint("/models")
	if err != nil {
		return provider.ServedWindow{}, false, err
	}
	v, err := p.probeJSON(ctx, target, nil)
	if err != nil {
		return provider.ServedWindow{}, false, err
	}
	top, _ := object(v)
	list, _ := top["data"].([]any)
	entry, found := findByID(list, "id", model)
	if !found {
		return provider.ServedWindow{}, false, nil
	}
	n, ok := positiveInt(entry["max_model_len"])
	if !ok {
		return provider.ServedWindow{}, false, nil
	}
	return provider.ServedWindow{Tokens: n, Server: "vllm", Reported: true}, true, nil
}
