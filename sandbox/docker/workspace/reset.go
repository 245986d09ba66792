package workspace

import (
	"context"
	"errors"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// reset replaces the container of session old, whose tool server is gone,
// with a new one on the same volumes (S-31): the tree in /work survives,
// the git dir is made again from the base (index only) and /tmp and the
// home start empty. Concurrent resets of one session make one new
// container: the later ones find it in place and return. OnReset is called
// once the new container serves. A reset that fails ends the run
// (*sandbox.SandboxError).
func (w *Workspace) reset(ctx context.Context, old *session, reason string) error {
	w.resetMu.Lock()
	defer w.resetMu.Unlock()
	w.mu.Lock()
	current, stopped := w.sess, w.closed || w.finalized
	w.mu.Unlock()
	switch {
	case stopped || current == nil:
		return &sandbox.SandboxError{Op: "reset the docker sandbox (" + reason + ")", Err: errStopped}
	case current != old:
		return nil // replaced already
	}
	w.discardSession(old)
	s, err := w.startSession(ctx, false)
	if err != nil {
		w.mu.Lock()
		w.sess = nil
		w.mu.Unlock()
		return &sandbox.SandboxError{Op: "reset the docker sandbox (" + reason + ")", Err: err}
	}
	w.mu.Lock()
	w.sess = s
	w.oomSeen, w.died, w.straySeen, w.walkPending = false, false, false, false
	w.mu.Unlock()
	if w.cfg.OnReset != nil {
		w.cfg.OnReset(reason)
	}
	return nil
}

// goneReason says why the current session's tool server is gone, as the
// sandbox_reset event and the model are told: the container ran out of
// memory, died, or runs with a server that no longer answers.
func (w *Workspace) goneReason() string {
	w.mu.Lock()
	oom, died, s := w.oomSeen, w.died, w.sess
	w.mu.Unlock()
	if s != nil && !oom {
		ctx, cancel := context.WithTimeout(context.Background(), daemon.QueryTimeout)
		defer cancel()
		if info, err := w.eng.InspectContainer(ctx, s.id); err == nil && info.State.Status != "" {
			oom = oom || info.State.OOMKilled
			died = died || !info.State.Running
		} else if errors.Is(err, daemon.ErrNotFound) {
			died = true
		}
	}
	switch {
	case oom:
		return "oom"
	case died:
		return "container died"
	}
	return "tool server stopped answering"
}

// takeStray reports and clears a process the watchdog saw in the
// container besides init and the tool server.
func (w *Workspace) takeStray() bool { return w.take(&w.straySeen) }

// takeOOM reports and clears an OOM kill the events API reported.
func (w *Workspace) takeOOM() bool { return w.take(&w.oomSeen) }

// take reports and clears one of the flags guarded by mu.
func (w *Workspace) take(flag *bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := *flag
	*flag = false
	return v
}
