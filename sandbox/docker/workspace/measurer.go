package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// outsideTimeout bounds one outside measurement; a variable so that tests
// can shorten it.
var outsideTimeout = 5 * time.Second

// The outside measurement (see measurerSpec).
const (
	// outsideEvery is how often the work volume is measured from outside
	// while a command runs.
	outsideEvery = time.Second
	// outsideTimeout bounds one outside measurement; outsideFailures in
	// a row (timed out, or the measurer gone) stop the run.
	outsideFailures = 2
	// measurerPids and measurerMemory bound the measurer: one process
	// and its threads, and the walk's bookkeeping.
	measurerPids   = 64
	measurerMemory = 256 << 20
)

// measurerSpec is the container that measures the work volume from
// outside the worker's reach, every second while a command runs, when
// the kernel does not hold the volume's size (see volumeStore): the same
// tool server binary (from the tools volume) in -measure-only mode, which
// answers nothing but hello and measure, walking the tree by directory
// descriptor (so no path is too long for it) and counting bytes and
// entries as the budget does. The volume is mounted read-only, there is no
// network, the root file system is read-only, and it has no capability at
// all: it runs as the worker's uid, so it reads what the worker can read
// and nothing more, and a worker that found a way in would gain nothing.
// It runs in a container of its own: no process of the worker's shares
// its PID namespace or can reach its stream, and its key is not the
// worker server's.
//
// What it cannot see is what the worker made unreadable to itself (a
// chmod 000 directory): such a directory is counted, as an entry with its
// own blocks, and what it holds is not, as in the tool server's own walk.
// The caps still hold for it where it matters: the export reads the tree
// as the daemon, everything included, and refuses an archive past either
// cap before anything past it reaches the lane; and the host's free-space
// floor (--min-free-mb) stops the run before the daemon's disk fills.
//
// The alternative, measuring the volume's mountpoint from this process,
// works only for a daemon on this machine whose volume directory this
// user may read (root); the sidecar works for every daemon, remote ones
// included, and replaces the daemon's disk-usage walk over every volume
// (`system df`), which took seconds and failed on long paths.
func measurerSpec(n objectNames, imageID string, labels map[string]string) daemon.ContainerSpec {
	return sidecar{
		imageID: imageID, user: userSpec(), network: "none",
		cmd:    []string{"toolbox", "-root", workDir, "-measure-only"},
		labels: labels, memory: measurerMemory, pids: measurerPids,
		mounts: []daemon.Mount{
			{Volume: n.WorkVolume, Target: workDir, ReadOnly: true},
			{Volume: n.ToolsVolume, Target: toolsDir, ReadOnly: true},
			n.Toolbox.mount(),
		},
	}.spec()
}

// startMeasurer creates and starts the measurer once the tools volume
// holds the tool server; on failure nothing of it is left.
func (w *Workspace) startMeasurer(ctx context.Context) (_ *session, err error) {
	spec := measurerSpec(w.names, w.imageID, w.labels)
	id, err := w.createWorkerContainer(ctx, w.names.Measurer, spec)
	if err != nil {
		return nil, err
	}
	s := &session{id: id, log: &cappedLog{max: maxServerLog}}
	defer func() {
		if err != nil {
			w.discardSession(s)
		}
	}()
	if err := w.attachAndStart(ctx, s); err != nil {
		return nil, err
	}
	info, err := s.tb.Hello(ctx, sandbox.Limits{})
	if err != nil {
		return nil, fmt.Errorf("start the measurer %s: %w%s", w.names.Measurer, err, s.log.suffix())
	}
	if !w.isolated(info) {
		return nil, fmt.Errorf("measurer %s runs as uid %d pid %d (dumpable %v), want uid %d, pid 1, not dumpable",
			w.names.Measurer, info.UID, info.PID, info.Dumpable, workerUID)
	}
	return s, nil
}

// startOutside starts the measurer, when the run has a cap to hold and
// the kernel does not hold it (with a file system of its own, the
// watchdog reads the volume's counts from the kernel: checkStore), and
// records it for the watchdog. A workspace closed meanwhile discards it.
func (w *Workspace) startOutside(ctx context.Context) error {
	if (w.cfg.Limits.MaxBytes <= 0 && w.cfg.Limits.MaxEntries <= 0) || w.store != nil {
		return nil
	}
	m, err := w.startMeasurer(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	stopped := w.closed || w.finalized
	if !stopped {
		w.meas = m
	}
	w.mu.Unlock()
	if stopped {
		w.discardSession(m)
	}
	w.cfg.trace("measurer")
	return nil
}

// currentMeasurer is the measurer, nil before it started or once stopped.
func (w *Workspace) currentMeasurer() *session {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.meas
}

// attachAndStart attaches to the created container s.id (its stderr into
// s.log), starts it and speaks to its tool server through s.tb. Attaching before the start
// loses not a byte of the server's output, and its stdin is ours from its
// first instant.
func (w *Workspace) attachAndStart(ctx context.Context, s *session) error {
	stream, err := w.eng.Attach(ctx, s.id, s.log)
	if err != nil {
		return err
	}
	if err := w.eng.StartContainer(ctx, s.id); err != nil {
		_ = stream.Close()
		return err
	}
	s.stream = stream
	s.tb = toolbox.NewClient(serverStdout{stream}, serverStdin{stream})
	return nil
}

// outsideCheck measures the work volume through the measurer while a
// command runs, at most every outsideEvery, until ctx ends or the run has
// a violation: a breach of either cap, or outsideFailures measurements in
// a row that failed (timed out, or the measurer is gone), stops the run.
func (d *watchdog) outsideCheck(ctx context.Context) {
	failures := 0
	last := time.Time{}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if d.w.currentViolation() != nil {
			return
		}
		m := d.w.currentMeasurer()
		if _, idle := d.idle(); idle || m == nil || time.Since(last) < outsideEvery {
			continue
		}
		last = time.Now()
		mctx, cancel := context.WithTimeout(ctx, outsideTimeout)
		res, err := m.tb.Measure(mctx, d.w.cfg.Limits)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			if failures >= outsideFailures {
				d.w.recordViolation(fmt.Sprintf("the work volume could not be measured from outside the sandbox (%d tries in a row failed: %v); refusing to run unmeasured",
					failures, err), kindBudget)
				return
			}
			continue
		}
		failures = 0
		if res.Violation != "" {
			d.w.recordViolation(fmt.Sprintf("%s (measured from outside the sandbox: %.1f MB, %d entries)",
				res.Violation, float64(res.Bytes)/(1<<20), res.Entries), kindBudget)
			return
		}
	}
}

// checkStore reads what the work volume's file system holds, by the
// kernel's own counts, and stops the run once the tree is past a cap: a
// full file system is one (it holds a little more than the byte cap, and
// one entry more than the entry cap). Nothing is read while the volume is
// not mounted where this process can see it; the file system still holds
// the caps then, and the tool server's walk after each command judges.
func (d *watchdog) checkStore() {
	s, l := d.w.store, d.w.cfg.Limits
	bytes, entries, ok := s.Usage()
	if !ok {
		return
	}
	var breach string
	switch {
	case l.MaxBytes > 0 && bytes > l.MaxBytes:
		breach = fmt.Sprintf("worktree exceeds %d MB", l.MaxBytes>>20)
	case l.MaxEntries > 0 && entries > l.MaxEntries:
		breach = fmt.Sprintf("worktree exceeds %d entries", l.MaxEntries)
	default:
		return
	}
	d.w.recordViolation(fmt.Sprintf("%s (the work volume's file system holds %.1f MB, %d entries)",
		breach, float64(bytes)/(1<<20), entries), kindBudget)
}
