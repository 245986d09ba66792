package jail

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
)

// Defaults for the limits a Config leaves zero: those of the docker
// sandbox's container.
const (
	// DefaultPidsLimit is the jail's default cap on processes and threads.
	DefaultPidsLimit = 512
	// DefaultMemory is the jail's default memory cap, in bytes (4 GiB).
	DefaultMemory = 4 << 30
	// DefaultTmpSize is the default size of the jail's private /tmp, in
	// bytes (1 GiB).
	DefaultTmpSize = 1 << 30
	// DefaultHostname is the jail's default hostname.
	DefaultHostname = "dirtywork"
)

// Config describes one jail and the program it runs.
type Config struct {
	// Path is the program run as pid 1: an absolute path inside the jail,
	// which a system directory or a Mount must provide.
	Path string
	// Args are the program's arguments, Args[0] (the name it runs under)
	// included; empty means []string{Path}.
	Args []string
	// Env is the program's whole environment; nil is an empty one, never
	// the caller's.
	Env []string
	// Dir is the program's working directory inside the jail; "" is "/".
	Dir string
	// Hostname is the jail's hostname (UTS namespace); "" is
	// DefaultHostname.
	Hostname string

	// Mounts are bound into the jail after the system directories and the
	// ReadOnlyPaths, in order, so a later mount may cover part of an
	// earlier one (a read-only gitfile over <worktree>/.git). A missing
	// mount point is created on the jail's own tmpfs; one that would have
	// to be created inside another bind (on the host's disk) is an error.
	Mounts []Mount
	// ReadOnlyPaths are host paths bound read-only at the same path
	// inside the jail: toolchain roots, the python user site. Paths that
	// do not exist are skipped; paths a system directory already exposes
	// need not be listed.
	ReadOnlyPaths []string

	// TmpSize is the size of the jail's private /tmp in bytes; 0 is
	// DefaultTmpSize.
	TmpSize int64
	// AllowNetwork shares the host's network namespace. Without it the
	// jail has a network namespace of its own with only lo, up.
	AllowNetwork bool
	// PidsLimit caps the processes and threads of the jail; 0 is
	// DefaultPidsLimit, negative is no cap.
	PidsLimit int
	// MemoryBytes caps the jail's memory (swap included where the
	// mechanism can); 0 is DefaultMemory, negative is no cap.
	MemoryBytes int64

	// AllowUnconfined lets a layer that cannot be set up on this system
	// (Landlock, seccomp, idmapped mounts, a limit mechanism) be left off
	// instead of failing Start. Info reports it off with the reason. The
	// CLI sets it from DIRTYWORK_ALLOW_UNCONFINED=1. The namespaces and
	// the constructed root are the jail itself: without them Start fails
	// regardless.
	AllowUnconfined bool
}

// Mount is a host file or directory bound into the jail.
type Mount struct {
	// Source is the host path, a file or a directory. Symlinks in it are
	// resolved on the host, by the parent.
	Source string
	// Target is the absolute path inside the jail.
	Target string
	// ReadOnly makes the bind read-only. A writable bind is idmapped when
	// the operator is root, so files the program creates land on disk
	// owned by the operator.
	ReadOnly bool
}

// Jail is a running jail: its program, pid 1 of the jail's PID namespace,
// reached through three pipes.
type Jail struct {
	// Stdin is the write end of the program's stdin; closing it gives the
	// program end of file.
	Stdin io.WriteCloser
	// Stdout and Stderr are the read ends of the program's stdout and
	// stderr. Read both (or close them): a program blocked on a full pipe
	// stops. The caller closes all three pipes when done with them; Wait
	// does not, so what the program wrote last can still be read.
	Stdout io.ReadCloser
	Stderr io.ReadCloser

	cmd  *exec.Cmd
	info Info
	// release removes what the jail created on the host (its cgroups);
	// it is called once, after the program was reaped.
	release func() error

	waitOnce sync.Once
	waitErr  error
}

// Pid is the host's pid of the jail's pid 1.
func (j *Jail) Pid() int { return j.cmd.Process.Pid }

// Kill kills the whole jail at once: SIGKILL to its pid 1, whose death the
// kernel turns into the death of every process in the jail's PID
// namespace. It returns without waiting; Wait reaps. Killing a jail that
// already ended is not an error.
func (j *Jail) Kill() error {
	if err := j.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Wait waits for the program to end (and with it every process of the
// jail), removes what the jail created on the host (its cgroups), and
// returns nil for exit status 0 or an *exec.ExitError. Calling it again
// returns the same result; cleanup is idempotent.
func (j *Jail) Wait() error {
	j.waitOnce.Do(func() {
		j.waitErr = j.cmd.Wait()
		if j.release != nil {
			if err := j.release(); err != nil && j.waitErr == nil {
				j.waitErr = err
			}
		}
	})
	return j.waitErr
}

// Info reports every layer of the jail and its state, ready for
// run_start.sandbox.
func (j *Jail) Info() Info { return j.info }

// ErrUnsupported is returned where no jail can be built (outside Linux).
var ErrUnsupported = errors.New("the jail needs Linux")
