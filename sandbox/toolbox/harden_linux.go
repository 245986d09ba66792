package toolbox

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// setNonDumpable clears the process's dumpable flag: no core dumps, and
// ptrace and /proc/<pid>/{mem,fd,environ,…} need CAP_SYS_PTRACE, which a
// sandbox's processes do not have.
func setNonDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// isDumpable is the process's dumpable flag as the kernel reports it.
func isDumpable() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return err != nil || v != 0
}

// becomeSubreaper makes the process adopt its orphaned descendants, in
// place of the container's init.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// killAdoptedWithin bounds killAdopted; only a process stuck in the
// kernel outlives SIGKILL longer.
const killAdoptedWithin = 2 * time.Second

// killAdopted kills and reaps every child of the process until none is
// left, and returns how many were still there when it gave up (0 but for
// a process stuck in the kernel). With the process a subreaper, a job that left its command's
// process group becomes a child once its parent dies, so rounds go on
// until the last descendant is gone. Only for a process whose children
// are all commands' (see ServerConfig.Subreaper), called when no command
// runs.
func killAdopted() int {
	self := os.Getpid()
	deadline := time.Now().Add(killAdoptedWithin)
	for pause := time.Millisecond; time.Now().Before(deadline); pause = min(2*pause, 50*time.Millisecond) {
		kids := childrenOf(self)
		if len(kids) == 0 {
			return 0
		}
		for _, pid := range kids {
			_ = unix.Kill(pid, unix.SIGKILL) // gone already is fine
		}
		reaped := 0
		for _, pid := range kids {
			var ws unix.WaitStatus
			if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid || errors.Is(err, unix.ECHILD) {
				reaped++
			}
		}
		if reaped < len(kids) {
			// Some have not died yet; SIGKILL takes effect promptly but
			// not synchronously.
			time.Sleep(pause)
		}
	}
	return len(childrenOf(self))
}

// childrenOf lists the processes whose parent is pid, zombies included.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		if ppid, ok := parentOf(child); ok && ppid == pid {
			kids = append(kids, child)
		}
	}
	return kids
}

// parentOf reads a process's parent from /proc/<pid>/stat, whose second
// field (the command name, in parentheses) may itself hold spaces and
// parentheses: the fields that follow start after the last ')'.
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return ppid, err == nil
}
