package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/tools"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/transcript"
)

// fakeProvider answers from a list of replies (or errors), one per request.
type fakeProvider struct {
	replies []any // provider.Response or error
	reqs    []provider.Request
}

func (f *fakeProvider) Name() string    { return "openai" }
func (f *fakeProvider) BaseURL() string { return "http://fake/v1" }

func (f *fakeProvider) ListModels(context.Context) ([]string, error)           { return []string{"m"}, nil }
func (f *fakeProvider) ProbeContextWindow(context.Context, string) (int, bool) { return 0, false }
func (f *fakeProvider) Chat(ctx context.Context, req provider.Request) (provider.Response, error) {
	req.Messages = append([]provider.Message(nil), req.Messages...)
	f.reqs = append(f.reqs, req)
	i := len(f.reqs) - 1
	if i >= len(f.replies) {
		return provider.Response{}, &provider.Error{Msg: "script exhausted"}
	}
	switch v := f.replies[i].(type) {
	case error:
		return provider.Response{}, v
	case func(context.Context) (provider.Response, error):
		return v(ctx)
	case func(provider.Request) (provider.Response, error):
		return v(req)
	default:
		return v.(provider.Response), nil
	}
}

// fakeWS is a workspace whose bash answers from a function and whose file
// tools answer fixed strings.
type fakeWS struct {
	bash func(cmd string) sandbox.BashResult
	// verifyChanged is what a verify reports it changed.
	verifyChanged []string
	writes        int
	budget        error
	answers       map[string]string
}

func (w *fakeWS) DisplayRoot() string { return "/wt" }
func (w *fakeWS) ReadFile(_ context.Context, p string, _, _ int) (string, error) {
	if a, ok := w.answers[p]; ok {
		return a, nil
	}
	return "     1\tcontent of " + p, nil
}

func (w *fakeWS) WriteFile(_ context.Context, p, c string) (string, error) {
	w.writes++
	if w.budget != nil {
		return "", w.budget
	}
	return fmt.Sprintf("Wrote %d bytes to %s (new file, 1 line)", len(c), p), nil
}

func (w *fakeWS) EditFile(context.Context, string, string, string) (string, error) {
	return "Edited", nil
}

func (w *fakeWS) InsertText(context.Context, string, string, string, bool) (string, error) {
	return "Inserted", nil
}

func (w *fakeWS) ApplyEdits(context.Context, string, []sandbox.Edit) (string, error) {
	return "Applied", nil
}
func (w *fakeWS) ListDir(context.Context, string) (string, error) { return "a.txt  (1 bytes)", nil }
func (w *fakeWS) Grep(context.Context, sandbox.GrepArgs) (string, error) {
	return "No matches found.", nil
}

func (w *fakeWS) Bash(_ context.Context, cmd string, t time.Duration) (sandbox.BashResult, error) {
	if w.bash == nil {
		return sandbox.BashResult{ExitCode: 0, Output: "ok", Timeout: t}, nil
	}
	r := w.bash(cmd)
	r.Timeout = t
	return r, nil
}

// fakeTree is the tree hash every fake verify judges and every fake
// finalize reports: the tree the run left is the one judged.
const fakeTree = "sha256:fake"

func (w *fakeWS) Verify(ctx context.Context, cmd string, t time.Duration) (sandbox.VerifyRun, error) {
	r, err := w.Bash(ctx, cmd, t)
	return sandbox.VerifyRun{BashResult: r, Tree: fakeTree, Changed: w.verifyChanged}, err
}

func (w *fakeWS) Finalize(context.Context) (sandbox.Finalization, error) {
	return sandbox.Finalization{TreeHash: fakeTree}, nil
}
func (w *fakeWS) Close() error { return nil }

// events collects what the loop writes.
type events struct{ list []transcript.Event }

func (e *events) Write(ev transcript.Event) error { e.list = append(e.list, ev); return nil }

func (e *events) names() []string {
	var out []string
	for _, ev := range e.list {
		switch v := ev.(type) {
		case transcript.Nudge:
			out = append(out, "nudge:"+v.Kind)
		case transcript.ModelRequest, transcript.ModelProgress:
		default:
			out = append(out, ev.EventName())
		}
	}
	return out
}

func call(id, name, args string) provider.ToolCall {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return provider.ToolCall{ID: id, Name: name, RawArguments: args, Error: "malformed tool arguments: " + err.Error()}
	}
	return provider.ToolCall{ID: id, Name: name, Arguments: m, RawArguments: args}
}

func calls(cs ...provider.ToolCall) provider.Response {
	return provider.Response{ToolCalls: cs, FinishReason: "tool_calls", Usage: provider.Usage{PromptTokens: 10, CompletionTokens: 5}}
}

func text(s string) provider.Response {
	return provider.Response{Text: s, FinishReason: "stop", Usage: provider.Usage{PromptTokens: 10, CompletionTokens: 5}}
}

type harness struct {
	loop *Loop
	prov *fakeProvider
	ws   *fakeWS
	ev   *events
}

func newHarness(replies ...any) *harness {
	ws := &fakeWS{}
	prov := &fakeProvider{replies: replies}
	ev := &events{}
	return &harness{
		loop: &Loop{
			Provider: prov, Tools: tools.New(ws, policy.Options{Mode: policy.Host, Worktrees: []string{"/wt"}}),
			Events: ev, Model: "m", MaxTurns: 40, Timeout: time.Hour, MaxTokens: 4096,
			ContextWindow: 65536, StallTurns: 12, StuckRepeats: 4,
		},
		prov: prov, ws: ws, ev: ev,
	}
}

func (h *harness) run(t *testing.T) Outcome {
	t.Helper()
	return h.loop.Run(t.Context(), "system", "task")
}

func TestReadThenAnswer(t *testing.T) {
	h := newHarness(calls(call("c1", "read_file", `{"path":"a.txt"}`)), text("done: read it"))
	out := h.run(t)
	if out.Status != transcript.StatusCompleted || out.Turns != 2 || out.FinalMessage != "done: read it" {
		t.Fatalf("%+v", out)
	}
	if out.Usage != (transcript.Usage{PromptTokens: 20, CompletionTokens: 10}) {
		t.Fatalf("usage %+v", out.Usage)
	}
	second := h.prov.reqs[1].Messages
	tool := second[len(second)-1]
	if tool.Role != provider.RoleTool || tool.ToolCallID != "c1" || !strings.Contains(tool.Content, "content of a.txt") {
		t.Fatalf("tool message %+v", tool)
	}
	if got := strings.Join(h.ev.names(), ","); got != "assistant,tool_result,assistant" {
		t.Fatalf("events %s", got)
	}
	if out.PrefixReuse != 1 || out.Requests != 2 {
		t.Fatalf("prefix reuse %d of %d", out.PrefixReuse, out.Requests)
	}
}

func TestLimits(t *testing.T) {
	read := calls(call("c", "list_dir", `{}`))
	h := newHarness(read, read, read, read, read)
	h.loop.MaxTurns = 3
	h.loop.StallTurns = 0
	if out := h.run(t); out.Status != transcript.StatusMaxTurns || out.Turns != 3 {
		t.Fatalf("max turns: %+v", out)
	}
	h = newHarness(read)
	h.loop.Timeout = -time.Second
	if out := h.run(t); out.Status != transcript.StatusTimeout || out.Turns != 0 {
		t.Fatalf("timeout: %+v", out)
	}
	h = newHarness(read)
	h.loop.ContextWindow = 1 // a budget of 3 characters
	if out := h.run(t); out.Status != transcript.StatusContextExhausted || out.Turns != 0 {
		t.Fatalf("context: %+v", out)
	}
}

func TestFailureTracker(t *testing.T) {
	bad := calls(call("c", "read_file", `{}`))
	good := calls(call("c", "list_dir", `{}`))
	h := newHarness(bad, bad, bad)
	out := h.run(t)
	if out.Status != transcript.StatusModelError || out.FinalMessage != "aborted after 3 consecutive bad_args failures" {
		t.Fatalf("%+v", out)
	}
	h = newHarness(bad, bad, good, bad, bad, text("answer"))
	if out := h.run(t); out.Status != transcript.StatusCompleted {
		t.Fatalf("reset by a good call: %+v", out)
	}
	unknown := calls(call("c", "nope", `{}`))
	malformedArgs := calls(call("c", "read_file", `{"path":`))
	h = newHarness(bad, unknown, malformedArgs, bad, unknown, malformedArgs)
	out = h.run(t)
	if out.Status != transcript.StatusModelError || out.FinalMessage != "aborted after 6 consecutive tool failures" || out.Turns != 6 {
		t.Fatalf("total abort: %+v", out)
	}
}

func TestUnaddressableEntries(t *testing.T) {
	bad := provider.ToolCall{Name: "read_file", Error: "malformed tool call entry (missing or invalid id/function fields)"}
	h := newHarness(calls(bad, bad, bad, bad, bad, bad))
	out := h.run(t)
	if out.Status != transcript.StatusModelError || out.FinalMessage != "aborted after 3 consecutive malformed_entry failures" {
		t.Fatalf("%+v", out)
	}
	h = newHarness(calls(bad), text("fine"))
	out = h.run(t)
	if out.Status != transcript.StatusCompleted {
		t.Fatalf("%+v", out)
	}
	msgs := h.prov.reqs[1].Messages
	if msgs[len(msgs)-1].Role != provider.RoleUser || !strings.Contains(msgs[len(msgs)-1].Content, "malformed") {
		t.Fatalf("no malformed notice: %+v", msgs[len(msgs)-1])
	}
	for _, m := range msgs {
		if m.Role == provider.RoleTool {
			t.Fatal("a tool message answered an unaddressable call")
		}
	}
	if out.LastToolResult == nil || out.LastToolResult.Tool != "" || !strings.HasPrefix(out.LastToolResult.Result, "ERROR: malformed tool call entry") {
		t.Fatalf("last tool result %+v", out.LastToolResult)
	}
}

func TestProviderErrors(t *testing.T) {
	h := newHarness(calls(call("c", "list_dir", `{}`)), &provider.Error{Msg: "malformed response from server (no choices[0].message)", Malformed: true})
	out := h.run(t)
	if out.Status != transcript.StatusModelError || out.Turns != 2 || !strings.Contains(out.FinalMessage, "no choices") ||
		out.ModelFailure != transcript.ModelFailureMalformed {
		t.Fatalf("malformed: %+v", out)
	}
	h = newHarness(calls(call("c", "list_dir", `{}`)), &provider.Error{Msg: "HTTP 500 on x: boom", StatusCode: 500})
	out = h.run(t)
	if out.Status != transcript.StatusModelError || out.Turns != 1 || out.LastToolResult == nil || out.Usage.PromptTokens != 10 ||
		out.ModelFailure != transcript.ModelFailureServer {
		t.Fatalf("evidence not kept: %+v", out)
	}
	h = newHarness(&provider.Error{Msg: "HTTP 400: context length exceeded", ContextOverflow: true})
	if out := h.run(t); out.Status != transcript.StatusContextExhausted || out.ModelFailure != "" {
		t.Fatalf("overflow: %+v", out)
	}
	h = newHarness(&provider.Error{Msg: "timed out", Timeout: true})
	if out := h.run(t); out.Status != transcript.StatusModelError || out.FinalMessage != "model request timed out before the run deadline" ||
		out.ModelFailure != transcript.ModelFailureRequestTimeout {
		t.Fatalf("early timeout: %+v", out)
	}
	h = newHarness(func(ctx context.Context) (provider.Response, error) {
		<-ctx.Done()
		return provider.Response{}, &provider.Error{Msg: "timed out", Timeout: true}
	})
	h.loop.Timeout = 1500 * time.Millisecond
	if out := h.run(t); out.Status != transcript.StatusTimeout {
		t.Fatalf("timeout at the deadline: %+v", out)
	}
	ctx, cancel := context.WithCancel(t.Context())
	h = newHarness(func(context.Context) (provider.Response, error) {
		cancel()
		return provider.Response{}, context.Canceled
	})
	if out := h.loop.Run(ctx, "s", "t"); out.Status != transcript.StatusInterrupted {
		t.Fatalf("interrupt: %+v", out)
	}
}

func TestNudges(t *testing.T) {
	truncatedBadArgs := provider.Response{ToolCalls: []provider.ToolCall{call("c", "write_file", `{"path":"a","content":"x`)}, FinishReason: "length"}
	h := newHarness(truncatedBadArgs, text("ok"))
	h.run(t)
	last := h.prov.reqs[1].Messages
	if !strings.Contains(last[len(last)-1].Content, "cut off at the token limit") {
		t.Fatalf("cut-off hint missing: %q", last[len(last)-1].Content)
	}
	for name, reply := range map[string]provider.Response{
		"truncated":      {Text: "partial", FinishReason: "length"},
		"empty":          text(""),
		"think only":     text("<think>hmm"),
		"text tool call": text(`I will call {"name": "read_file", "arguments": {"path": "a"}}`),
		"xml tool call":  text("<tool_call>read_file</tool_call>"),
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(reply, reply, reply)
			out := h.run(t)
			if out.Status != transcript.StatusModelError || out.FinalMessage != "aborted after 3 consecutive empty_reply failures" {
				t.Fatalf("%+v", out)
			}
			if n := strings.Count(strings.Join(h.ev.names(), ","), "nudge:"); n < 2 {
				t.Fatalf("nudges %v", h.ev.names())
			}
		})
	}
}

func TestFinishWithOtherCalls(t *testing.T) {
	h := newHarness(calls(call("f", "finish", `{"summary":"all done"}`), call("w", "write_file", `{"path":"a","content":"x"}`)))
	out := h.run(t)
	if out.Status != transcript.StatusCompleted || out.Turns != 1 || out.FinalMessage != "all done" || h.ws.writes != 1 {
		t.Fatalf("%+v writes %d", out, h.ws.writes)
	}
	h = newHarness(calls(call("f", "finish", `{}`)))
	if out := h.run(t); out.Status != transcript.StatusCompleted || out.FinalMessage != "" {
		t.Fatalf("no summary: %+v", out)
	}
	h = newHarness(calls(call("f", "finish", `{"summary":`)), text("later"))
	if out := h.run(t); out.Status != transcript.StatusCompleted || out.Turns != 2 {
		t.Fatalf("malformed finish must continue: %+v", out)
	}
}

func TestStall(t *testing.T) {
	read := calls(call("c", "read_file", `{"path":"a"}`))
	noise := calls(call("c", "read_file", `{"path":"./a","timeout":3}`))
	h := newHarness(read, read, noise, read, read, read)
	h.loop.StallTurns = 4
	out := h.run(t)
	if out.Status != transcript.StatusStalled || out.Turns != 5 || out.FinalMessage != "no progress in 4 consecutive turns" {
		t.Fatalf("%+v", out)
	}
	var stallTurns []int
	for _, ev := range h.ev.list {
		if n, ok := ev.(transcript.Nudge); ok && n.Kind == transcript.NudgeStall {
			stallTurns = append(stallTurns, n.Turn)
		}
	}
	if len(stallTurns) != 1 || stallTurns[0] != 3 {
		t.Fatalf("stall nudges at %v", stallTurns)
	}
	var distinct []any
	for i := range 20 {
		distinct = append(distinct, calls(call("c", "read_file", fmt.Sprintf(`{"path":"f%d"}`, i))))
	}
	h = newHarness(append(distinct, text("done"))...)
	h.loop.StallTurns = 4
	if out := h.run(t); out.Status != transcript.StatusCompleted {
		t.Fatalf("distinct reads stalled: %+v", out)
	}
	h = newHarness(text(""), text(""))
	h.loop.StallTurns = 2
	out = h.run(t)
	if out.Status != transcript.StatusStalled || out.Turns != 2 {
		t.Fatalf("empties: %+v", out)
	}
	if got := strings.Join(h.ev.names(), ","); got != "assistant,nudge:empty,nudge:stall,assistant,nudge:empty" {
		t.Fatalf("events %s", got)
	}
	msg := h.prov.reqs[1].Messages[3].Content
	if msg != nudgeEmpty+"\n\n"+stallText(1) {
		t.Fatalf("merged message %q", msg)
	}
}

func TestStuck(t *testing.T) {
	fail := calls(call("c", "bash", `{"command":"exit 7"}`))
	h := newHarness(fail, fail, fail, fail)
	h.ws.bash = func(string) sandbox.BashResult { return sandbox.BashResult{ExitCode: 7} }
	h.loop.StuckRepeats = 3
	out := h.run(t)
	if out.Status != transcript.StatusStuck || out.Turns != 3 || out.StuckOn == nil || out.StuckOn.Repeats != 3 || out.StuckOn.Command != "exit 7" {
		t.Fatalf("%+v", out)
	}
	if out.FinalMessage != "the same failing command ran 3 times in a row" {
		t.Fatalf("message %q", out.FinalMessage)
	}
	h = newHarness(fail, text("gave up"))
	h.ws.bash = func(string) sandbox.BashResult { return sandbox.BashResult{ExitCode: 7} }
	if out := h.run(t); out.Status != transcript.StatusCompleted || out.StuckOn != nil {
		t.Fatalf("stuck_on must be null unless stuck: %+v", out)
	}
}

func TestVerify(t *testing.T) {
	finish := calls(call("f", "finish", `{"summary":"s"}`))
	exits := []int{1, 0}
	h := newHarness(finish, finish)
	h.ws.bash = func(cmd string) sandbox.BashResult {
		code := exits[0]
		exits = exits[1:]
		return sandbox.BashResult{ExitCode: code, Output: "test output"}
	}
	h.loop.Verify = &VerifyConfig{Command: "make test", Rounds: 1, Timeout: 9999 * time.Second}
	out := h.run(t)
	if out.Status != transcript.StatusCompleted || out.Verify == nil || out.Verify.Rounds != 2 || !out.Verify.Passed {
		t.Fatalf("%+v %+v", out, out.Verify)
	}
	msgs := h.prov.reqs[1].Messages
	if !strings.HasPrefix(msgs[len(msgs)-1].Content, "VERIFY FAILED (round 1 of 2).") {
		t.Fatalf("verify message %q", msgs[len(msgs)-1].Content)
	}
	h = newHarness(finish)
	h.ws.bash = func(string) sandbox.BashResult { return sandbox.BashResult{ExitCode: 2} }
	h.loop.Verify = &VerifyConfig{Command: "make test", Rounds: 0, Timeout: time.Second}
	out = h.run(t)
	if out.Status != transcript.StatusVerifyFailed || out.FinalMessage != "s" || out.Verify.Passed || *out.Verify.ExitCode != 2 {
		t.Fatalf("%+v", out)
	}
}

func TestBudgetAndTimeouts(t *testing.T) {
	h := newHarness(calls(call("w", "write_file", `{"path":"a","content":"x"}`)))
	h.ws.budget = &sandbox.BudgetError{Reason: "worktree exceeds 1 MB"}
	out := h.run(t)
	if out.Status != transcript.StatusBudgetExceeded || out.FinalMessage != "worktree exceeds 1 MB" {
		t.Fatalf("%+v", out)
	}
	for _, ev := range h.ev.list {
		if ev.EventName() == transcript.EventToolResult {
			t.Fatal("the call that broke the budget got a tool_result")
		}
	}
	sleep := calls(call("a", "bash", `{"command":"sleep 9"}`), call("b", "bash", `{"command":"sleep 8"}`))
	h = newHarness(sleep, text("done"))
	h.ws.bash = func(string) sandbox.BashResult { return sandbox.BashResult{ExitCode: -1, TimedOut: true} }
	out = h.run(t)
	if out.Timeouts != 2 || out.Status != transcript.StatusCompleted {
		t.Fatalf("%+v", out)
	}
	if n := strings.Count(strings.Join(h.ev.names(), ","), "nudge:timeout"); n != 1 {
		t.Fatalf("timeout nudges: %v", h.ev.names())
	}
}

func TestLongAssistantTextCappedInTranscriptOnly(t *testing.T) {
	long := strings.Repeat("ж", 70000)
	h := newHarness(text(long))
	out := h.run(t)
	a := h.ev.list[1].(transcript.Assistant)
	if !strings.HasPrefix(a.Text, strings.Repeat("ж", 64000)+"\n[truncated at 64000 chars") {
		t.Fatalf("transcript text not capped")
	}
	if out.FinalMessage != long {
		t.Fatal("the final message must be the full text")
	}
	if len([]rune(*out.LastAssistantText)) != 2000 {
		t.Fatalf("last assistant text %d runes", len([]rune(*out.LastAssistantText)))
	}
}

// A streamed reply's progress reaches the transcript at most once a
// second, with the end of what the model has written so far.
func TestProgressCarriesTheStreamTail(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	stream := func(req provider.Request) (provider.Response, error) {
		var tail provider.Tail
		for i, chunk := range []string{"Let me read ", "a.txt ", "first."} {
			tail.Add(chunk)
			now = now.Add(600 * time.Millisecond)
			req.OnProgress(provider.Progress{Tokens: 3 * (i + 1), Tail: &tail})
		}
		return text("done: read it"), nil
	}
	h := newHarness(stream)
	h.loop.Now = func() time.Time { return now }
	if out := h.run(t); out.Status != transcript.StatusCompleted {
		t.Fatalf("%+v", out)
	}
	var progress []transcript.ModelProgress
	for _, ev := range h.ev.list {
		if p, ok := ev.(transcript.ModelProgress); ok {
			progress = append(progress, p)
		}
	}
	// At 0.6 s nothing (under a second), at 1.2 s the first, at 1.8 s
	// nothing again.
	if len(progress) != 1 || progress[0].Tokens != 6 || progress[0].Tail != "Let me read a.txt " {
		t.Fatalf("progress %+v", progress)
	}
}
