package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultContextWindow is the window assumed when nothing says otherwise.
const DefaultContextWindow = 32768

// ContextWindowEnv names the environment variable that sets the window.
const ContextWindowEnv = "DIRTYWORK_CONTEXT_WINDOW"

// Context window sources, as recorded in context_window_source. A provider
// adds two more: "provider:<name>:server" (see ServerWindowSource) and
// "provider:<name>" (see TableWindowSource).
const (
	WindowSourceFlag    = "flag"
	WindowSourceEnv     = "env"
	WindowSourceDefault = "default"
)

// ErrBadContextWindowEnv is returned for a DIRTYWORK_CONTEXT_WINDOW that is
// not a positive integer; preflight refuses the run.
var ErrBadContextWindowEnv = errors.New(ContextWindowEnv + " must be a positive integer")

// ServerWindowSource is the source of a window the provider's server
// reported.
func ServerWindowSource(providerName string) string { return "provider:" + providerName + ":server" }

// TableWindowSource is the source of a window from the provider's table.
func TableWindowSource(providerName string) string { return "provider:" + providerName }

// knownWindows is the per-provider table of model windows (E-54). A key
// ending in "*" matches by prefix.
var knownWindows = map[string]map[string]int{
	"openai": {
		"qwen/qwen3-coder-next":           65536,
		"mistralai/devstral-small-2-2512": 32768,
	},
	"anthropic": {
		"claude-*": 200000,
	},
}

// KnownContextWindow looks model up in the provider's table.
func KnownContextWindow(providerName, model string) (int, bool) {
	table := knownWindows[providerName]
	if n, ok := table[model]; ok {
		return n, true
	}
	for key, n := range table {
		if prefix, ok := strings.CutSuffix(key, "*"); ok && strings.HasPrefix(model, prefix) {
			return n, true
		}
	}
	return 0, false
}

// WindowQuery holds what the context window is chosen from.
type WindowQuery struct {
	// Flag is --context-window when it was passed (an explicit 0 is
	// honoured).
	Flag *int
	// Env is the value of DIRTYWORK_CONTEXT_WINDOW ("" when unset).
	Env string
	// Provider and Model pick the table entry.
	Provider string
	Model    string
	// Probe, when set, asks the server for the window it serves the model
	// with; only a positive answer counts.
	Probe func() (int, bool)
}

// ResolveContextWindow applies E-54's precedence: flag, environment,
// the server's answer, the provider's table, then DefaultContextWindow. It
// returns the window and its context_window_source. The probe is only
// asked when neither flag nor environment decided.
func ResolveContextWindow(q WindowQuery) (tokens int, source string, err error) {
	if q.Flag != nil {
		return *q.Flag, WindowSourceFlag, nil
	}
	if q.Env != "" {
		n, perr := strconv.Atoi(strings.TrimSpace(q.Env))
		if perr != nil || n <= 0 {
			return 0, "", fmt.Errorf("%w, got '%s'", ErrBadContextWindowEnv, q.Env)
		}
		return n, WindowSourceEnv, nil
	}
	if q.Probe != nil {
		if n, ok := q.Probe(); ok && n > 0 {
			return n, ServerWindowSource(q.Provider), nil
		}
	}
	if n, ok := KnownContextWindow(q.Provider, q.Model); ok {
		return n, TableWindowSource(q.Provider), nil
	}
	return DefaultContextWindow, WindowSourceDefault, nil
}

// ServedWindow is what a server says about the context window it serves a
// model with, which may be smaller than the model supports: Ollama serves
// every model with its num_ctx (4096 unless set) and silently drops the
// start of longer prompts.
type ServedWindow struct {
	// Tokens is the window the server serves the model with.
	Tokens int
	// Server names the server software that answered: "lmstudio",
	// "ollama", "llama.cpp" or "vllm".
	Server string
	// Reported is true when the server stated Tokens, false when Tokens is
	// the server's documented default (Ollama without a num_ctx).
	Reported bool
	// ModelMax is the model's trained context length when the server says
	// (Ollama's model_info), else 0.
	ModelMax int
}

// ServedWindowProber is implemented by providers that can say which window
// a server serves a model with, including defaults the server does not
// report. The engine uses it to warn before a server truncates prompts.
type ServedWindowProber interface {
	ProbeServedWindow(ctx context.Context, model string) (ServedWindow, bool)
}

// ServedWindowWarning returns the warning (without the "warning: " prefix)
// to show when the server serves model with fewer tokens than configured,
// and whether there is one.
func ServedWindowWarning(model string, configured int, w ServedWindow) (string, bool) {
	if w.Tokens <= 0 || configured <= w.Tokens {
		return "", false
	}
	how := "serves"
	if !w.Reported {
		how = "by default serves"
	}
	msg := fmt.Sprintf("the %s server %s '%s' with a %d-token context window, smaller than the %d tokens this run assumes; "+
		"it will silently drop the start of longer prompts", w.Server, how, model, w.Tokens, configured)
	if w.Server == "ollama" {
		msg += "; raise num_ctx (Modelfile PARAMETER num_ctx, or OLLAMA_CONTEXT_LENGTH for the server)"
	} else {
		msg += "; load the model with a larger context length"
	}
	return msg + fmt.Sprintf(" or pass --context-window %d", w.Tokens), true
}
