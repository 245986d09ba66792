// Package live turns a run's transcript into what mission control shows
// while it runs: one compact Entry per event (decoded off the UI loop) and
// a State folded from them (turns, tokens, context fill, the last tool
// call, whether the model is being waited for or is streaming). It is
// pure: no I/O, no terminal; text is kept as the worker wrote it and made
// terminal-safe only where it is drawn.
package live

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// Kind says what an Entry is.
type Kind uint8

// Entry kinds.
const (
	KindUnknown Kind = iota
	KindRunStart
	KindSetup
	KindModelRequest
	KindProgress
	KindAssistant
	KindToolResult
	KindGuardrail
	KindNudge
	KindSandboxReset
	KindVerify
	KindRunEnd
	KindProblem // a damaged line or a watch failure
	KindReset   // the transcript was replaced: forget what came before
)

// String names the kind as the transcript view labels it.
func (k Kind) String() string {
	switch k {
	case KindRunStart:
		return "run_start"
	case KindSetup:
		return "setup"
	case KindModelRequest:
		return "model_request"
	case KindProgress:
		return "model_progress"
	case KindAssistant:
		return "assistant"
	case KindToolResult:
		return "tool_result"
	case KindGuardrail:
		return "guardrail_block"
	case KindNudge:
		return "nudge"
	case KindSandboxReset:
		return "sandbox_reset"
	case KindVerify:
		return "verify"
	case KindRunEnd:
		return "run_end"
	case KindProblem:
		return "problem"
	case KindReset:
		return "reset"
	}
	return "event"
}

// Call is one tool call an assistant reply made.
type Call struct {
	Name string
	Args string
}

// Start is what run_start tells.
type Start struct {
	Task          string
	Model         string
	Repo          string
	Sandbox       string
	MaxTurns      int
	ContextWindow int
}

// Entry is one transcript event, reduced to what the UI shows. Strings
// are the worker's raw text: render them through termsafe.
type Entry struct {
	Kind Kind
	Line int
	TS   time.Time
	Turn int
	// Tool and Args: a tool result's call, a guardrail block's tool.
	Tool string
	Args string
	// Text: an assistant's text, a tool result, a block's reason, a
	// nudge's kind, a reset's reason, a problem, a run_end's error or
	// final text, the end of a streaming reply's text so far.
	Text  string
	Calls []Call
	Usage transcript.Usage
	// Model progress and requests.
	Tokens     int
	TokensPerS float64
	EstPrompt  int
	// Status is run_end's status; TimedOut a bash timeout; ExitCode and
	// Passed a verify round's or setup's.
	Status   string
	TimedOut bool
	ExitCode *int
	Passed   bool
	Start    *Start
	// Trimmed says the texts are previews: the whole entry is line Line
	// of the transcript (see ReadEntry).
	Trimmed bool
}

// Terminal reports whether the entry ends the run.
func (e Entry) Terminal() bool { return e.Kind == KindRunEnd }

// FromItem converts one follower item.
func FromItem(it transcript.Item) Entry {
	switch it.Kind {
	case transcript.ItemReset:
		return Entry{Kind: KindReset, TS: time.Now()}
	case transcript.ItemProblem:
		return Entry{Kind: KindProblem, Line: it.Problem.Line, Text: it.Problem.Error()}
	}
	return FromLine(it.Line)
}

// FromLine decodes one transcript line into an Entry. A line whose fields
// have the wrong types still gives what could be read.
func FromLine(l transcript.Line) Entry {
	e := Entry{Line: l.Number, TS: l.TS}
	ev, err := l.Decode()
	switch ev := ev.(type) {
	case transcript.RunStart:
		e.Kind = KindRunStart
		e.Text = ev.Task
		e.Start = &Start{
			Task: ev.Task, Model: ev.Model, Repo: ev.Repo, Sandbox: sandboxName(ev.Sandbox),
			MaxTurns: ev.MaxTurns, ContextWindow: ev.ContextWindow,
		}
	case transcript.Setup:
		e.Kind = KindSetup
		e.Args = ev.Command
		e.Text = ev.Output
		e.ExitCode = ev.ExitCode
		e.Passed = ev.ExitCode != nil && *ev.ExitCode == 0
	case transcript.ModelRequest:
		e.Kind = KindModelRequest
		e.Turn = ev.Turn
		e.EstPrompt = ev.EstPromptTokens
	case transcript.ModelProgress:
		e.Kind = KindProgress
		e.Turn = ev.Turn
		e.Tokens = ev.Tokens
		e.TokensPerS = float64(ev.TokensPerS)
		e.Text = ev.Tail
	case transcript.Assistant:
		e.Kind = KindAssistant
		e.Text = ev.Text
		for _, c := range ev.ToolCalls {
			e.Calls = append(e.Calls, Call{Name: c.Name, Args: c.Arguments})
		}
		if ev.Usage != nil {
			e.Usage = *ev.Usage
		}
	case transcript.ToolResult:
		e.Kind = KindToolResult
		e.Tool = ev.Tool
		e.Args = ev.Args
		e.Text = ev.Result
		e.TimedOut = ev.TimedOut
	case transcript.GuardrailBlock:
		e.Kind = KindGuardrail
		e.Tool = ev.Tool
		if cmd, ok := ev.Args["command"].(string); ok {
			e.Args = cmd
		}
		e.Text = ev.Reason
	case transcript.Nudge:
		e.Kind = KindNudge
		e.Turn = ev.Turn
		e.Text = ev.Kind
	case transcript.SandboxReset:
		e.Kind = KindSandboxReset
		e.Text = ev.Reason
	case transcript.Verify:
		e.Kind = KindVerify
		e.Turn = ev.Round
		e.ExitCode = ev.ExitCode
		e.Passed = ev.Passed
	case transcript.RunEnd:
		e.Kind = KindRunEnd
		e.Status = string(ev.Status)
		e.Turn = ev.Turns
		e.Usage = ev.Usage
		if ev.LastAssistantText != nil {
			e.Text = *ev.LastAssistantText
		}
	case transcript.RunEndFailure:
		e.Kind = KindRunEnd
		e.Status = string(ev.Status)
		e.Text = ev.Error
	default:
		e.Kind = KindUnknown
		e.Text = l.Event
	}
	if err != nil && e.Kind != KindUnknown {
		e.Text = strings.TrimSpace(e.Text + "\n[" + err.Error() + "]")
	}
	return e
}

// sandboxName reads run_start's sandbox: the string "none" or an object.
func sandboxName(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case map[string]any:
		if b, ok := s["backend"].(string); ok && b != "" {
			return b
		}
		if _, ok := s["landlock"]; ok {
			return "none"
		}
		return "docker"
	}
	return ""
}

// Summary is a one-line description of a tool call: "bash: go test ./..."
// or "edit_file invoice.py". args is the call's raw JSON arguments.
func Summary(tool, args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return strings.TrimSpace(tool + " " + args)
	}
	for _, k := range []string{"command", "path", "pattern", "summary", "query"} {
		if v, ok := m[k].(string); ok && v != "" {
			if k == "command" {
				return tool + ": " + v
			}
			return tool + " " + v
		}
	}
	return tool
}

// Outcome classifies a tool result the way `runs show` does.
func Outcome(e Entry) string {
	switch {
	case e.TimedOut || strings.HasPrefix(e.Text, "ERROR: command timed out after "):
		return "timed out"
	case strings.HasPrefix(e.Text, "ERROR"):
		return "ERROR"
	case strings.HasPrefix(e.Text, "BLOCKED"):
		return "BLOCKED"
	}
	return "ok"
}

// Describe is the entry's one-line title in the transcript view.
func Describe(e Entry) string {
	switch e.Kind {
	case KindRunStart:
		return "run started: " + firstLine(e.Text)
	case KindSetup:
		return fmt.Sprintf("setup: %s (%s)", e.Args, exitText(e.ExitCode))
	case KindModelRequest:
		return fmt.Sprintf("turn %d: asked the model (~%d prompt tokens)", e.Turn, e.EstPrompt)
	case KindProgress:
		return fmt.Sprintf("turn %d: %d tokens, %.1f tok/s", e.Turn, e.Tokens, e.TokensPerS)
	case KindAssistant:
		names := make([]string, 0, len(e.Calls))
		for _, c := range e.Calls {
			names = append(names, c.Name)
		}
		text := firstLine(e.Text)
		if len(names) > 0 {
			if text != "" {
				text += " "
			}
			text += "[" + strings.Join(names, ", ") + "]"
		}
		if text == "" {
			text = "(no text)"
		}
		return "assistant: " + text
	case KindToolResult:
		return fmt.Sprintf("%s [%s]", Summary(e.Tool, e.Args), Outcome(e))
	case KindGuardrail:
		return "blocked: " + firstLine(e.Args)
	case KindNudge:
		return "nudge: " + e.Text
	case KindSandboxReset:
		return "sandbox reset: " + e.Text
	case KindVerify:
		if e.Passed {
			return fmt.Sprintf("verify round %d passed", e.Turn)
		}
		return fmt.Sprintf("verify round %d failed (%s)", e.Turn, exitText(e.ExitCode))
	case KindRunEnd:
		return "run ended: " + e.Status
	case KindProblem:
		return "unreadable: " + e.Text
	case KindReset:
		return "transcript replaced"
	}
	return "event: " + e.Text
}

func exitText(code *int) string {
	if code == nil {
		return "no exit code"
	}
	return fmt.Sprintf("exit %d", *code)
}

// firstLine is s's first non-blank line.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}

// FirstLine is s's first non-blank line, trimmed.
func FirstLine(s string) string { return firstLine(s) }
