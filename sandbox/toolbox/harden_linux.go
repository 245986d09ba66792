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

// killAdopted kills and reaps every process the commands left, and
// returns how many were still there when it gave up (0 but for a process
// stuck in the kernel; the caller treats any as a broken sandbox). As its
// PID namespace's init (a container's pid 1, a host jail's) the server
// sends SIGKILL to every other process of the namespace at once
// (kill(-1)): a process that keeps forking cannot outrun that, since a
// fork with a fatal signal pending fails. Otherwise, a subreaper, it
// kills its children round after round: a job that left its command's
// process group becomes a child once its parent dies. Only for a process
// whose children are all commands' (see ServerConfig.Subreaper), called
// when no command runs.
func killAdopted() int {
	self := os.Getpid()
	deadline := time.Now().Add(killAdoptedWithin)
	for pause := time.Millisecond; time.Now().Before(deadline); pause = min(2*pause, 50*time.Millisecond) {
		if self == 1 {
			_ = unix.Kill(-1, unix.SIGKILL) // ESRCH: nothing left
		}
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

// removeIPC removes the System V shared memory segments, message queues
// and semaphore sets of the server's IPC namespace that it may remove
// (its user's): state a command left outside the tree, which code run
// later could read. A container and a host jail have an IPC namespace of
// their own, so nothing of anyone else's is there.
func removeIPC() {
	for _, t := range []struct {
		file string
		rm   func(id int)
	}{
		{"/proc/sysvipc/shm", func(id int) { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) }},
		{"/proc/sysvipc/msg", func(id int) { _, _, _ = unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0) }},
		{"/proc/sysvipc/sem", func(id int) { _, _, _ = unix.Syscall6(unix.SYS_SEMCTL, uintptr(id), 0, unix.IPC_RMID, 0, 0, 0) }},
	} {
		data, err := os.ReadFile(t.file)
		if err != nil {
			continue
		}
		lines := bytes.Split(data, []byte("\n"))
		for _, line := range lines[min(1, len(lines)):] { // a header line first
			f := bytes.Fields(line)
			if len(f) < 2 {
				continue
			}
			if id, err := strconv.Atoi(string(f[1])); err == nil {
				t.rm(id)
			}
		}
	}
}
