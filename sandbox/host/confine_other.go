//go:build !linux

package host

import (
	"context"
	"os/exec"
	"syscall"
)

// setupConfinement records that nothing but the deny-list guards bash:
// Landlock and namespaces are Linux-only.
func (w *Workspace) setupConfinement(context.Context) error {
	w.info = Info{Warning: "Landlock is Linux-only: on this system only the bash deny-list guards host mode"}
	return nil
}

// startBash starts bash -c command in a new session, with prepare setting
// up the process first.
func (w *Workspace) startBash(ctx context.Context, command string, prepare func(*exec.Cmd)) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, w.bash, "-c", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	prepare(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}
