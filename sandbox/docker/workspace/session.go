package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// maxServerLog caps what is kept of the tool server's stderr.
const maxServerLog = 64 << 10

// session is one worker container and the tool server running in it,
// spoken to over the container's attached stdin and stdout.
type session struct {
	id     string
	tb     *toolbox.Client
	stream daemon.Stream // nil until attached and started
	log    *cappedLog
}

// startSession creates, fills (first only), attaches to and starts a
// worker container and checks its tool server. A later session (a reset)
// also initialises the worker's repository, keeping /work and rebuilding
// the index only; the first leaves that to the caller (initRepo), which
// may let it run while the model is asked. On failure nothing of the
// session is left.
//
// The first session's base pack is uploaded while the container starts:
// the tool server, in the toolbox volume, needs nothing of it, and the
// session is returned once both are done.
func (w *Workspace) startSession(ctx context.Context, first bool) (_ *session, err error) {
	spec := workerSpec(w.names, w.imageID, w.labels, w.limits, w.cfg.AllowNetwork)
	id, err := w.createWorkerContainer(ctx, w.names.Container, spec)
	if err != nil {
		return nil, err
	}
	w.cfg.trace("create")
	s := &session{id: id, log: &cappedLog{max: maxServerLog}}
	defer func() {
		if err != nil {
			w.discardSession(s)
		}
	}()
	if first {
		if err := w.prepareVolumes(ctx, id); err != nil {
			return nil, err
		}
		uploaded := make(chan error, 1)
		go func() { uploaded <- w.uploadTools(ctx, id) }()
		defer func() {
			// The upload reads the pack's files: it ends before the
			// session is returned or discarded.
			if uerr := <-uploaded; err == nil && uerr != nil {
				err = uerr
			}
		}()
	}
	if err := w.attachAndStart(ctx, s); err != nil {
		return nil, err
	}
	info, err := s.tb.Hello(ctx, w.cfg.Limits)
	if err != nil {
		return nil, fmt.Errorf("start the tool server in %s: %w%s", w.names.Container, err, s.log.suffix())
	}
	if !w.isolated(info) {
		return nil, fmt.Errorf("tool server in %s runs as uid %d pid %d (dumpable %v), want uid %d, pid 1, not dumpable",
			w.names.Container, info.UID, info.PID, info.Dumpable, workerUID)
	}
	w.cfg.trace("start")
	if !first {
		if err := w.initRepo(ctx, s, false); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// initRepo makes the worker's repository in session s: with populate, the
// base tree is checked out into /work too (the first session); without,
// /work is kept and only the index is made (a reset).
func (w *Workspace) initRepo(ctx context.Context, s *session, populate bool) error {
	populate = populate && !w.cfg.Resume // a resumed run's /work was seeded with the prior tree
	script, err := gitInitScript(w.cfg.Branch, w.cfg.BaseCommit, !w.cfg.WithHistory, populate)
	if err != nil {
		return err
	}
	timeout := gitInitTimeout
	if populate {
		timeout = checkoutTimeout
	}
	res, err := s.tb.Bash(ctx, script, timeout)
	if err != nil {
		return fmt.Errorf("in-container git init: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("in-container git init failed (exit %d, timed out %v): %s",
			res.ExitCode, res.TimedOut, truncate(res.Output+res.LaunchError, 500))
	}
	w.cfg.trace("git_init")
	return nil
}

// checkOutMeanwhile checks the base tree out into /work of the first
// session while the run goes on: on a large tree the checkout takes
// seconds, which the model's first request (the prompt alone takes local
// servers seconds) need not wait for. Every tool call and Finalize wait
// for it (waitReady); the watchdog counts it as a command, so its
// processes are not taken for strays.
//
// The measurer starts meanwhile too, but only what it watches waits for
// it: a command (waitMeasured), which it measures while it runs.
func (w *Workspace) checkOutMeanwhile(s *session) {
	w.ready = make(chan struct{})
	w.measured = make(chan struct{})
	go func() {
		defer close(w.measured)
		// It needs the tools volume, which the first session filled.
		w.measuredErr = w.startOutside(context.Background())
	}()
	w.wd.bashBegin()
	go func() {
		defer close(w.ready)
		defer w.wd.bashEnd()
		// The egress proxy starts meanwhile, for a worker with the
		// network.
		proxy := make(chan error, 1)
		go func() {
			if !w.cfg.AllowNetwork {
				proxy <- nil
				return
			}
			proxy <- w.startEgress(context.Background())
		}()
		// Close kills the container, which ends the call at once.
		err := w.initRepo(context.Background(), s, true)
		if err == nil {
			err = w.markBaseline(context.Background(), s)
		}
		if perr := <-proxy; err == nil {
			err = perr
		}
		w.readyErr = err
	}()
}

// waitReady waits for the first checkout, if it still runs; one that
// failed ends the run (*sandbox.SandboxError).
func (w *Workspace) waitReady(ctx context.Context) error {
	if w.ready == nil {
		return nil
	}
	select {
	case <-w.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if w.readyErr != nil {
		return &sandbox.SandboxError{Op: "check out the base tree in the container", Err: w.readyErr}
	}
	return nil
}

// waitMeasured waits for the first checkout and for the measurer, if it
// is still starting: a command runs only while the tree is measured from
// outside when the run needs that. A measurer that could not start ends
// the run (*sandbox.SandboxError).
func (w *Workspace) waitMeasured(ctx context.Context) error {
	if err := w.waitReady(ctx); err != nil || w.measured == nil {
		return err
	}
	select {
	case <-w.measured:
	case <-ctx.Done():
		return ctx.Err()
	}
	if w.measuredErr != nil {
		return &sandbox.SandboxError{Op: "start the measurer", Err: w.measuredErr}
	}
	return nil
}

// prepareVolumes hands the work volume's root to the worker and, for a
// resumed run, seeds it, through the created container id, before it
// starts: the Engine API's archive upload, no helper container. A work
// volume on a file system of its own was made with the worker's root
// already (and each upload mounts every volume of the container).
func (w *Workspace) prepareVolumes(ctx context.Context, id string) error {
	if w.store == nil {
		if err := w.uploadEntries(ctx, id, workDir, workRootEntries()); err != nil {
			return err
		}
	}
	if !w.cfg.Resume {
		return nil
	}
	return w.seedVolume(ctx, id)
}

// uploadTools uploads the base pack, once made (open makes it meanwhile),
// and the egress proxy's directory into the run's tools volume through
// container id.
func (w *Workspace) uploadTools(ctx context.Context, id string) error {
	<-w.packed
	if w.packErr != nil {
		return w.packErr
	}
	tools := toolsEntries(w.pack)
	if w.egressWanted() {
		tools = append(tools, egressDirEntry())
	}
	if err := w.uploadEntries(ctx, id, toolsDir, tools); err != nil {
		return err
	}
	w.cfg.trace("upload")
	return nil
}

// uploadEntries streams entries as a tar archive into dir of container id.
func (w *Workspace) uploadEntries(ctx context.Context, id, dir string, entries []uploadEntry) error {
	pr, pw := io.Pipe()
	go func() { _ = pw.CloseWithError(writeUpload(pw, entries)) }()
	err := w.eng.Upload(ctx, id, dir, pr)
	_ = pr.CloseWithError(errors.New("upload ended")) // stops the writer if the daemon stopped reading
	return err
}

// discardSession ends a session for good: its container is killed first,
// so the tool server's stream ends and the client gives up at once, then
// removed. Errors are ignored: the container is labelled, and Close and
// `dirtywork runs clean` find what is left.
func (w *Workspace) discardSession(s *session) {
	ctx, cancel := cleanupContext()
	defer cancel()
	_ = w.eng.KillContainer(ctx, s.id)
	if s.tb != nil {
		_ = s.tb.Close()
	}
	if s.stream != nil {
		_ = s.stream.Close()
	}
	_ = w.eng.RemoveContainer(ctx, s.id)
}

// serverIsolated reports whether a tool server is as a container's must
// be: pid 1 of its PID namespace, the worker's uid, not dumpable.
func serverIsolated(info toolbox.ServerInfo) bool {
	return info.PID == 1 && info.UID == workerUID && !info.Dumpable
}

// cleanupContext is a context for cleanup that must run even when the
// run's context was cancelled.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), daemon.LifecycleTimeout)
}

// serverStdout and serverStdin are an attached stream's two directions as
// the toolbox client takes them, each closed on its own: closing stdout
// stops reading it (a reader stuck on a silent server returns), closing
// stdin half-closes the connection, which closes the container's stdin
// and so ends the server.
type (
	serverStdout struct{ s daemon.Stream }
	serverStdin  struct{ s daemon.Stream }
)

func (o serverStdout) Read(p []byte) (int, error) { return o.s.Read(p) }
func (o serverStdout) Close() error               { return o.s.CloseRead() }
func (i serverStdin) Write(p []byte) (int, error) { return i.s.Write(p) }
func (i serverStdin) Close() error                { return i.s.CloseWrite() }

// cappedLog keeps the first max bytes written to it.
type cappedLog struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (l *cappedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.buf); room > 0 {
		l.buf = append(l.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String is what was kept.
func (l *cappedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// suffix is the log for an error message: "" when empty.
func (l *cappedLog) suffix() string {
	if s := l.String(); s != "" {
		return "; tool server said: " + truncate(s, 500)
	}
	return ""
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
