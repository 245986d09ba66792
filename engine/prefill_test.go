package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/engine/provider/openai"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/engine/tools"
)

// The prefill measurement. A local model server reuses its prompt cache
// only for the unchanged prefix of the previous request; every token after
// the first changed message is prefilled again. The scenario drives the
// real loop over HTTP against the scripted server, behind a front that
// counts each request's tokens with a tokenizer stand-in and reports that
// count as usage.prompt_tokens, and records every request's messages.
//
// The stand-in counts ceil(bytes/charsPerToken) of the tool schemas once
// per request, and for each message msgOverheadTokens (the chat template's
// framing) plus ceil(bytes/charsPerToken) of its content plus
// ceil(bytes/charsPerToken) of its tool_calls JSON as sent.
const msgOverheadTokens = 4

// prefillScenario is one measured run.
type prefillScenario struct {
	turns         int     // model turns, the last a finish call
	resultBytes   int     // size of each read_file result
	window        int     // context window in tokens
	maxTokens     int     // the reply's max_tokens
	charsPerToken float64 // the stand-in tokenizer's ratio
	noUsage       bool    // the server reports no usage at all
}

// pressure is the scenario the figures are quoted for: 60 turns, a 3 KB
// result each, a 12k window, the default 4096 max_tokens.
func pressure(charsPerToken float64) prefillScenario {
	return prefillScenario{turns: 60, resultBytes: 3000, window: 12288, maxTokens: 4096, charsPerToken: charsPerToken}
}

// prefillFigures is what one run measured.
type prefillFigures struct {
	out       Outcome
	requests  int
	extending int // requests whose messages extend the previous request's exactly
	prefill   int // tokens after the common prefix with the previous request, summed
	floor     int // every distinct message's tokens once, and the schemas once
	maxPrompt int // the largest prompt the server counted
	maxChars  int // the largest request's message characters as E-53 counts them
}

// ratio is the prefill over its floor.
func (f prefillFigures) ratio() float64 { return float64(f.prefill) / float64(f.floor) }

// share is the share of requests after the first that extend the previous
// one exactly.
func (f prefillFigures) share() float64 {
	return float64(f.extending) / float64(f.requests-1)
}

func (f prefillFigures) String() string {
	return fmt.Sprintf("prefill %d / floor %d = %.3f×; %d of %d requests extend the previous one (%.1f %%); %d trims; largest prompt %d tokens",
		f.prefill, f.floor, f.ratio(), f.extending, f.requests-1, 100*f.share(), f.out.TrimmedTurns, f.maxPrompt)
}

// countingFront stands in front of the scripted server: it counts each
// chat request with the tokenizer stand-in, rewrites the reply's
// usage.prompt_tokens to that count (or drops usage), and records the
// request's messages as sent, with each one's count.
type countingFront struct {
	next          http.Handler
	charsPerToken float64
	noUsage       bool

	mu   sync.Mutex
	reqs []countedRequest
}

// countedRequest is one request as the front saw it.
type countedRequest struct {
	schemaTokens int
	msgs         []string // each message's JSON as sent
	tokens       []int    // each message's stand-in count
	chars        int      // message characters as E-53 counts them
}

func (c *countingFront) tok(n int) int { return int(math.Ceil(float64(n) / c.charsPerToken)) }

func (c *countingFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Tools    json.RawMessage   `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil {
		c.next.ServeHTTP(w, r)
		return
	}
	cr := countedRequest{schemaTokens: c.tok(len(req.Tools))}
	count := cr.schemaTokens
	for _, raw := range req.Messages {
		var m struct {
			Content   string          `json:"content"`
			ToolCalls json.RawMessage `json:"tool_calls"`
		}
		_ = json.Unmarshal(raw, &m)
		n := msgOverheadTokens + c.tok(len(m.Content)) + c.tok(len(m.ToolCalls))
		cr.msgs = append(cr.msgs, string(raw))
		cr.tokens = append(cr.tokens, n)
		cr.chars += len([]rune(m.Content)) + callChars(m.ToolCalls)
		count += n
	}
	c.mu.Lock()
	c.reqs = append(c.reqs, cr)
	c.mu.Unlock()

	rec := httptest.NewRecorder()
	c.next.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	var reply map[string]any
	if rec.Code == http.StatusOK && json.Unmarshal(out, &reply) == nil {
		if c.noUsage {
			delete(reply, "usage")
		} else if u, ok := reply["usage"].(map[string]any); ok {
			u["prompt_tokens"] = count
		}
		out, _ = json.Marshal(reply)
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// callChars counts tool calls' raw-argument characters as E-53 does.
func callChars(raw json.RawMessage) int {
	var calls []struct {
		Function struct {
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &calls)
	n := 0
	for _, c := range calls {
		n += len([]rune(c.Function.Arguments))
	}
	return n
}

// measurePrefill runs sc and computes its figures from what the server
// received.
func measurePrefill(tb testing.TB, sc prefillScenario) prefillFigures {
	tb.Helper()
	var turns []scripted.Turn
	ws := &fakeWS{answers: map[string]string{}}
	line := "0123456789 abcdefghij klmnopqrstuvwxyz ABCDEFGHIJ KLMNOPQRSTUVWXYZ (//)\n" // 74 bytes
	for i := range sc.turns - 1 {
		path := fmt.Sprintf("src/file%02d.txt", i)
		args, _ := json.Marshal(map[string]string{"path": path})
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: args}}})
		content := fmt.Sprintf("file %02d\n", i) + strings.Repeat(line, sc.resultBytes/len(line)+1)
		ws.answers[path] = content[:sc.resultBytes]
	}
	summary := "read them all"
	turns = append(turns, scripted.Turn{Finish: &summary})
	front := &countingFront{next: scripted.New(scripted.Script{Turns: turns}), charsPerToken: sc.charsPerToken, noUsage: sc.noUsage}
	srv := httptest.NewServer(front)
	tb.Cleanup(srv.Close)

	loop := &Loop{
		Provider: openai.New(openai.Config{BaseURL: srv.URL + "/v1"}),
		Tools:    tools.New(ws, policy.Options{}), Events: discardEvents{},
		Model: scripted.DefaultModel, MaxTurns: sc.turns + 10, Timeout: 5 * time.Minute, MaxTokens: sc.maxTokens,
		ContextWindow: sc.window,
	}
	f := prefillFigures{out: loop.Run(tb.Context(), "You are a careful engineer. Read what you are asked to read.", "read every file under src/, one at a time")}

	front.mu.Lock()
	reqs := front.reqs
	front.mu.Unlock()
	f.requests = len(reqs)
	seen := map[string]bool{}
	for i, r := range reqs {
		common := 0
		if i == 0 {
			f.prefill += r.schemaTokens
			f.floor += r.schemaTokens
		} else {
			prev := reqs[i-1].msgs
			for common < len(prev) && common < len(r.msgs) && prev[common] == r.msgs[common] {
				common++
			}
			if common == len(prev) {
				f.extending++
			}
		}
		prompt := r.schemaTokens
		for j, m := range r.msgs {
			prompt += r.tokens[j]
			if j >= common {
				f.prefill += r.tokens[j]
			}
			if !seen[m] {
				seen[m] = true
				f.floor += r.tokens[j]
			}
		}
		f.maxPrompt = max(f.maxPrompt, prompt)
		f.maxChars = max(f.maxChars, r.chars)
	}
	return f
}

// BenchmarkPrefill reports the pressure scenario's figures as metrics:
// prefill/floor, the share of requests extending the previous one, and
// the number of trims.
func BenchmarkPrefill(b *testing.B) {
	for _, cpt := range []float64{4, 3.2} {
		b.Run(fmt.Sprintf("cpt=%.1f", cpt), func(b *testing.B) {
			var f prefillFigures
			for b.Loop() {
				f = measurePrefill(b, pressure(cpt))
			}
			b.ReportMetric(f.ratio(), "prefill/floor")
			b.ReportMetric(f.share(), "extend-share")
			b.ReportMetric(float64(f.out.TrimmedTurns), "trims")
		})
	}
}
