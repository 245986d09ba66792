package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// Workspace is the tree a run's tools act on, and the shell they run in.
//
// Tool-level failures (a missing file, an ambiguous edit, a command that
// exits non-zero) are results: strings the model reads, the ones that
// start with "ERROR: " included, with a nil error. A non-nil error ends the
// run: a *BudgetError (the tree grew past its caps), a *SandboxError (the
// backend broke), or the context's error.
type Workspace interface {
	// DisplayRoot is the path the model is told its files live at (the
	// worktree on the host, /work in a container).
	DisplayRoot() string

	ReadFile(ctx context.Context, path string, offset, limit int) (string, error)
	WriteFile(ctx context.Context, path, content string) (string, error)
	EditFile(ctx context.Context, path, oldString, newString string) (string, error)
	// InsertText inserts text before (after=false) or after the line(s)
	// holding anchor.
	InsertText(ctx context.Context, path, anchor, text string, after bool) (string, error)
	ApplyEdits(ctx context.Context, path string, edits []Edit) (string, error)
	ListDir(ctx context.Context, path string) (string, error)
	Grep(ctx context.Context, args GrepArgs) (string, error)
	// Bash runs command in the tree's root. It is only called for commands
	// the deny-list let through.
	Bash(ctx context.Context, command string, timeout time.Duration) (BashResult, error)

	// Verify runs the verify step's command (see VerifyRun): on the
	// sealed tree, in a fresh session, the tree checked afterwards. A
	// failing command is a result; an error ends the run as Bash's do.
	Verify(ctx context.Context, command string, timeout time.Duration) (VerifyRun, error)

	// Finalize seals the tree, measures it and computes the run's
	// changes. It is called once, after the loop ended.
	Finalize(ctx context.Context) (Finalization, error)
	// Close releases everything the workspace holds. Idempotent.
	Close() error
}

// Edit is one exact replacement of apply_edits.
type Edit struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// GrepArgs are grep's arguments after validation.
type GrepArgs struct {
	Pattern string
	Path    string // "." when not given
	Glob    string // "" when not given
	Timeout time.Duration
}

// BashResult is what a finished (or killed) command left.
type BashResult struct {
	// ExitCode is the command's exit status; -1 when it was killed or
	// could not start.
	ExitCode int
	// Output is stdout and stderr merged, decoded as UTF-8 with
	// replacement, at most the first 1 MiB read.
	Output string
	// Capped is set when more than 1 MiB of output was discarded.
	Capped bool
	// TimedOut is set when the timeout killed the command's process group.
	TimedOut bool
	// Timeout is the limit the command ran under.
	Timeout time.Duration
	// LaunchError is set when the command could not be started.
	LaunchError string
}

// Finalization is what a workspace reports once the loop has ended: the
// run's result fields, defined once in the transcript package (their JSON
// names are the run_end and run.json fields of the machine contract).
type Finalization = transcript.Artifacts

// BudgetError ends a run whose tree grew past its caps (status
// budget_exceeded). Reason is the contract's text, e.g. "worktree exceeds
// 2048 MB".
type BudgetError struct{ Reason string }

func (e *BudgetError) Error() string { return e.Reason }

// SandboxError ends a run whose backend failed (status sandbox_error).
type SandboxError struct {
	Op  string
	Err error
}

func (e *SandboxError) Error() string {
	if e.Op == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Err)
}

func (e *SandboxError) Unwrap() error { return e.Err }

// IsBudget reports whether err ends the run as budget_exceeded.
func IsBudget(err error) bool {
	var be *BudgetError
	return errors.As(err, &be)
}

// IsSandbox reports whether err ends the run as sandbox_error.
func IsSandbox(err error) bool {
	var se *SandboxError
	return errors.As(err, &se)
}

// Limits are a workspace's caps on the tree it holds.
type Limits struct {
	MaxBytes   int64 // --max-worktree-mb in bytes
	MaxEntries int64 // --max-worktree-files
}
