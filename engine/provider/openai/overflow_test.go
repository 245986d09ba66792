package openai

import (
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

func TestContextOverflowIsRecognisedPerServer(t *testing.T) {
	for _, file := range []string{
		"vllm_context_overflow.json",
		"llamacpp_context_overflow.json",
		"lmstudio_context_overflow.json",
		"ollama_context_overflow.json",
		"openai_context_overflow.json",
	} {
		t.Run(file, func(t *testing.T) {
			srv, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{
				Text:   "unreached",
				Errors: []scripted.HTTPError{{Status: 400, Body: fixture(t, file)}},
			}}})
			_, err := p.Chat(t.Context(), ask())
			pe := mustError(t, err)
			if !pe.ContextOverflow || pe.Transient || pe.StatusCode != 400 || !strings.HasPrefix(pe.Error(), "HTTP 400 on ") {
				t.Fatalf("error = %+v", pe)
			}
			if n := len(requests(t, srv, p)); n != 1 {
				t.Fatalf("an overflow was retried: %d requests", n)
			}
		})
	}
}

func TestContextOverflowNeedsAClientErrorNamingTheContext(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		body   string
		want   bool
	}{
		"other 400":          {400, `{"error":{"message":"tools[0].function.parameters is not a valid schema"}}`, false},
		"5xx naming context": {500, `{"error":{"message":"context length exceeded while scheduling"}}`, false},
		"413":                {413, `{"error":"prompt is too long: 210000 tokens > 200000 maximum"}`, true},
		"wording past the 500 shown bytes": {400, `{"error":{"detail":"` + strings.Repeat("x", 700) +
			`","message":"This model's maximum context length is 4096 tokens."}}`, true},
	} {
		t.Run(name, func(t *testing.T) {
			_, p, _ := serve(t, scripted.Script{Turns: []scripted.Turn{{
				Text:   "after",
				Errors: []scripted.HTTPError{{Status: tc.status, Body: tc.body}},
			}}})
			p.retry.Attempts = 1
			_, err := p.Chat(t.Context(), ask())
			pe := mustError(t, err)
			if pe.ContextOverflow != tc.want {
				t.Fatalf("overflow = %v, want %v (%v)", pe.ContextOverflow, tc.want, pe)
			}
			if len(pe.Error()) > len("HTTP 400 on ")+len(p.BaseURL()+"/chat/completions: ")+errorBodyShown {
				t.Fatalf("message too long: %d bytes", len(pe.Error()))
			}
		})
	}
}
