package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/host/confine"
)

const (
	// maxOutput is how much of a command's merged output is kept; the
	// rest is read and dropped so the command never blocks on a full pipe.
	maxOutput = 1 << 20
	// waitDelay bounds how long a cancelled command may take to die once
	// its group was sent SIGKILL, before Wait stops waiting for it.
	waitDelay = 2 * time.Second
	// drainGrace bounds reading the output after bash and its group are
	// gone. Only a process outside both (possible when bash runs without
	// a PID namespace) can hold the pipe open longer; it is not waited for.
	drainGrace = time.Second
)

// Bash runs command with bash -c in the worktree (E-35): confined, with
// the E-38 environment, stdin /dev/null, stdout and stderr merged, in a
// new session. At the timeout the whole process group (and namespace) is
// killed and the result is TimedOut with no output; when bash exits, every
// job it left behind is killed too, so "sleep 30 & echo hi" returns at
// once and the background job never runs on. ctx ending kills it the same
// way and returns ctx's error. After the command the tree is measured, and
// a breached budget returns a *sandbox.BudgetError.
func (w *Workspace) Bash(ctx context.Context, command string, timeout time.Duration) (sandbox.BashResult, error) {
	if err := w.usable(ctx); err != nil {
		return sandbox.BashResult{ExitCode: -1, Timeout: timeout}, err
	}
	res, err := w.runBash(ctx, command, timeout)
	if err != nil {
		return res, err
	}
	// The tree is measured while the model reads the result; the next
	// operation waits for the verdict (see budget).
	w.budget.StartWalk(context.WithoutCancel(ctx), true)
	return res, nil
}

// runBash runs one command and fills its result faithfully; errors are
// only for ending the run (ctx, broken confinement).
func (w *Workspace) runBash(ctx context.Context, command string, timeout time.Duration) (sandbox.BashResult, error) {
	res := sandbox.BashResult{ExitCode: -1, Timeout: timeout}
	if err := w.bashReady(ctx); err != nil {
		return res, err
	}
	if w.bash == "" {
		res.LaunchError = "bash not found on PATH"
		return res, nil
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// One pipe for both streams, handed to bash as a file: exec.Cmd then
	// starts no copying goroutine, so Wait returns when bash exits, even
	// while a background job still holds the pipe.
	r, pw, err := os.Pipe()
	if err != nil {
		res.LaunchError = fmt.Sprintf("create output pipe: %v", err)
		return res, nil
	}
	defer func() { _ = r.Close() }() // a read end: closing it loses nothing
	cmd, err := w.startBash(runCtx, command, func(c *exec.Cmd) {
		c.Dir = w.worktree
		c.Env = w.bashEnv
		c.Stdout = pw
		c.Stderr = pw
		c.Cancel = func() error { return sandbox.KillGroup(c) }
		c.WaitDelay = waitDelay
	})
	// bash holds its own copy of the write end; ours must go, or reading
	// the pipe would never see end of file. Closing a pipe end cannot lose data.
	_ = pw.Close()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return res, fmt.Errorf("bash: %w", ctx.Err())
		case runCtx.Err() != nil:
			res.TimedOut = true
			return res, nil
		case errors.Is(err, confine.ErrConfine):
			return res, &sandbox.SandboxError{Op: "confine bash", Err: err}
		}
		res.LaunchError = err.Error()
		return res, nil
	}

	end, err := sandbox.AwaitCommand(ctx, runCtx, cmd, sandbox.StartDrain(r, maxOutput), drainGrace, nil)
	res.ExitCode, res.TimedOut, res.Output, res.Capped = end.ExitCode, end.TimedOut, end.Output, end.Capped
	return res, err
}

// bashReady completes bash's environment and policy with the python user
// site (E-38) before the first command, waiting for python's answer.
func (w *Workspace) bashReady(ctx context.Context) error {
	w.bashOnce.Do(func() {
		site := pythonUserSite(ctx, w.env, w.operatorEnv, w.scratch)
		w.bashEnv = bashEnv(w.env, w.home, w.worktree, w.scratch, site)
		if site == "" {
			return
		}
		l, err := w.layout(w.env, w.home, site)
		if err != nil {
			w.bashErr = &sandbox.SandboxError{Op: "confine bash", Err: err}
			return
		}
		p := l.policy()
		p.Bash, p.Namespace, p.ABI = w.bash, w.policy.Namespace, w.policy.ABI
		w.policy = p
	})
	return w.bashErr
}
