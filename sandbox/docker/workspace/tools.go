package workspace

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// errStopped is a tool call after Finalize or Close.
var errStopped = errors.New("the docker sandbox is stopped")

// ReadFile is the read_file tool, answered by the tool server.
func (w *Workspace) ReadFile(ctx context.Context, path string, offset, limit int) (string, error) {
	return w.textTool(ctx, "read_file", false, func(c *toolbox.Client) (string, error) {
		return c.ReadFile(ctx, path, offset, limit)
	})
}

// WriteFile is the write_file tool.
func (w *Workspace) WriteFile(ctx context.Context, path, content string) (string, error) {
	out, err := w.textTool(ctx, "write_file", true, func(c *toolbox.Client) (string, error) {
		return c.WriteFile(ctx, path, content)
	})
	pause.At(pause.MidWrite) // the file is in the volume, and nowhere else
	return out, err
}

// EditFile is the edit_file tool.
func (w *Workspace) EditFile(ctx context.Context, path, oldString, newString string) (string, error) {
	return w.textTool(ctx, "edit_file", true, func(c *toolbox.Client) (string, error) {
		return c.EditFile(ctx, path, oldString, newString)
	})
}

// InsertText is the insert_before and insert_after tools.
func (w *Workspace) InsertText(ctx context.Context, path, anchor, text string, after bool) (string, error) {
	return w.textTool(ctx, "insert_text", true, func(c *toolbox.Client) (string, error) {
		return c.InsertText(ctx, path, anchor, text, after)
	})
}

// ApplyEdits is the apply_edits tool.
func (w *Workspace) ApplyEdits(ctx context.Context, path string, edits []sandbox.Edit) (string, error) {
	return w.textTool(ctx, "apply_edits", true, func(c *toolbox.Client) (string, error) {
		return c.ApplyEdits(ctx, path, edits)
	})
}

// ListDir is the list_dir tool.
func (w *Workspace) ListDir(ctx context.Context, path string) (string, error) {
	return w.textTool(ctx, "list_dir", false, func(c *toolbox.Client) (string, error) {
		return c.ListDir(ctx, path)
	})
}

// Grep is the grep tool.
func (w *Workspace) Grep(ctx context.Context, args sandbox.GrepArgs) (string, error) {
	return w.textTool(ctx, "grep", false, func(c *toolbox.Client) (string, error) {
		return c.Grep(ctx, args)
	})
}

// Bash runs command in /work through the tool server, which kills its
// whole process group at the timeout and, being the container's subreaper,
// every job the command left. Afterwards (S-32) nothing of the command may
// be left and the container must not have run out of memory, else it is
// reset. The tree is then measured by the server in the background while
// the model reads the result; the next operation that can change the tree
// (a writing file tool, bash, the end of the run) first takes the verdict.
// A reset during the command is its result (LaunchError); one after it is
// noted in its output.
func (w *Workspace) Bash(ctx context.Context, command string, timeout time.Duration) (sandbox.BashResult, error) {
	res := sandbox.BashResult{ExitCode: -1, Timeout: timeout}
	if err := w.waitMeasured(ctx); err != nil {
		return res, err
	}
	s, err := w.current()
	if err != nil {
		return res, err
	}
	if note, err := w.settleBudget(ctx, s); err != nil {
		return res, err
	} else if note != "" {
		// The previous command's walk failed and the sandbox was reset:
		// this command was not run.
		res.LaunchError = note
		return res, nil
	}
	w.wd.bashBegin()
	if pause.Armed(pause.MidBash) {
		// The announcement goes out while the command runs: the test
		// kills the process in the middle of it.
		go pause.At(pause.MidBash)
	}
	reply, err := s.tb.Bash(ctx, command, timeout)
	w.wd.bashEnd()
	if err != nil {
		notice, ferr := w.toolFailed(ctx, "bash", s, err)
		if ferr != nil {
			return res, ferr
		}
		res.LaunchError = strings.TrimPrefix(notice, "ERROR: ")
		return res, nil
	}
	res = reply.BashResult
	note, err := w.afterBash(ctx, s, reply.Leftover, reply.OOMKilled)
	if err != nil {
		return res, err
	}
	if note != "" {
		res.Output += "\n[" + note + "]"
	}
	return res, nil
}

// current is the session tool calls go to, or the error that ended the
// run: the watchdog's violation, or a stopped sandbox.
func (w *Workspace) current() (*session, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.violation != nil {
		return nil, w.violation.err()
	}
	if w.sess == nil || w.closed || w.finalized {
		return nil, &sandbox.SandboxError{Op: "docker sandbox", Err: errStopped}
	}
	return w.sess, nil
}

// textTool makes one file tool call; a mutating one is followed by a
// measurement of the tree against its caps.
func (w *Workspace) textTool(ctx context.Context, op string, mutates bool, f func(*toolbox.Client) (string, error)) (string, error) {
	if err := w.waitReady(ctx); err != nil {
		return "", err
	}
	s, err := w.current()
	if err != nil {
		return "", err
	}
	out, err := f(s.tb)
	if err != nil {
		return w.toolFailed(ctx, op, s, err)
	}
	if mutates {
		if note, err := w.checkBudget(ctx, s); err != nil {
			return "", err
		} else if note != "" {
			out += "\n[" + note + "]"
		}
	}
	return out, nil
}

// toolFailed turns a failed call on session s into what the tool returns:
// the run's end (a cancelled context, the watchdog's violation, a broken
// sandbox) or, when the tool server is gone, a reset and the text telling
// the model so.
func (w *Workspace) toolFailed(ctx context.Context, op string, s *session, err error) (string, error) {
	if ctx.Err() != nil {
		return "", err
	}
	if v := w.currentViolation(); v != nil {
		return "", v.err()
	}
	switch {
	case errors.Is(err, toolbox.ErrRequestTooLarge):
		return "ERROR: " + err.Error(), nil
	case errors.Is(err, toolbox.ErrServerGone):
		reason := w.goneReason()
		if rerr := w.reset(ctx, s, reason); rerr != nil {
			return "", rerr
		}
		return resetNotice(reason), nil
	}
	return "", &sandbox.SandboxError{Op: op, Err: err}
}

// resetNotice is the tool result after a reset.
func resetNotice(reason string) string {
	return "ERROR: the sandbox was reset (" + reason + "): its container was replaced. " +
		"The files in /work are kept; git commits, the index, stashes and everything in /tmp and " +
		"/home/worker are gone, and no process survived. Check the state you need and retry."
}

// afterBash checks the container after a command, from what the tool
// server and the daemon's events said as it ran: nothing of the command
// may be left (leftover, the server's count of processes it could not
// kill), no process may have been seen outside the server by the
// watchdog, and no OOM kill may have happened (oom, the server's own
// count, which the daemon's event may come after); any of them is a reset,
// noted for the result. Without a reset the server's walk of the tree is
// awaited by the next operation that needs it (settleBudget).
func (w *Workspace) afterBash(ctx context.Context, s *session, leftover int, oom bool) (string, error) {
	reason := ""
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case leftover > 0:
		reason = "stray process after bash"
	case w.takeStray():
		reason = "stray process outside the tool server"
	case w.takeOOM(), oom:
		reason = "oom"
	}
	if reason != "" {
		if err := w.reset(ctx, s, reason); err != nil {
			return "", err
		}
		return "the sandbox was reset after this command (" + reason + "); files in /work are kept, git state and /tmp are not", nil
	}
	w.mu.Lock()
	w.walkPending = true
	w.mu.Unlock()
	return "", nil
}

// settleBudget takes the verdict of the walk the tool server started after
// the last command, if one is pending (see checkBudget).
func (w *Workspace) settleBudget(ctx context.Context, s *session) (string, error) {
	w.mu.Lock()
	pending := w.walkPending
	w.mu.Unlock()
	if !pending {
		return "", nil
	}
	return w.checkBudget(ctx, s)
}

// onlyServer reports whether procs (docker top's commands) are the tool
// server and nothing else: it is pid 1, with no init beside it.
func onlyServer(procs []string) bool {
	return len(procs) == 1 && strings.HasPrefix(procs[0], toolboxPath+" toolbox")
}

// checkBudget asks the tool server for its budget's verdict: the totals
// of its last walk adjusted by every writing file tool since, after any
// walk under way ended. A breach ends the run (budget_exceeded) and the
// container is killed.
func (w *Workspace) checkBudget(ctx context.Context, s *session) (string, error) {
	w.mu.Lock()
	w.walkPending = false
	w.mu.Unlock()
	if w.cfg.Limits.MaxBytes <= 0 && w.cfg.Limits.MaxEntries <= 0 {
		return "", nil
	}
	m, err := s.tb.Budget(ctx)
	if err != nil {
		if _, ferr := w.toolFailed(ctx, "measure", s, err); ferr != nil {
			return "", ferr
		}
		return "the sandbox was reset: the tree could not be measured", nil
	}
	if m.Violation != "" {
		v := w.recordViolation(m.Violation, kindBudget)
		return "", v.err()
	}
	return "", nil
}
