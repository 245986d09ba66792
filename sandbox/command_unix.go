//go:build unix

package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

// CommandEnd is how a command started in its own process group ended.
type CommandEnd struct {
	// ExitCode is the exit status; -1 when the command did not exit on its
	// own (killed, timed out).
	ExitCode int
	// TimedOut is set when runCtx's deadline killed the command.
	TimedOut bool
	// Output is the merged output, decoded as UTF-8 with replacement;
	// empty after a timeout, whose partial output a model could mistake
	// for a whole answer.
	Output string
	// Capped is set when output past the kept part was dropped.
	Capped bool
}

// AwaitCommand waits for cmd, whose output pipe drain reads, then kills
// its whole process group (jobs it left running die with it) and, when
// afterKill is set, calls it (to reap what left the group), and reports
// how the command ended. ctx is the caller's: its end is an error; runCtx
// is ctx with the command's timeout.
func AwaitCommand(ctx, runCtx context.Context, cmd *exec.Cmd, drain *Drain, grace time.Duration, afterKill func()) (CommandEnd, error) {
	_ = cmd.Wait() // the status is in ProcessState
	_ = KillGroup(cmd)
	if afterKill != nil {
		afterKill()
	}
	out := drain.Wait(grace)
	end := CommandEnd{ExitCode: -1}
	state := cmd.ProcessState
	exited := state != nil && state.Exited()
	switch {
	case ctx.Err() != nil && !exited:
		return end, fmt.Errorf("bash: %w", ctx.Err())
	case runCtx.Err() != nil && !exited:
		end.TimedOut = true
		return end, nil
	}
	if exited {
		end.ExitCode = state.ExitCode()
	}
	end.Output = DecodeOutput(out.Data)
	end.Capped = out.Capped
	return end, nil
}
