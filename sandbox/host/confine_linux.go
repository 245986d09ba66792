package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/host/confine"
)

// setupConfinement settles how bash is confined: the Landlock ABI to
// enforce and the namespace mode, each tried out with the launcher. With
// RequireLandlock, anything short of both is refused; without it, what
// works is used and Info's warning names what is missing.
func (w *Workspace) setupConfinement(ctx context.Context) error {
	require := w.cfg.RequireLandlock
	abi := min(kernelABI(), confine.MaxABI())
	if abi == 0 && require {
		return ErrNoLandlock
	}
	var missing []string
	if abi == 0 {
		missing = append(missing, "the kernel has no Landlock, so bash can read and write wherever the operator can")
	}
	try := func(mode confine.Namespace, abi int) error {
		p := w.policy
		p.Namespace, p.ABI = mode, abi
		return confine.Probe(ctx, p)
	}
	mode := confine.NoNamespace
	var nsErr error
	for _, m := range namespaceModes() {
		err := try(m, abi)
		if err != nil && abi > 0 && isStage(err, confine.StageLandlock) {
			if require {
				return fmt.Errorf("%w: %w", ErrNoLandlock, err)
			}
			missing = append(missing, fmt.Sprintf("Landlock could not be enforced (%v), so bash can read and write wherever the operator can", err))
			abi = 0
			err = try(m, abi)
		}
		if err == nil {
			mode, nsErr = m, nil
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("try out bash confinement: %w", ctx.Err())
		}
		nsErr = err
	}
	if nsErr != nil {
		if require {
			return fmt.Errorf("%w: %w", ErrNoPrivateMounts, nsErr)
		}
		missing = append(missing, fmt.Sprintf("no private mount namespace (%v), so bash can reach host daemons' sockets such as Docker's", nsErr))
		if err := try(confine.NoNamespace, abi); err != nil {
			return &sandbox.SandboxError{Op: "confine bash", Err: err}
		}
	}
	w.policy.Namespace, w.policy.ABI = mode, abi
	w.info = Info{
		Landlock:      LandlockStatus{ABI: abi, Enforced: abi > 0},
		PrivateMounts: mode != confine.NoNamespace,
	}
	if abi == 0 {
		w.info.Landlock.ABI = kernelABI()
	}
	if len(missing) > 0 {
		w.info.Warning = "host mode runs partly unconfined: " + strings.Join(missing, "; ")
	}
	return nil
}

// kernelABI is the kernel's Landlock ABI; tests stand in a kernel without
// Landlock.
var kernelABI = confine.KernelABI

// namespaceModes are the namespace modes to try, best first. Root can make
// namespaces directly; anyone else needs a user namespace, which root
// falls back to where it lacks CAP_SYS_ADMIN (in a container).
func namespaceModes() []confine.Namespace {
	if os.Geteuid() == 0 {
		return []confine.Namespace{confine.PrivateNamespace, confine.UserNamespace}
	}
	return []confine.Namespace{confine.UserNamespace}
}

// isStage reports whether err is a launcher failure at stage.
func isStage(err error, stage string) bool {
	var se *confine.SetupError
	return errors.As(err, &se) && se.Stage == stage
}

// startBash starts bash -c command confined by the workspace's policy,
// with prepare setting up the process first. A confinement failure
// matches confine.ErrConfine, a bash that could not be executed
// confine.ErrExec.
func (w *Workspace) startBash(ctx context.Context, command string, prepare func(*exec.Cmd)) (*exec.Cmd, error) {
	p := w.policy
	p.Command = command
	c, err := confine.Command(ctx, p)
	if err != nil {
		return nil, err
	}
	prepare(c.Cmd)
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c.Cmd, nil
}
