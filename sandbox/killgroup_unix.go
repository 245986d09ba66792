//go:build unix

package sandbox

import (
	"errors"
	"os/exec"
	"syscall"
)

// KillGroup sends SIGKILL to cmd's process group: a command started as
// the leader of a new session or group has every job it started in that
// group, unless the job left it. A group already gone is success.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
