package tools

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/sandbox"
)

// Failure kinds a tool call can record with the loop's failure tracker.
const (
	KindUnknownTool = "unknown_tool"
	KindBadArgs     = "bad_args"
)

// Output caps applied to every result (E-27 step 8): above each tool's own
// cap, so the tool's note survives.
const (
	outerCap     = 8512
	outerCapBash = 10512
)

// Result is the outcome of one executed call.
type Result struct {
	// Text is what the model reads.
	Text string
	// FailureKind is KindUnknownTool or KindBadArgs, or "" when the call
	// ran (successfully or not).
	FailureKind string
	// Args are the validated arguments, with the injected timeout.
	Args map[string]any
	// Blocked is set when the deny-list refused a bash command; Text is
	// then the BLOCKED message.
	Blocked bool
	// TimedOut is set when a bash command hit its timeout.
	TimedOut bool
	// Mutated is set when a mutating tool succeeded.
	Mutated bool
}

// Registry executes tool calls against a workspace.
type Registry struct {
	ws     sandbox.Workspace
	policy policy.Options
	now    func() time.Time
}

// New returns a registry dispatching to ws, with the deny-list configured
// by guard (host mode: every rule and the worktree paths; docker: the
// rules that apply in a container).
func New(ws sandbox.Workspace, guard policy.Options) *Registry {
	return &Registry{ws: ws, policy: guard, now: time.Now}
}

// Execute runs one call through the pipeline of E-27: unknown tool,
// argument validation, deadline, timeout injection, dispatch, output cap.
// finish is the loop's business and never reaches here. A non-nil error
// ends the run (budget, sandbox, cancellation).
func (r *Registry) Execute(ctx context.Context, name string, args map[string]any, deadline time.Time) (Result, error) {
	s, ok := specByName[name]
	if !ok || name == Finish {
		return Result{
			Text: fmt.Sprintf("ERROR: unknown tool '%s'. Available: %s. To end the run call finish(summary=...).",
				name, strings.Join(Names, ", ")),
			FailureKind: KindUnknownTool,
		}, nil
	}
	valid, detail := s.validate(args)
	if detail != "" {
		return Result{Text: fmt.Sprintf("ERROR: bad arguments for %s: %s", name, detail), FailureKind: KindBadArgs}, nil
	}
	left := deadline.Sub(r.now())
	if !deadline.IsZero() && left <= 0 {
		return Result{Text: "ERROR: run deadline exceeded; stop calling tools and summarize what you have done.", Args: valid}, nil
	}
	if name == Bash || name == Grep {
		valid["timeout"] = injectTimeout(name, valid["timeout"], deadline, left)
	}

	res := Result{Args: valid}
	var err error
	switch name {
	case Bash:
		res, err = r.bash(ctx, valid)
	default:
		res.Text, err = r.dispatch(ctx, name, valid)
	}
	if err != nil {
		return Result{Args: valid}, err
	}
	res.Args = valid
	limit := outerCap
	if name == Bash {
		limit = outerCapBash
	}
	if capped, cut := cutRunes(res.Text, limit); cut {
		res.Text = capped + fmt.Sprintf("\n[output truncated at %d chars]", limit)
	}
	res.Mutated = IsMutating(name) && !strings.HasPrefix(res.Text, "ERROR")
	return res, nil
}

// injectTimeout is the requested-or-default timeout, at most the tool's
// maximum and at most the whole seconds left before the deadline (at least
// one).
func injectTimeout(name string, requested any, deadline time.Time, left time.Duration) int {
	t, _ := requested.(int)
	if name == Bash {
		t = min(max(t, 1), bashMaxTimeout)
	} else {
		t = max(t, 1)
	}
	if !deadline.IsZero() {
		t = min(t, max(1, int(math.Floor(left.Seconds()))))
	}
	return t
}

// RunBash runs a command through the deny-list and the workspace, as both
// the bash tool and the verify step do. blocked is set when the deny-list
// refused it; the text is then the BLOCKED message.
func (r *Registry) RunBash(ctx context.Context, command string, timeout time.Duration) (text string, exit *int, timedOut, blocked bool, err error) {
	if rule, hit := policy.Check(command, r.policy); hit {
		return rule.Message(), nil, false, true, nil
	}
	br, err := r.ws.Bash(ctx, command, timeout)
	if err != nil {
		return "", nil, false, false, err
	}
	if !br.TimedOut && br.LaunchError == "" {
		code := br.ExitCode
		exit = &code
	}
	return FormatBash(br), exit, br.TimedOut, false, nil
}

// Verified is what a verify step left: the command's result as the model
// reads it, its exit code (nil when it timed out, could not run or was
// refused), and what it judged (sandbox.VerifyRun).
type Verified struct {
	Text    string
	Exit    *int
	Blocked bool
	Run     sandbox.VerifyRun
}

// RunVerify runs the verify command through the deny-list and the
// workspace's verify step: on the sealed tree, in a fresh session.
func (r *Registry) RunVerify(ctx context.Context, command string, timeout time.Duration) (Verified, error) {
	if rule, hit := policy.Check(command, r.policy); hit {
		return Verified{Text: rule.Message(), Blocked: true}, nil
	}
	run, err := r.ws.Verify(ctx, command, timeout)
	if err != nil {
		return Verified{}, err
	}
	v := Verified{Text: FormatBash(run.BashResult), Run: run}
	if !run.TimedOut && run.LaunchError == "" {
		code := run.ExitCode
		v.Exit = &code
	}
	return v, nil
}

func (r *Registry) bash(ctx context.Context, args map[string]any) (Result, error) {
	cmd := args["command"].(string)
	timeout := time.Duration(args["timeout"].(int)) * time.Second
	text, _, timedOut, blocked, err := r.RunBash(ctx, cmd, timeout)
	return Result{Text: text, TimedOut: timedOut, Blocked: blocked}, err
}

func (r *Registry) dispatch(ctx context.Context, name string, a map[string]any) (string, error) {
	str := func(k string) string { s, _ := a[k].(string); return s }
	num := func(k string) int { n, _ := a[k].(int); return n }
	switch name {
	case ReadFile:
		return r.ws.ReadFile(ctx, str("path"), num("offset"), num("limit"))
	case WriteFile:
		return r.ws.WriteFile(ctx, str("path"), str("content"))
	case EditFile:
		return r.ws.EditFile(ctx, str("path"), str("old_string"), str("new_string"))
	case InsertBefore, InsertAfter:
		return r.ws.InsertText(ctx, str("path"), str("anchor"), str("text"), name == InsertAfter)
	case ApplyEdits:
		items, _ := a["edits"].([]any)
		edits := make([]sandbox.Edit, 0, len(items))
		for _, it := range items {
			m, _ := it.(map[string]any)
			o, _ := m["old"].(string)
			n, _ := m["new"].(string)
			edits = append(edits, sandbox.Edit{Old: o, New: n})
		}
		return r.ws.ApplyEdits(ctx, str("path"), edits)
	case ListDir:
		return r.ws.ListDir(ctx, str("path"))
	case Grep:
		return r.ws.Grep(ctx, sandbox.GrepArgs{
			Pattern: str("pattern"), Path: str("path"), Glob: str("glob"),
			Timeout: time.Duration(num("timeout")) * time.Second,
		})
	}
	return "", fmt.Errorf("tool %q has no dispatcher", name) // unreachable: names come from specs
}
