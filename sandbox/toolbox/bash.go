package toolbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

const (
	// waitDelay bounds how long a cancelled command may take to die once
	// its group was sent SIGKILL, before Wait stops waiting for it.
	waitDelay = 2 * time.Second
	// drainGrace bounds reading the output after bash and its group are
	// gone. Only a process that left the group can hold the pipe open
	// longer; it is not waited for.
	drainGrace = time.Second
)

// runBash runs one command (E-35): bash -c in the tree's root with the
// configured environment, stdin /dev/null, stdout and stderr merged into
// one pipe, as the leader of a new session. At the timeout the whole
// process group is killed and the result is TimedOut with no output; when
// bash exits, the group is killed too, so "sleep 30 & echo hi" returns at
// once and the background job never runs on. The error is only ctx's: the
// request was cancelled, and the command killed the same way.
func (s *server) runBash(ctx context.Context, command string, timeout time.Duration) (bashResult, error) {
	return s.runBashEnv(ctx, command, timeout, s.env)
}

// runBashEnv is runBash with the command's whole environment given.
func (s *server) runBashEnv(ctx context.Context, command string, timeout time.Duration, env []string) (bashResult, error) {
	res := bashResult{ExitCode: -1}
	oomBefore, oomCounted := s.cfg.oomKills()
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
	cmd := exec.CommandContext(runCtx, s.bash, s.bashArgs(command)...)
	cmd.Args[0] = "bash" // $0, as host mode's launcher and the contract's exec give it
	cmd.Dir = s.cfg.Root
	cmd.Env = env
	cmd.Stdout = pw
	cmd.Stderr = pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return sandbox.KillGroup(cmd) }
	cmd.WaitDelay = waitDelay
	if s.reaper != nil {
		err = s.reaper.start(cmd)
	} else {
		err = cmd.Start()
	}
	// bash holds its own copy of the write end; ours must go, or reading
	// the pipe would never see end of file.
	_ = pw.Close()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return res, fmt.Errorf("bash: %w", ctx.Err())
		case runCtx.Err() != nil:
			res.TimedOut = true
			return res, nil
		}
		res.LaunchError = err.Error()
		return res, nil
	}

	var afterKill func()
	if s.reaper != nil {
		afterKill = func() {
			s.reaper.release(cmd.Process.Pid) // waited for
			res.Leftover = killAdopted()      // jobs that left the group
		}
	}
	end, err := sandbox.AwaitCommand(ctx, runCtx, cmd, sandbox.StartDrain(r, maxOutput), drainGrace, afterKill)
	if err != nil {
		return res, err
	}
	res.ExitCode, res.TimedOut, res.Capped = end.ExitCode, end.TimedOut, end.Capped
	if oomCounted {
		after, ok := s.cfg.oomKills()
		res.OOMKill = ok && after > oomBefore
	}
	if !end.TimedOut {
		res.Output = []byte(end.Output)
	}
	return res, nil
}

// bashArgs are bash's arguments (after argv[0]) for command. With a file
// size cap, a first bash sets it and execs the command's bash, which
// keeps it, with $0 "bash" as without the cap. A failing ulimit means a
// lower hard limit, which caps harder already.
func (s *server) bashArgs(command string) []string {
	if s.cfg.MaxFileBytes <= 0 {
		return []string{"-c", command}
	}
	kib := (s.cfg.MaxFileBytes + 1023) / 1024
	script := fmt.Sprintf(`ulimit -f %d 2>/dev/null; exec -a bash "$0" -c "$1"`, kib)
	return []string{"-c", script, s.bash, command}
}
