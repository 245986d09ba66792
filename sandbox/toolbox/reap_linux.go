package toolbox

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reapEvery is how often the reaper looks for dead children even without
// a SIGCHLD: signals coalesce, and one may come while a pass runs.
const reapEvery = time.Second

// reaper reaps every child of a process that is its PID namespace's init
// or a child subreaper: the orphans a command leaves are reparented to it
// and, once they exit, stay zombies (holding a slot of the pids limit)
// until someone waits for them. The commands the server starts itself are
// waited for by os/exec; the reaper must never take their status, so they
// are started under its lock and registered (owned) until waited for.
type reaper struct {
	mu    sync.Mutex
	owned map[int]bool // guarded by mu: children os/exec waits for
	self  int
}

// startReaper starts reaping the process's children until ctx ends.
func startReaper(ctx context.Context) *reaper {
	r := &reaper{owned: make(map[int]bool), self: os.Getpid()}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() {
		defer signal.Stop(sigs)
		t := time.NewTicker(reapEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-sigs:
			case <-t.C:
			}
			r.reap()
		}
	}()
	return r
}

// start starts cmd as an owned child: the reaper cannot run between the
// fork and the registration, so it never reaps the child os/exec waits
// for. release must follow cmd.Wait.
func (r *reaper) start(cmd *exec.Cmd) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	r.owned[cmd.Process.Pid] = true
	return nil
}

// release hands a waited-for child back.
func (r *reaper) release(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.owned, pid)
}

// reap waits for every child that has exited and is not owned.
func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, pid := range childrenOf(r.self) {
		if r.owned[pid] {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil) // still running, or reaped by killAdopted: both fine
	}
}

// forwardSignal sends sig to every child of the process and to the
// process group each leads (every command leads its own session): what a
// container's init does when the daemon stops the container.
func forwardSignal(sig syscall.Signal) {
	for _, pid := range childrenOf(os.Getpid()) {
		_ = unix.Kill(-pid, sig) // not a group leader: ESRCH
		_ = unix.Kill(pid, sig)
	}
}
