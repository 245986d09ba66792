package docker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
)

// volumeCheckEvery is how often the daemon is asked for the work volume's
// size; a variable so that tests can shorten it.
var volumeCheckEvery = 5 * time.Second

// volumeCheckTimeout bounds one size query: a daemon that takes longer is
// asked again next period rather than waited for.
const volumeCheckTimeout = QueryTimeout

// unmeasuredLimit is how many answers in a row without a figure, from a
// daemon that had given one for the volume, stop the run: the worker can
// make the daemon's walk fail (a path longer than PATH_MAX does), and must
// not run unmeasured that way.
const unmeasuredLimit = 2

// volumeSizeFunc returns the size in bytes of the named volume as the
// daemon measures it, or -1 when the daemon has no figure for it.
type volumeSizeFunc func(ctx context.Context, name string) (int64, error)

// volumeCheck is the watchdog's measurement of the work volume from
// outside the container: the daemon walks the volume on its own host, so
// nothing the worker runs can change the figure, and it keeps coming while
// the tool server is dead, stopped or lying. It backs the tool server's
// Measure, which counts entries as well; the daemon reports bytes only, so
// the entry cap still rests on Measure and on the export's file cap.
type volumeCheck struct {
	w      *Workspace
	volume string
	max    int64
	every  time.Duration
	size   volumeSizeFunc

	mu       sync.Mutex
	failures int   // guarded by mu: failed queries in a row
	lastErr  error // guarded by mu: the last failed query's error

	// measurable is set once the daemon gave a figure for the volume;
	// unmeasured counts answers without one since the last figure. Only
	// the run loop touches them.
	measurable bool
	unmeasured int
}

// newVolumeCheck returns the outside check of w's work volume against its
// byte cap, or nil when there is no byte cap to hold.
func newVolumeCheck(w *Workspace, every time.Duration, size volumeSizeFunc) *volumeCheck {
	if w.cfg.Limits.MaxBytes <= 0 {
		return nil
	}
	return &volumeCheck{w: w, volume: w.names.WorkVolume, max: w.cfg.Limits.MaxBytes, every: every, size: size}
}

// run checks the volume at once (before the worker's first call, so it is
// known whether the daemon can measure it at all), then every period until
// ctx ends or the run has a violation. The next period starts when a query
// has returned, so a slow daemon is never asked twice at once and each
// period costs one query.
func (c *volumeCheck) run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.w.currentViolation() != nil || c.check(ctx) {
			return
		}
		t.Reset(c.every)
	}
}

// check makes one query and reports whether it recorded a violation.
//
// A failed query records none: the daemon's disk usage is shared with
// everything else that asks for it (a 20.10 daemon refuses a second
// query while one runs), so a failure says nothing about the worker; the
// failure is kept (failures, lastErr) and the tool server's measurement
// and the export's caps hold meanwhile. A size of -1 (no figure) is what
// the daemon gives for a volume of another driver, and when its walk
// fails. From a daemon that never gave a figure for the volume it records
// nothing; after a figure, unmeasuredLimit of them in a row mean the tree
// became unmeasurable (a worker can make the walk fail: a path longer
// than PATH_MAX does) and stop the run rather than let it go on
// unmeasured.
func (c *volumeCheck) check(ctx context.Context) bool {
	qctx, cancel := context.WithTimeout(ctx, volumeCheckTimeout)
	defer cancel()
	size, err := c.size(qctx, c.volume)
	if ctx.Err() != nil {
		return false // the watchdog is stopping
	}
	switch {
	case err != nil:
		c.noteFailure(err)
		return false
	case size < 0:
		c.noteFailure(nil) // the query worked; it had no figure
		if !c.measurable {
			return false // this daemon does not measure the volume: nothing to hold
		}
		c.unmeasured++
		if c.unmeasured < unmeasuredLimit {
			return false
		}
		c.w.recordViolation(fmt.Sprintf("the docker daemon can no longer measure the work volume (%d answers in a row without a size; "+
			"a path too long to walk?); refusing to run unmeasured", c.unmeasured), kindBudget)
		return true
	}
	c.noteFailure(nil)
	c.measurable, c.unmeasured = true, 0
	if size <= c.max {
		return false
	}
	c.w.recordViolation(fmt.Sprintf("worktree exceeds %d MB (the docker daemon measured the work volume at %.1f MB)",
		c.max>>20, float64(size)/(1<<20)), kindBudget)
	return true
}

// noteFailure counts a failed query (err) or, for nil, clears the count.
func (c *volumeCheck) noteFailure(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.failures, c.lastErr = 0, nil
		return
	}
	c.failures++
	c.lastErr = err
}

// lastFailure is the number of failed queries in a row and the last one's
// error.
func (c *volumeCheck) lastFailure() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failures, c.lastErr
}

// volumeSize asks the daemon for the named volume's size (GET /system/df,
// volumes only): UsageData.Size, which the daemon computes by walking the
// volume on its host, counting each inode's apparent size once. A volume
// the daemon does not list (it sizes only the local driver's) or lists
// without usage data is -1. An engine before API 1.42 (20.10 speaks 1.41)
// ignores the type filter and sizes images and containers too; the answer
// is the same.
func (c *Client) volumeSize(ctx context.Context, name string) (int64, error) {
	size := int64(-1)
	err := call(ctx, "measure volume "+name, QueryTimeout, func(ctx context.Context) error {
		du, err := c.api.DiskUsage(ctx, types.DiskUsageOptions{Types: []types.DiskUsageObject{types.VolumeObject}})
		if err != nil {
			return err
		}
		for _, v := range du.Volumes {
			if v != nil && v.Name == name && v.UsageData != nil {
				size = v.UsageData.Size
			}
		}
		return nil
	})
	return size, err
}
