//go:build !linux

package host

import "syscall"

// childAttr starts the stand-in's tool server in a session of its own.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
