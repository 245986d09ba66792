package provider

import (
	"errors"
	"strings"
	"testing"
)

func intp(n int) *int { return &n }

func TestResolveContextWindow(t *testing.T) {
	probe := func(n int, ok bool) func() (int, bool) { return func() (int, bool) { return n, ok } }
	for name, tc := range map[string]struct {
		q      WindowQuery
		tokens int
		source string
	}{
		"flag wins":             {WindowQuery{Flag: intp(5000), Env: "9000", Provider: "openai", Model: "qwen/qwen3-coder-next", Probe: probe(8192, true)}, 5000, "flag"},
		"explicit 0 honoured":   {WindowQuery{Flag: intp(0), Env: "9000"}, 0, "flag"},
		"env next":              {WindowQuery{Env: "9000", Provider: "openai", Probe: probe(8192, true)}, 9000, "env"},
		"env with spaces":       {WindowQuery{Env: " 9000 "}, 9000, "env"},
		"server next":           {WindowQuery{Provider: "openai", Model: "qwen/qwen3-coder-next", Probe: probe(8192, true)}, 8192, "provider:openai:server"},
		"probe without answer":  {WindowQuery{Provider: "openai", Model: "qwen/qwen3-coder-next", Probe: probe(0, false)}, 65536, "provider:openai"},
		"probe says 0":          {WindowQuery{Provider: "openai", Model: "qwen/qwen3-coder-next", Probe: probe(0, true)}, 65536, "provider:openai"},
		"probe says -1":         {WindowQuery{Provider: "openai", Model: "qwen/qwen3-coder-next", Probe: probe(-1, true)}, 65536, "provider:openai"},
		"table devstral":        {WindowQuery{Provider: "openai", Model: "mistralai/devstral-small-2-2512"}, 32768, "provider:openai"},
		"anthropic prefix":      {WindowQuery{Provider: "anthropic", Model: "claude-sonnet-4-5"}, 200000, "provider:anthropic"},
		"table is per provider": {WindowQuery{Provider: "openai", Model: "claude-sonnet-4-5"}, 32768, "default"},
		"unknown model":         {WindowQuery{Provider: "openai", Model: "local/unknown"}, 32768, "default"},
	} {
		tokens, source, err := ResolveContextWindow(tc.q)
		if err != nil || tokens != tc.tokens || source != tc.source {
			t.Errorf("%s: %d %q %v, want %d %q", name, tokens, source, err, tc.tokens, tc.source)
		}
	}
}

func TestResolveContextWindowRejectsBadEnv(t *testing.T) {
	for _, v := range []string{"abc", "0", "-5", "1.5", "lots", "64k"} {
		_, _, err := ResolveContextWindow(WindowQuery{Env: v, Provider: "openai"})
		if !errors.Is(err, ErrBadContextWindowEnv) || err.Error() != "DIRTYWORK_CONTEXT_WINDOW must be a positive integer, got '"+v+"'" {
			t.Errorf("env %q: %v", v, err)
		}
	}
}

func TestProbeIsNotAskedWhenFlagOrEnvDecide(t *testing.T) {
	asked := 0
	probe := func() (int, bool) { asked++; return 1, true }
	_, _, _ = ResolveContextWindow(WindowQuery{Flag: intp(3), Probe: probe})
	_, _, _ = ResolveContextWindow(WindowQuery{Env: "3", Probe: probe})
	if asked != 0 {
		t.Fatalf("probe asked %d times", asked)
	}
}

func TestServedWindowWarning(t *testing.T) {
	if _, ok := ServedWindowWarning("m", 4096, ServedWindow{Tokens: 4096, Server: "ollama"}); ok {
		t.Fatal("warned about an equal window")
	}
	if _, ok := ServedWindowWarning("m", 65536, ServedWindow{}); ok {
		t.Fatal("warned without a window")
	}
	msg, ok := ServedWindowWarning("qwen3-coder:30b", 65536, ServedWindow{Tokens: 4096, Server: "ollama"})
	for _, part := range []string{"ollama server by default serves 'qwen3-coder:30b' with a 4096-token context window", "65536", "num_ctx", "--context-window 4096"} {
		if !ok || !strings.Contains(msg, part) {
			t.Errorf("warning %q lacks %q", msg, part)
		}
	}
	msg, ok = ServedWindowWarning("m", 32768, ServedWindow{Tokens: 8192, Server: "lmstudio", Reported: true})
	if !ok || !strings.Contains(msg, "lmstudio server serves 'm' with a 8192-token") || strings.Contains(msg, "num_ctx") {
		t.Errorf("warning %q", msg)
	}
}
