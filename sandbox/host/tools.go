package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// Every tool is one call to the tool server in the jail, which runs the
// same fsops code and budget as in docker mode; the file tools, grep and
// list_dir are toolbox.FileTools over textTool. The host adds what the
// worker cannot forge: the size watch while a command runs, and the end
// of the run when the jail dies.

// Bash runs command in the worktree through the tool server (E-35): in a
// session of its own inside the jail, its whole group killed at the
// timeout and when it exits, and whatever left the group killed by the
// server, the jail's init. While it runs the host measures the tree at
// least once a second and kills the jail on a breach, so a command cannot
// fill the disk before anyone looks (the run ends budget_exceeded). After
// it, the server walks the tree while the model reads the result; the next
// command or writing tool takes the verdict first.
func (w *Workspace) Bash(ctx context.Context, command string, timeout time.Duration) (sandbox.BashResult, error) {
	res := sandbox.BashResult{ExitCode: -1, Timeout: timeout}
	c, err := w.client(ctx)
	if err != nil {
		return res, err
	}
	if err := w.settleBudget(ctx, c); err != nil {
		return res, err
	}
	w.watch.begin()
	if pause.Armed(pause.MidBash) {
		// The announcement goes out while the command runs: the test
		// kills the process in the middle of it.
		go pause.At(pause.MidBash)
	}
	reply, err := c.Bash(ctx, command, timeout)
	w.watch.end()
	if err != nil {
		return res, w.failed(ctx, "bash", err)
	}
	// Only bash writes the git dir, and the tool server does not measure
	// it: its verdict is taken here, after every command.
	if breach, merr := w.measureGitDir(ctx); merr == nil && breach != "" {
		w.breach(breach)
		return res, w.currentViolation()
	}
	res = reply.BashResult
	if reply.Leftover > 0 {
		// The server is the jail's init and kills every process of the
		// jail after each command: one that survived it is stuck in the
		// kernel, and could change the tree behind the run's back (during
		// verify, during the export). The jail is no longer a sandbox.
		w.stopJail()
		return res, &sandbox.SandboxError{Op: "bash", Err: fmt.Errorf("%d processes of the command survived SIGKILL; the jail was stopped", reply.Leftover)}
	}
	w.mu.Lock()
	w.walkPending = true
	w.mu.Unlock()
	return res, nil
}

// textTool makes one file tool call; a writing one is followed by the
// budget's verdict, which the server keeps.
func (w *Workspace) textTool(ctx context.Context, op string, mutates bool, f func(*toolbox.Client) (string, error)) (string, error) {
	c, err := w.client(ctx)
	if err != nil {
		return "", err
	}
	out, err := f(c)
	if err != nil {
		if errors.Is(err, toolbox.ErrRequestTooLarge) {
			return "ERROR: " + err.Error(), nil
		}
		return "", w.failed(ctx, op, err)
	}
	if mutates {
		if err := w.checkBudget(ctx, c); err != nil {
			return "", err
		}
	}
	return out, nil
}

// failed turns a failed call into the error that ends the run: the
// context's, the breach that killed the jail, or a broken sandbox.
func (w *Workspace) failed(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if v := w.currentViolation(); v != nil {
		return v
	}
	if errors.Is(err, toolbox.ErrServerGone) {
		return &sandbox.SandboxError{Op: op, Err: fmt.Errorf("the jail's tool server is gone: %w", err)}
	}
	return &sandbox.SandboxError{Op: op, Err: err}
}

// settleBudget takes the verdict of the walk the server started after the
// last command, if one is pending.
func (w *Workspace) settleBudget(ctx context.Context, c *toolbox.Client) error {
	w.mu.Lock()
	pending := w.walkPending
	w.mu.Unlock()
	if !pending {
		return nil
	}
	return w.checkBudget(ctx, c)
}

// checkBudget asks the server for its budget's verdict: the totals of its
// last walk adjusted by every writing tool since, after any walk under way
// ended. A breach ends the run (budget_exceeded).
func (w *Workspace) checkBudget(ctx context.Context, c *toolbox.Client) error {
	w.mu.Lock()
	w.walkPending = false
	w.mu.Unlock()
	if w.cfg.Limits.MaxBytes <= 0 && w.cfg.Limits.MaxEntries <= 0 {
		return nil
	}
	m, err := c.Budget(ctx)
	if err != nil {
		return w.failed(ctx, "measure", err)
	}
	if m.Violation != "" {
		w.mu.Lock()
		if w.violation == nil {
			w.violation = &sandbox.BudgetError{Reason: strings.TrimSpace(m.Violation)}
		}
		v := w.violation
		w.mu.Unlock()
		return v
	}
	return nil
}
