package toolbox

import (
	"context"
	"os/exec"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// On macOS the tool server runs for host mode, under Seatbelt, as the
// operator's user. macOS has neither a dumpable flag nor child
// subreapers; its counterparts are below.

// deniedAttach is set once the server refused debuggers.
var deniedAttach atomic.Bool

// setNonDumpable refuses every later ptrace attach (PT_DENY_ATTACH): the
// commands the server runs are the same user, who could otherwise attach
// to it and answer in its name. A process cannot read another's memory
// or descriptors on macOS without the task port, which a same-user
// process gets only by attaching or by entitlements a command does not
// have. Core dumps are off for the operator's user by default (and the
// Seatbelt profile denies writes to /cores).
func setNonDumpable() error {
	if deniedAttach.Load() {
		return nil
	}
	if err := unix.PtraceDenyAttach(); err != nil {
		return err
	}
	deniedAttach.Store(true)
	return nil
}

// isDumpable reports whether a debugger may still attach.
func isDumpable() bool { return !deniedAttach.Load() }

// becomeSubreaper does nothing: macOS has no child subreapers. Orphaned
// jobs go to launchd; the host sandbox's Kill ends every process group the
// server's commands made.
func becomeSubreaper() error { return nil }

func killAdopted() int { return 0 }

// reaper is the Linux reaper's stand-in: nothing is adopted here.
type reaper struct{}

func startReaper(context.Context) *reaper { return &reaper{} }

func (r *reaper) start(cmd *exec.Cmd) error { return cmd.Start() }

func (r *reaper) release(int) {}

func forwardSignal(syscall.Signal) {}

func removeIPC() {}
