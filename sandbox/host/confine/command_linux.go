package confine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// selfExe runs the very binary this process was started from, even if the
// file at its path was replaced (an upgrade during a run).
const selfExe = "/proc/self/exe"

// Cmd is a confined bash command: the launcher process, which becomes bash
// once confinement is in place.
//
// Callers may set Dir, Env, Stdout, Stderr, Cancel and WaitDelay on the
// embedded *exec.Cmd before Start, and call Wait after a successful Start.
// Stdin stays nil (/dev/null). SysProcAttr, Path, Args and ExtraFiles
// belong to confine.
type Cmd struct {
	*exec.Cmd
	policy Policy
}

// Command prepares the launcher for p. The process is started in a new
// session (so killing its process group reaches every job bash starts that
// did not leave the session), with SIGKILL as its parent-death signal (so
// it does not outlive dirtywork), and in the namespaces p.Namespace names.
// With a PID namespace, bash is its init: when bash ends, the kernel kills
// every process left in the namespace, even those that called setsid().
func Command(ctx context.Context, p Policy) (*Cmd, error) {
	if p.Bash == "" && !p.Probe {
		return nil, errors.New("confine: no bash executable given")
	}
	cmd := exec.CommandContext(ctx, selfExe, launcherArg)
	cmd.SysProcAttr = sysProcAttr(p.Namespace)
	return &Cmd{Cmd: cmd, policy: p}, nil
}

// sysProcAttr returns the launcher's process attributes for namespace n.
func sysProcAttr(n Namespace) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	const private = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC
	switch n {
	case PrivateNamespace:
		attr.Cloneflags = private
	case UserNamespace:
		attr.Cloneflags = unix.CLONE_NEWUSER | private
		// Map the caller to itself, not to root: files bash creates belong
		// to the operator, and tools see their usual uid.
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// A non-root uid loses its capabilities at execve; the launcher
		// keeps CAP_SYS_ADMIN (in the new user namespace only) to mount,
		// and drops it before it runs bash.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return attr
}

// Start starts the launcher, hands it the policy and waits until it either
// runs bash under the full policy (nil) or reports why it could not (a
// *SetupError, matching ErrConfine or ErrExec). On a setup error the
// process has already been waited for; do not call Wait.
func (c *Cmd) Start() error {
	data, err := json.Marshal(c.policy)
	if err != nil {
		return fmt.Errorf("encode confinement policy: %w", err)
	}
	policyR, policyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("create policy pipe: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		// Closing an unused pipe loses nothing; the pipe error is what matters.
		_ = policyR.Close()
		_ = policyW.Close()
		return fmt.Errorf("create status pipe: %w", err)
	}
	c.ExtraFiles = []*os.File{policyR, statusW} // fds 3 and 4
	err = c.Cmd.Start()
	// The launcher holds its own copies; ours must go, or reading the
	// status pipe would never see end of file. Closing a pipe end cannot
	// lose data, so its error carries nothing to act on.
	_ = policyR.Close()
	_ = statusW.Close()
	if err != nil {
		_ = policyW.Close()
		_ = statusR.Close()
		// exec.Cmd refuses to start with an ended context and says so.
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("start confined bash: %w", err)
		}
		return &SetupError{Stage: StageStart, Msg: err.Error()}
	}
	_, werr := policyW.Write(data)
	_ = policyW.Close() // the write error, if any, is werr; the launcher then sees EOF
	report, rerr := io.ReadAll(io.LimitReader(statusR, maxReport))
	_ = statusR.Close()
	if len(report) == 0 && werr == nil && rerr == nil {
		return nil // the status pipe closed on exec: bash runs
	}
	_ = c.Wait()
	if len(report) == 0 {
		return &SetupError{Stage: StagePolicy, Msg: fmt.Sprintf("launcher exited before taking its policy (%v)", errors.Join(werr, rerr))}
	}
	return decodeReport(report)
}

// decodeReport parses the launcher's failure report.
func decodeReport(report []byte) error {
	var se SetupError
	if err := json.Unmarshal(bytes.TrimSpace(report), &se); err != nil || se.Stage == "" {
		return &SetupError{Stage: StagePolicy, Msg: "unreadable launcher report: " + string(report)}
	}
	return &se
}

// Probe runs the launcher with p, asking it to set everything up and exit
// instead of running bash. A nil error means a command under p would run
// fully confined.
func Probe(ctx context.Context, p Policy) error {
	p.Probe = true
	c, err := Command(ctx, p)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	c.Stdout = &out
	c.Stderr = &out
	err = c.Start()
	var se *SetupError
	if errors.As(err, &se) && se.Stage == stageReady {
		return nil // the launcher reported success and was waited for
	}
	if err != nil {
		return err
	}
	// The status pipe closed without a report: whatever ran was not the
	// launcher.
	_ = c.Wait()
	return &SetupError{Stage: StageStart, Msg: fmt.Sprintf(
		"%s did not act as the confinement launcher (its main must call confine.MaybeRun first): %s",
		selfExe, bytes.TrimSpace(out.Bytes()))}
}
