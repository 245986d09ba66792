package workspace

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// Watchdog periods (W-2, W-3).
const (
	watchTick = 500 * time.Millisecond
	// measureEvery is how often the tree is measured while a command
	// runs (after each command it is measured at once).
	measureEvery = 5 * time.Second
	// statFailures is how many free-space checks in a row may fail before
	// the run is stopped rather than run unmeasured.
	statFailures = 3
)

// strayEvery is how often, between commands, the daemon is asked what runs
// in the container (docker top), to catch a process the tool server did
// not report; a variable so that tests can shorten it.
var strayEvery = 5 * time.Second

// watchdog watches a workspace's container from outside the loop for the
// container's life: the daemon's events (OOM kills and deaths, as they
// happen), the tree's size while a command runs (measured by the tool
// server; the export's hard caps back it), the work volume's size as its
// file system counts it (checkStore) or the measurer measures it
// (outsideCheck), the processes in the container
// between commands as the daemon lists them (backing the tool server's
// own count after each command), and, for a daemon on this machine, the
// free space of its storage.
type watchdog struct {
	w      *Workspace
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inBash   int       // guarded by mu
	bashes   uint64    // guarded by mu: commands begun, ever
	measured time.Time // guarded by mu: the last measurement's start
	listed   time.Time // guarded by mu: the last process listing's start
}

// startWatchdog starts w's watchdog.
func startWatchdog(w *Workspace) *watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	d := &watchdog{w: w, cancel: cancel}
	d.wg.Go(func() { d.watchEvents(ctx) })
	d.wg.Go(func() { d.poll(ctx) })
	d.wg.Go(func() { d.outsideCheck(ctx) })
	return d
}

// stop stops the watchdog and waits for it.
func (d *watchdog) stop() {
	d.cancel()
	d.wg.Wait()
}

// bashBegin and bashEnd bracket a command, while which the tree is
// measured periodically.
func (d *watchdog) bashBegin() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inBash == 0 {
		d.measured = time.Now()
	}
	d.inBash++
	d.bashes++
}

func (d *watchdog) bashEnd() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inBash--
}

// watchEvents records the OOM kills and deaths of this run's containers
// the daemon reports; a broken event stream is opened again.
func (d *watchdog) watchEvents(ctx context.Context) {
	for ctx.Err() == nil {
		msgs, errs := d.w.eng.Events(ctx, daemon.LabelRun+"="+d.w.cfg.Slug, daemon.ActionOOM, daemon.ActionDie)
	stream:
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-msgs:
				d.w.noteEvent(m.ContainerID, m.Action)
			case err := <-errs:
				_ = err // the stream broke or ended: open it again
				break stream
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// noteEvent records an event about container id, if it is the current
// one.
func (w *Workspace) noteEvent(id, action string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sess == nil || w.sess.id != id {
		return
	}
	switch action {
	case daemon.ActionOOM:
		w.oomSeen = true
	case daemon.ActionDie:
		w.died = true
	}
}

// poll checks the host's free space (local daemon only) every tick and
// measures the tree while a command runs.
func (d *watchdog) poll(ctx context.Context) {
	var roots []string
	if d.w.local && d.w.cfg.MinFreeMB > 0 {
		if r, err := dockerRoot(ctx, d.w.eng); err == nil {
			roots = append(roots, r)
		} else {
			roots = append(roots, "/")
		}
		if d.w.store != nil {
			// The tree's blocks are the image's, in the dirtywork home.
			roots = append(roots, filepath.Dir(d.w.store.Image))
		}
	}
	failures := 0
	t := time.NewTicker(watchTick)
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
		var statErr error
		for _, root := range roots {
			free, err := freeMB(root)
			switch {
			case err != nil:
				statErr = err
			case free < int64(d.w.cfg.MinFreeMB):
				d.w.recordViolation(fmt.Sprintf("host free space below %d MB", d.w.cfg.MinFreeMB), kindBudget)
				return
			}
		}
		if statErr == nil {
			failures = 0
		} else if failures++; failures >= statFailures {
			d.w.recordViolation(fmt.Sprintf("host free-space check failing (%v); refusing to run unmeasured", statErr), kindBudget)
			return
		}
		if d.w.store != nil {
			d.checkStore()
		}
		if d.measureDue() {
			d.measure(ctx)
		}
		if d.listDue() {
			d.listProcesses(ctx)
		}
	}
}

// listDue reports whether strayEvery passed since the last process
// listing, and if so starts the next period.
func (d *watchdog) listDue() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if time.Since(d.listed) < strayEvery {
		return false
	}
	d.listed = time.Now()
	return true
}

// idle reports whether no command runs, and how many were ever begun.
func (d *watchdog) idle() (uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bashes, d.inBash == 0
}

// listProcesses asks the daemon what runs in the current container while
// no command does: only init and the tool server may (file tools start no
// process). Anything else is noted for the next command's end, which
// resets the container. A listing that overlapped a command, or a reset
// (resetMu keeps those out), proves nothing and is dropped; so is a
// failed one: a dead container comes through the events API.
func (d *watchdog) listProcesses(ctx context.Context) {
	w := d.w
	w.resetMu.Lock()
	defer w.resetMu.Unlock()
	w.mu.Lock()
	s := w.sess
	w.mu.Unlock()
	before, idle := d.idle()
	if s == nil || !idle {
		return
	}
	procs, err := w.eng.Top(ctx, s.id)
	after, idle := d.idle()
	if err != nil || !idle || after != before || onlyServer(procs) {
		return
	}
	w.mu.Lock()
	if w.sess == s {
		w.straySeen = true
	}
	w.mu.Unlock()
}

// measureDue reports whether a command has run for measureEvery since the
// last measurement, and if so starts the next period.
func (d *watchdog) measureDue() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inBash == 0 || time.Since(d.measured) < measureEvery {
		return false
	}
	d.measured = time.Now()
	return true
}

// measure measures the tree through the current tool server, alongside
// the running command; a breach stops the run. A failed measurement is
// left to the command's own end, which measures again and resets a
// server that is gone.
func (d *watchdog) measure(ctx context.Context) {
	d.w.mu.Lock()
	s := d.w.sess
	d.w.mu.Unlock()
	if s == nil {
		return
	}
	m, err := s.tb.Measure(ctx, d.w.cfg.Limits)
	if err == nil && m.Violation != "" {
		d.w.recordViolation(m.Violation, kindBudget)
	}
}
