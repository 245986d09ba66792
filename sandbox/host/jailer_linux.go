package host

import "syscall"

// childAttr starts the stand-in's tool server in a session of its own,
// killed should dirtywork die first.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
