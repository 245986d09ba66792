package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// jailSpec is what the run's jail is made of: the tool server's command
// line and environment, and what of the host it sees.
type jailSpec struct {
	// Argv is the tool server's command line; Argv[0] is the binary.
	Argv []string
	// Env is the tool server's, and so every command's, whole environment.
	Env []string
	// Worktree is the lane's worktree, bound read-write at its own path.
	Worktree string
	// Binds are the other host paths the jail sees, each at its own path,
	// bound in order after the worktree.
	Binds []bind
	// ReadOnly are host paths the jail shows read-only where they exist:
	// the python user site.
	ReadOnly []string
	// Unmapped are host paths the jail shows read-only as other users'
	// files (jail.Config.UnmappedPaths): what toolchains need. Hidden are
	// covered inside them.
	Unmapped, Hidden []string
	// Home is the operator's home, which the jail does not show.
	Home string
	// Scratch is the run's own temporary directory, written where the
	// jailer has no private /tmp (hostView: TMPDIR names it); "" with one.
	Scratch string
	// ProxyPort is the egress proxy's port on the host's loopback, for a
	// jailer whose commands reach it there (loopbackEgress); 0 otherwise.
	ProxyPort int
	// Network shares the host's network; without it the jail has only lo.
	// Runs with --allow-network keep their own namespace and reach the
	// egress proxy through a bind (see Config.Network); only a jailer
	// without a jail sets it.
	Network bool
	// PidsLimit, MemoryBytes, TmpBytes and CPUs are the jail's limits (0:
	// the jail's defaults).
	PidsLimit   int
	MemoryBytes int64
	TmpBytes    int64
	CPUs        float64
}

// bind is one host path the jail sees at the same path.
type bind struct {
	Path string
	// Writable binds are read-write (idmapped to the operator); the rest
	// are read-only.
	Writable bool
	// Over is a file or directory bound read-only at Path instead of Path
	// itself: a stand-in for what the host has there (the worktree's .git
	// file), or a host directory shown at a path of the jail's own (the
	// egress proxy's socket directory).
	Over string
}

// jailProc is the running jail: the tool server's pipes, and its end.
type jailProc interface {
	// Stdin and Stdout are the tool server's.
	Stdin() io.WriteCloser
	Stdout() io.ReadCloser
	// Kill ends everything in the jail at once. Idempotent.
	Kill() error
	// Wait waits for the jail's end (after Kill, or when the tool server
	// exits).
	Wait() error
	// Info is what the jail set up, every layer and its state (JSON-ready).
	Info() any
}

// jailer starts jails.
type jailer interface {
	Start(ctx context.Context, spec jailSpec) (jailProc, error)
}

// childJailer starts the tool server as a plain child process with pipes,
// in a session of its own: no confinement at all. It stands in for the
// jail where none is to be had (DIRTYWORK_ALLOW_UNCONFINED=1 on a system
// without namespaces), and says so in its layers.
type childJailer struct{}

func (childJailer) Start(ctx context.Context, spec jailSpec) (jailProc, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("start the tool server: no command")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start the tool server: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("start the tool server: %w", err)
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = spec.Env
	cmd.Dir = spec.Worktree
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	cmd.SysProcAttr = childAttr()
	err = cmd.Start()
	// The child holds its own copies of its ends.
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("start the tool server: %w", err)
	}
	c := &childProc{cmd: cmd, in: inW, out: outR, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// childProc is a tool server started by childJailer.
type childProc struct {
	cmd      *exec.Cmd
	in       *os.File
	out      *os.File
	killOnce sync.Once
	done     chan struct{}
	err      error
}

func (c *childProc) Stdin() io.WriteCloser { return c.in }
func (c *childProc) Stdout() io.ReadCloser { return c.out }
func (c *childProc) Info() any             { return map[string]any{"jail": "none"} }

// Kill kills the server's session and the process group of each command
// it runs (every command leads a session of its own); a job that left its
// command's group survives, which only a jail prevents.
func (c *childProc) Kill() error {
	c.killOnce.Do(func() {
		pid := c.cmd.Process.Pid
		groups := append([]int{pid}, childPIDs(pid)...)
		for _, g := range groups {
			_ = syscall.Kill(-g, syscall.SIGKILL)
		}
		// SIGKILL takes effect asynchronously: wait (briefly) until the
		// groups are gone, so nothing writes in the tree afterwards.
		deadline := time.Now().Add(2 * time.Second)
		for _, g := range groups[1:] {
			for syscall.Kill(-g, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
		}
	})
	return nil
}

func (c *childProc) Wait() error {
	<-c.done
	return c.err
}
