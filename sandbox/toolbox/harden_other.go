//go:build !linux && !darwin

package toolbox

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
)

// errNotLinux: the server hardens itself with Linux-only means, and only
// ever runs in a Linux container.
var errNotLinux = errors.New("the tool server runs on Linux only")

func setNonDumpable() error { return errNotLinux }

func isDumpable() bool { return true }

func becomeSubreaper() error { return errNotLinux }

func killAdopted() int { return 0 }

// reaper is the Linux reaper's stand-in: nothing is reaped here.
type reaper struct{}

func startReaper(context.Context) *reaper { return &reaper{} }

func (r *reaper) start(cmd *exec.Cmd) error { return cmd.Start() }

func (r *reaper) release(int) {}

func forwardSignal(syscall.Signal) {}

func removeIPC() {}
