//go:build !linux && !darwin

package host

import "syscall"

// childAttr starts the stand-in's tool server in a session of its own.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// childPIDs cannot list pid's children here: only the tool server's own
// group is killed.
func childPIDs(int) []int { return nil }
