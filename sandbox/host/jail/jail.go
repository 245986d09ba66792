package jail

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
	// DefaultCPUs is the jail's default CPU cap, in CPUs: docker mode's
	// default.
	DefaultCPUs = 2.0
)

// Limits on the host's machine-wide tables, the same for every jail.
const (
	// DefaultNofile is RLIMIT_NOFILE, soft and hard, of every process in
	// the jail: every Linux login's default soft limit, the one build tools
	// are made to live with. With the pids limit it bounds the jail's share
	// of the host's open files (fs.file-max): NofileLimit lowers it where
	// that product would exceed a quarter of the table.
	DefaultNofile = 1024
	// MaxPtys is the most pseudo-terminals the jail's devpts holds at once
	// (its max= option); the kernel's pty table (kernel.pty.max) is shared
	// by every devpts instance of the host.
	MaxPtys = 64
	// Nice is the jail's niceness where no cpu controller can be had: it
	// caps nothing, but the host's other work comes first.
	Nice = 10
)

// Bounds of NofileLimit.
const (
	// fileTableShare: a jail's processes together hold at most a quarter
	// of the host's open files table (nofile × pids ≤ fs.file-max / 4).
	fileTableShare = 4
	// minNofile is the least RLIMIT_NOFILE a jail gets, whatever its pids
	// limit: fewer descriptors leave no room to run a build at all.
	minNofile = 64
)

// NofileLimit is RLIMIT_NOFILE for a jail of at most pids processes:
// DefaultNofile, lowered where nofile × pids would pass a quarter of the
// host's open files table (fs.file-max), never below 64. Without a pids
// cap (pids ≤ 0) it is DefaultNofile.
func NofileLimit(pids int) int {
	fileMax := int64(0)
	if data, err := os.ReadFile("/proc/sys/fs/file-max"); err == nil {
		fileMax, _ = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	}
	return nofileFor(pids, fileMax)
}

// nofileFor is NofileLimit with the table's size given (0: unknown).
func nofileFor(pids int, fileMax int64) int {
	if pids <= 0 || fileMax <= 0 {
		return DefaultNofile
	}
	return int(min(DefaultNofile, max(minNofile, fileMax/fileTableShare/int64(pids))))
}

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
	// inside the jail: the python user site. Paths that do not exist are
	// skipped; paths a system directory already exposes need not be
	// listed. A root operator's are idmapped, so the operator's files
	// show as the program's own.
	ReadOnlyPaths []string
	// UnmappedPaths are bound like ReadOnlyPaths but never idmapped: their
	// files keep their host owners, whom the jail does not map (they show
	// as nobody's), so the program may read only what the host lets every
	// user read. A root operator's program, a uid of its own on the host,
	// then cannot read a file only its owner may: toolchains go here. (A
	// non-root operator's program is the operator on the host, and may.)
	UnmappedPaths []string
	// Hidden are host paths inside the read-only paths, the unmapped paths
	// or the mounts that the jail covers: a directory with an empty
	// read-only one, a file with an empty one that cannot be opened.
	// Symlinks in them are resolved on the host; a path that is not there,
	// or not inside any of those, is not in the jail to hide.
	Hidden []string

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
	// CPUs caps the jail's CPU time, in CPUs (1.5: one and a half CPUs'
	// worth in every period), through the cgroup's cpu controller; 0 is
	// DefaultCPUs, negative is no cap. Where no cpu controller can be had
	// the jail runs at niceness Nice instead, and Info says so.
	CPUs float64

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
