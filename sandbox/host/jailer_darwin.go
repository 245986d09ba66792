package host

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// childAttr starts the tool server in a session of its own (macOS has no
// parent-death signal).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// childPIDs are pid's children, from the kernel's process table: each
// command the tool server runs leads a group of its own, which Kill ends
// with the server's.
func childPIDs(pid int) []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range procs {
		if int(p.Eproc.Ppid) == pid {
			out = append(out, int(p.Proc.P_pid))
		}
	}
	return out
}
