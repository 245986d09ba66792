package host

import (
	"errors"
	"os/exec"
	"syscall"
)

// killGroup sends SIGKILL to cmd's process group: bash was started as
// the leader of a new session, so the group holds every job it started
// that did not start a session of its own (and with a PID namespace,
// bash's exit takes those along too). A group already gone is success.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
