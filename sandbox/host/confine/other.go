//go:build !linux

package confine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// MaybeRun does nothing on this system except refuse the launcher role,
// which only exists on Linux.
func MaybeRun() {
	if len(os.Args) >= 2 && os.Args[1] == launcherArg {
		fmt.Fprintln(os.Stderr, ErrUnsupported)
		os.Exit(exitSetup)
	}
}

// KernelABI is always 0: there is no Landlock here.
func KernelABI() int { return 0 }

// MaxABI is the highest Landlock ABI this build can enforce: none here.
func MaxABI() int { return 0 }

// Cmd is unavailable on this system; see the Linux build.
type Cmd struct{ *exec.Cmd }

// Command fails with ErrUnsupported.
func Command(context.Context, Policy) (*Cmd, error) { return nil, ErrUnsupported }

// Start fails with ErrUnsupported.
func (c *Cmd) Start() error { return ErrUnsupported }

// Probe fails with ErrUnsupported.
func Probe(context.Context, Policy) error { return ErrUnsupported }
