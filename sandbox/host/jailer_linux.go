package host

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// childAttr starts the stand-in's tool server in a session of its own,
// killed should dirtywork die first.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// childPIDs are pid's children: each command the tool server runs leads
// a group of its own.
func childPIDs(pid int) []int {
	var out []int
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	for _, f := range strings.Fields(string(data)) {
		if child, err := strconv.Atoi(f); err == nil {
			out = append(out, child)
		}
	}
	return out
}
