package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// ModelSpec is one entry of --models: which model, spoken to how, on
// which server, taking how many requests at once.
type ModelSpec struct {
	// Raw is the entry as given, for messages.
	Raw string
	// Model is the model id the server is asked for.
	Model string
	// Provider and BaseURL are the entry's, else the --provider and
	// --base-url defaults; "" when neither gave one (the run's own
	// defaults then apply, as for `dirtywork run`).
	Provider, BaseURL string
	// Slots is how many requests the server takes at once (#N; default
	// 1). A sweep never has more cases in flight against one server.
	Slots int
}

// ServerKey names the server a spec's cases share slots on: specs with
// the same provider and base URL are one server, whatever their model.
func (m ModelSpec) ServerKey() string { return m.Provider + " " + m.BaseURL }

// ParseModelSpecs parses --models: comma-separated entries of the form
// model[@provider][=base_url][#slots] (B-3: split at the first '=', then
// the model part at the last '@'; an empty part falls back to the
// defaults). Specs of one server must agree on its slots.
func ParseModelSpecs(list, defProvider, defBaseURL string) ([]ModelSpec, error) {
	var specs []ModelSpec
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		m, err := parseModelSpec(raw, defProvider, defBaseURL)
		if err != nil {
			return nil, err
		}
		specs = append(specs, m)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("--models is required")
	}
	slots := map[string]ModelSpec{}
	for _, m := range specs {
		if prev, ok := slots[m.ServerKey()]; ok && prev.Slots != m.Slots {
			return nil, fmt.Errorf("--models: %q and %q name one server with different slots (#%d, #%d)", prev.Raw, m.Raw, prev.Slots, m.Slots)
		}
		slots[m.ServerKey()] = m
	}
	return specs, nil
}

func parseModelSpec(raw, defProvider, defBaseURL string) (ModelSpec, error) {
	m := ModelSpec{Raw: raw, Slots: 1}
	rest := raw
	if i := strings.LastIndexByte(rest, '#'); i >= 0 {
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 1 {
			return m, fmt.Errorf("--models: %q: the slots after '#' must be a whole number of at least 1", raw)
		}
		m.Slots, rest = n, rest[:i]
	}
	model, baseURL, _ := strings.Cut(rest, "=")
	if i := strings.LastIndexByte(model, '@'); i >= 0 {
		model, m.Provider = model[:i], model[i+1:]
	}
	m.Model, m.BaseURL = strings.TrimSpace(model), strings.TrimSpace(baseURL)
	if m.Model == "" {
		return m, fmt.Errorf("--models: %q names no model", raw)
	}
	if m.Provider == "" {
		m.Provider = defProvider
	}
	if m.BaseURL == "" {
		m.BaseURL = defBaseURL
	}
	switch m.Provider {
	case "", "openai", "anthropic":
	default:
		return m, fmt.Errorf("--models: %q: the provider must be openai or anthropic, got %q", raw, m.Provider)
	}
	return m, nil
}
