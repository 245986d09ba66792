package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/engine/provider"
	"github.com/dirtywork/dirtywork/engine/tools"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
)

// Transcript and evidence caps (characters).
const (
	assistantTextCap = 64000
	callArgsCap      = 2000
	resultArgsCap    = 500
	resultPreviewCap = 2000
	lastTextCap      = 2000
	verifyTailCap    = 4000
)

// EventWriter is where the loop records what happens; *transcript.Writer
// is one.
type EventWriter interface {
	Write(transcript.Event) error
}

// VerifyConfig is the --verify step.
type VerifyConfig struct {
	Command string
	Rounds  int           // retries allowed after the first failure
	Timeout time.Duration // clamped to 1..600 s
}

// verifyScript is command as the verify step runs it: with a Python
// bytecode cache of its own and no Python user site (the workspace gives
// the session a fresh home, TMPDIR and git dir). The outcome is evidence
// for the reviewer, so only what they review may decide it: a .pyc that
// claims to match a test's source, or a usercustomize.py, runs on every
// python start and could print "412 passed" and exit 0 with nothing in
// the diff to show for it.
func verifyScript(command string) string {
	var b strings.Builder
	b.WriteString(`mkdir -p "$TMPDIR/pycache" || exit 125` + "\n")
	b.WriteString(`export PYTHONPYCACHEPREFIX="$TMPDIR/pycache" PYTHONNOUSERSITE=1` + "\n")
	b.WriteString("unset BASH_ENV ENV PYTHONSTARTUP PYTHONUSERBASE\n")
	b.WriteString(command)
	return b.String()
}

// Loop is the agent loop of one run (E-41 … E-55).
type Loop struct {
	Provider      provider.Provider
	Tools         *tools.Registry
	Events        EventWriter
	Model         string
	MaxTurns      int
	Timeout       time.Duration
	Temperature   *float64
	MaxTokens     int
	Stream        bool
	ContextWindow int
	StallTurns    int
	StuckRepeats  int
	Verify        *VerifyConfig
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time

	// first is the first turn's request, when Prefetch sent it.
	first *prefetch
}

// Outcome is what the loop leaves for finalize, run_end and stdout.
type Outcome struct {
	Status            transcript.Status
	FinalMessage      string
	Turns             int
	Usage             transcript.Usage
	StuckOn           *transcript.StuckOn
	LastToolResult    *transcript.LastToolResult
	LastAssistantText *string
	Verify            *transcript.VerifyResult
	TrimmedTurns      int
	Timeouts          int
	// PrefixReuse counts model requests whose messages extend the
	// previous request's exactly (a prompt cache can be reused).
	PrefixReuse int
	// Requests counts model requests sent.
	Requests int
	// ModelFailure says what failed when the model request itself ended
	// the run (transcript.ModelFailure*); "" otherwise.
	ModelFailure string
	Duration     time.Duration
}

// run is the state of one loop execution.
type run struct {
	l        *Loop
	hist     *history
	failures *failureTracker
	stall    *stallTracker
	repeat   *repeatTracker
	out      Outcome
	deadline time.Time
	started  time.Time
	verifyN  int
	summary  string
	// first is the prefetched first request, until the first turn takes it.
	first *prefetch
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Run drives the conversation from the system prompt and task to a final
// status. It never panics on model input and never returns an error: every
// way a run can end is a status.
func (l *Loop) Run(ctx context.Context, system, task string) Outcome {
	r := &run{
		l:        l,
		hist:     newHistory(l.ContextWindow).withReply(l.MaxTokens),
		failures: newFailureTracker(),
		stall:    newStallTracker(l.StallTurns),
		repeat:   newRepeatTracker(l.StuckRepeats),
		started:  l.now(),
	}
	r.hist.add(provider.Message{Role: provider.RoleSystem, Content: system})
	r.hist.add(provider.Message{Role: provider.RoleUser, Content: task})
	defer l.Discard()
	if r.first = l.take(r.hist.msgs); r.first != nil {
		// The run's time began when its first request went out.
		r.started = r.first.started
	}
	r.deadline = r.started.Add(l.Timeout)
	r.out.Status, r.out.FinalMessage = r.loop(ctx)
	if r.out.Status != transcript.StatusStuck {
		r.out.StuckOn = nil // a latch that outlived its streak is not the run's story
	} else {
		r.out.StuckOn = r.repeat.latched
	}
	r.out.Duration = l.now().Sub(r.started)
	return r.out
}

func (r *run) write(ev transcript.Event) {
	// A transcript write failure must not change the run's outcome; the
	// runner notices the writer's error when it closes it.
	_ = r.l.Events.Write(ev)
}

func (r *run) loop(ctx context.Context) (status transcript.Status, final string) {
	for {
		if ctx.Err() != nil {
			return transcript.StatusInterrupted, ""
		}
		if r.out.Turns >= r.l.MaxTurns {
			return transcript.StatusMaxTurns, ""
		}
		if !r.l.now().Before(r.deadline) {
			return transcript.StatusTimeout, ""
		}
		fits, replaced := r.hist.trim()
		if replaced > 0 {
			r.out.TrimmedTurns++
		}
		if !fits {
			return transcript.StatusContextExhausted, ""
		}

		resp, status, final, done := r.ask(ctx)
		if done {
			return status, final
		}
		r.out.Turns++
		r.out.Usage.PromptTokens += resp.Usage.PromptTokens
		r.out.Usage.CompletionTokens += resp.Usage.CompletionTokens
		r.recordAssistant(resp)

		if len(resp.ToolCalls) == 0 {
			if status, final, done := r.handleText(ctx, resp); done {
				return status, final
			}
			continue
		}
		pause.At(pause.Reply) // the reply is recorded, its calls not yet run
		if status, final, done := r.handleCalls(ctx, resp); done {
			return status, final
		}
	}
}

// ask sends one request. done is set when the run ends here.
func (r *run) ask(ctx context.Context) (resp provider.Response, status transcript.Status, final string, done bool) {
	left := r.deadline.Sub(r.l.now())
	callCtx, cancel := context.WithTimeout(ctx, max(time.Second, left))
	defer cancel()

	turn := r.out.Turns + 1
	r.write(transcript.ModelRequest{Turn: turn, EstPromptTokens: r.hist.estTokens()})
	if !r.hist.changed && r.out.Requests > 0 {
		r.out.PrefixReuse++
	}
	r.hist.changed = false
	r.out.Requests++
	sent := r.hist.mark()

	var err error
	if pf := r.first; pf != nil {
		r.first = nil
		progress := &progressReporter{r: r, turn: turn, start: pf.started, last: pf.started}
		pf.attach(progress.report)
		resp, err = pf.wait(callCtx)
	} else {
		progress := newProgressReporter(r, turn)
		resp, err = r.l.Provider.Chat(callCtx, r.l.request(r.hist.msgs, progress.report))
	}
	if err == nil {
		r.hist.calibrate(sent, resp.Usage.PromptTokens)
		return resp, "", "", false
	}
	if ctx.Err() != nil {
		return resp, transcript.StatusInterrupted, "", true
	}
	pe, isProviderErr := provider.AsError(err)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (isProviderErr && pe.Timeout):
		if !r.l.now().Before(r.deadline.Add(-500 * time.Millisecond)) {
			return resp, transcript.StatusTimeout, "", true
		}
		r.out.ModelFailure = transcript.ModelFailureRequestTimeout
		return resp, transcript.StatusModelError, "model request timed out before the run deadline", true
	case isProviderErr && pe.ContextOverflow:
		return resp, transcript.StatusContextExhausted, "", true
	case isProviderErr && pe.Malformed:
		r.out.Turns++
		r.out.ModelFailure = transcript.ModelFailureMalformed
		return resp, transcript.StatusModelError, err.Error(), true
	default:
		// The original let these escape with no evidence; the run ends
		// here instead, keeping turns, usage and the last tool result.
		r.out.ModelFailure = transcript.ModelFailureServer
		return resp, transcript.StatusModelError, err.Error(), true
	}
}

// recordAssistant writes the assistant event and remembers its text.
func (r *run) recordAssistant(resp provider.Response) {
	text := resp.Text
	if n := len([]rune(text)); n > assistantTextCap {
		text = firstRunes(text, assistantTextCap) +
			fmt.Sprintf("\n[truncated at %d chars in the transcript; the model's reply was %d chars]", assistantTextCap, n)
	}
	calls := make([]transcript.ToolCallRecord, 0, len(resp.ToolCalls))
	for _, c := range resp.ToolCalls {
		if c.ID == "" {
			continue
		}
		calls = append(calls, transcript.ToolCallRecord{Name: c.Name, Arguments: firstRunes(c.RawArguments, callArgsCap)})
	}
	usage := transcript.Usage(resp.Usage)
	r.write(transcript.Assistant{Text: text, ToolCalls: calls, Usage: &usage})
	if strings.TrimSpace(resp.Text) != "" {
		last := firstRunes(text, lastTextCap)
		r.out.LastAssistantText = &last
	}
}

// handleText handles a reply without tool calls (E-42, E-43).
func (r *run) handleText(ctx context.Context, resp provider.Response) (status transcript.Status, final string, done bool) {
	kind := classify(resp.Text, resp.FinishReason)
	r.hist.add(provider.Message{Role: provider.RoleAssistant, Content: resp.Text})
	if kind == replyAnswer {
		return r.complete(ctx, resp.Text, "")
	}
	turn := r.out.Turns
	r.write(transcript.Nudge{Kind: kind, Turn: turn})
	if msg := r.failures.record(kindEmptyReply); msg != "" {
		return transcript.StatusModelError, msg, true
	}
	stallMsg := ""
	if stalled, nudge := r.stall.endTurn(); stalled {
		return transcript.StatusStalled, fmt.Sprintf("no progress in %d consecutive turns", r.l.StallTurns), true
	} else if nudge {
		r.write(transcript.Nudge{Kind: transcript.NudgeStall, Turn: turn})
		stallMsg = stallText(r.l.StallTurns / 2)
	}
	r.hist.add(provider.Message{Role: provider.RoleUser, Content: joinParagraphs(nudgeFor(kind), stallMsg)})
	return "", "", false
}

// handleCalls runs a reply's tool calls (E-44 … E-46).
func (r *run) handleCalls(ctx context.Context, resp provider.Response) (status transcript.Status, final string, done bool) {
	var addressable []provider.ToolCall
	var malformed []provider.ToolCall
	for _, c := range resp.ToolCalls {
		if c.ID == "" {
			malformed = append(malformed, c)
		} else {
			addressable = append(addressable, c)
		}
	}
	r.hist.add(provider.Message{Role: provider.RoleAssistant, Content: resp.Text, ToolCalls: addressable})

	abort := ""
	for _, c := range malformed {
		result := "ERROR: " + c.Error
		r.write(transcript.ToolResult{Tool: "", Args: "", Result: firstRunes(result, resultPreviewCap)})
		r.out.LastToolResult = &transcript.LastToolResult{Tool: "", Args: "", Result: firstRunes(result, resultPreviewCap)}
		if msg := r.failures.record(kindMalformedEntry); msg != "" && abort == "" {
			abort = msg
		}
	}
	if abort != "" {
		return transcript.StatusModelError, abort, true
	}

	finished := false
	timedOutThisTurn := false
	for _, c := range addressable {
		res, endStatus, endMsg := r.runCall(ctx, c, resp.FinishReason)
		if endStatus != "" {
			return endStatus, endMsg, true
		}
		if c.Name == tools.Finish && c.Error == "" {
			finished = true
		}
		if res.TimedOut {
			r.out.Timeouts++
			timedOutThisTurn = true
		}
		if res.abort != "" {
			return transcript.StatusModelError, res.abort, true
		}
	}

	timeoutMsg := ""
	if timedOutThisTurn {
		timeoutMsg = nudgeTimeout
	}
	if finished {
		return r.complete(ctx, r.summary, timeoutMsg)
	}
	if r.repeat.latched != nil {
		return transcript.StatusStuck, fmt.Sprintf("the same failing command ran %d times in a row", r.repeat.latched.Repeats), true
	}
	stallMsg := ""
	stalled, nudge := r.stall.endTurn()
	if stalled {
		return transcript.StatusStalled, fmt.Sprintf("no progress in %d consecutive turns", r.l.StallTurns), true
	}
	turn := r.out.Turns
	if timedOutThisTurn {
		r.write(transcript.Nudge{Kind: transcript.NudgeTimeout, Turn: turn})
	}
	if nudge {
		r.write(transcript.Nudge{Kind: transcript.NudgeStall, Turn: turn})
		stallMsg = stallText(r.l.StallTurns / 2)
	}
	malformedMsg := ""
	if len(malformed) > 0 {
		malformedMsg = malformedText(len(malformed))
	}
	if msg := joinParagraphs(malformedMsg, timeoutMsg, stallMsg); msg != "" {
		r.hist.add(provider.Message{Role: provider.RoleUser, Content: msg})
	}
	return "", "", false
}

// callResult is one addressable call's outcome as the turn needs it.
type callResult struct {
	TimedOut bool
	abort    string
}

// runCall executes one addressable call (E-45). endStatus is set when the
// run ends because of it (budget, sandbox, cancellation).
func (r *run) runCall(ctx context.Context, c provider.ToolCall, finishReason string) (res callResult, endStatus transcript.Status, endMsg string) {
	var result string
	var mutated bool
	var failure string
	rawArgs := c.RawArguments
	if rawArgs == "" {
		rawArgs = "{}"
	}
	switch {
	case c.Error != "":
		failure = kindMalformedArgs
		if finishReason == "length" {
			result = "ERROR: " + argsCutOff
		} else {
			result = "ERROR: " + c.Error
		}
	case c.Name == tools.Finish:
		s, _ := c.Arguments["summary"].(string)
		r.summary = s
		result = "run finished"
	default:
		out, err := r.l.Tools.Execute(ctx, c.Name, c.Arguments, r.deadline)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return res, transcript.StatusInterrupted, ""
			case sandbox.IsBudget(err):
				return res, transcript.StatusBudgetExceeded, err.Error()
			default:
				return res, transcript.StatusSandboxError, err.Error()
			}
		}
		result, mutated, failure = out.Text, out.Mutated, out.FailureKind
		res.TimedOut = out.TimedOut
		if out.Blocked {
			r.write(transcript.GuardrailBlock{Tool: c.Name, Args: out.Args, Reason: out.Text})
		}
	}

	if failure != "" {
		if msg := r.failures.record(failure); msg != "" {
			res.abort = msg
		}
	} else if c.Name != tools.Finish {
		r.failures.reset()
	}

	if c.Name != tools.Finish && c.Error == "" {
		fingerprint := ""
		if c.Name == tools.Bash {
			cmd, _ := c.Arguments["command"].(string)
			fp := policy.Fingerprint(cmd, result)
			fingerprint = string(fp[:])
			r.repeat.observe(cmd, result)
		}
		r.stall.observe(c.Name, tools.Canonical(c.Name, c.Arguments), result, mutated, fingerprint)
	}

	ev := transcript.ToolResult{Tool: c.Name, Args: firstRunes(rawArgs, resultArgsCap), Result: firstRunes(result, resultPreviewCap), TimedOut: res.TimedOut}
	pause.At(pause.ToolDone) // the call did its work, the transcript does not say so yet
	r.write(ev)
	if c.Name != tools.Finish {
		r.out.LastToolResult = &transcript.LastToolResult{Tool: ev.Tool, Args: ev.Args, Result: ev.Result}
	}
	r.hist.add(provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, Content: result})
	return res, "", ""
}

// complete ends the run as completed, or runs the verify step (E-52).
// pending is text the next user message must carry if the run continues.
func (r *run) complete(ctx context.Context, final, pending string) (status transcript.Status, msg string, done bool) {
	v := r.l.Verify
	if v == nil || v.Command == "" {
		return transcript.StatusCompleted, final, true
	}
	timeout := min(max(v.Timeout, time.Second), 600*time.Second)
	pause.At(pause.Verify)
	res, err := r.l.Tools.RunVerify(ctx, verifyScript(v.Command), timeout)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return transcript.StatusInterrupted, "", true
		case sandbox.IsBudget(err):
			return transcript.StatusBudgetExceeded, err.Error(), true
		default:
			return transcript.StatusSandboxError, err.Error(), true
		}
	}
	r.verifyN++
	exit := res.Exit
	passed := exit != nil && *exit == 0
	reason := ""
	if passed && len(res.Run.Changed) > 0 {
		// What it judged is not what it left: it does not count.
		passed = false
		reason = "the tree changed while verify ran: " + strings.Join(res.Run.Changed, ", ")
	}
	tail := lastRunes(res.Text, verifyTailCap)
	r.out.Verify = &transcript.VerifyResult{
		Command: v.Command, ExitCode: exit, OutputTail: tail, Rounds: r.verifyN, Passed: passed,
		Tree: res.Run.Tree, Reason: reason,
	}
	r.write(transcript.Verify{Round: r.verifyN, ExitCode: exit, Passed: passed})
	if passed {
		return transcript.StatusCompleted, final, true
	}
	if r.verifyN > v.Rounds {
		return transcript.StatusVerifyFailed, final, true
	}
	r.repeat.clear()
	r.hist.add(provider.Message{Role: provider.RoleUser, Content: joinParagraphs(
		verifyFailedText(r.verifyN, v.Rounds, v.Command, exit, tail, reason, res.Run.Sealed), pending)})
	return "", "", false
}

// progressReporter turns a streamed reply's token counts into at most one
// model_progress event a second.
type progressReporter struct {
	r     *run
	turn  int
	start time.Time
	last  time.Time
}

func newProgressReporter(r *run, turn int) *progressReporter {
	now := r.l.now()
	return &progressReporter{r: r, turn: turn, start: now, last: now}
}

func (p *progressReporter) report(pr provider.Progress) {
	now := p.r.l.now()
	if now.Sub(p.last) < time.Second {
		return
	}
	p.last = now
	rate := float64(pr.Tokens) / now.Sub(p.start).Seconds()
	p.r.write(transcript.ModelProgress{
		Turn: p.turn, Tokens: pr.Tokens, TokensPerS: transcript.Float(float64(int(rate*10)) / 10), Tail: pr.Tail.String(),
	})
}
