package workspace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

const (
	// setupTimeout bounds --setup, package downloads included.
	setupTimeout = 30 * time.Minute
	// maxSetupOutput caps the setup output kept (C-3).
	maxSetupOutput = 1 << 20
)

// runSetup runs cfg.Setup in /work in a container of its own that has the
// network (and the worker's other limits), before the worker's first call,
// reports it through cfg.OnSetup, and removes the container. A setup that
// fails or times out is a *sandbox.SandboxError carrying its output.
func (w *Workspace) runSetup(ctx context.Context) error {
	start := time.Now()
	spec := setupSpec(w.names, w.imageID, w.labels, w.limits, w.cfg.Setup)
	id, err := w.createWorkerContainer(ctx, w.names.Setup, spec)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := cleanupContext()
		defer cancel()
		_ = w.eng.RemoveContainer(cctx, id) // Close retries by label
	}()
	if err := w.eng.StartContainer(ctx, id); err != nil {
		return err
	}
	code, waitErr := w.eng.WaitStopped(ctx, id, setupTimeout)
	if waitErr != nil {
		cctx, cancel := cleanupContext()
		_ = w.eng.KillContainer(cctx, id)
		cancel()
	}
	out := &cappedLog{max: maxSetupOutput}
	logErr := w.eng.Logs(ctx, id, out)
	var exit *int
	if waitErr == nil {
		c := int(code)
		exit = &c
	}
	if w.cfg.OnSetup != nil {
		w.cfg.OnSetup(w.cfg.Setup, exit, out.String(), time.Since(start).Seconds())
	}
	switch {
	case waitErr != nil:
		return &sandbox.SandboxError{Op: "setup", Err: fmt.Errorf("%q did not finish: %w; output: %s", w.cfg.Setup, waitErr, out.String())}
	case code != 0:
		return &sandbox.SandboxError{Op: "setup", Err: fmt.Errorf("%q exited %d: %s", w.cfg.Setup, code, out.String())}
	case logErr != nil && !errors.Is(logErr, context.Canceled):
		return &sandbox.SandboxError{Op: "setup", Err: logErr}
	}
	return nil
}
