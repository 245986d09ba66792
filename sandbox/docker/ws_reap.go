package docker

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// LabelReap marks a container that stands for volumes to remove: its value
// is their names, comma-separated. A run whose export succeeded leaves one
// when it does not wait for its volumes' removal (which can take seconds
// on a large tree); whoever finds one (the next run, `runs` reconcile)
// removes the named volumes that carry the marker's dirtywork.run label,
// then the marker. The marker mounts nothing and never starts.
const LabelReap = "dirtywork.reap"

// detachedWait is how long Close lets a detached removal run before the
// process may go: enough for the request to reach the daemon, which
// completes a volume removal it has begun.
const detachedWait = 300 * time.Millisecond

// reapTimeout bounds a run's removal of what finished runs left.
const reapTimeout = 2 * time.Minute

// reapMarkerSpec is the marker for vols of the run labelled by labels.
func reapMarkerSpec(imageID string, labels map[string]string, vols []string) containerSpec {
	l := map[string]string{LabelReap: strings.Join(vols, ",")}
	for k, v := range labels {
		l[k] = v
	}
	noInit := false
	return containerSpec{
		Config: &container.Config{Image: imageID, Entrypoint: []string{"/bin/true"}, Labels: l, User: userSpec()},
		Host:   &container.HostConfig{NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, Init: &noInit},
	}
}

// removeDetached removes vols without waiting for the daemon to finish:
// a marker is made first, the removals start, and after detachedWait the
// call returns; a removal that finished by then takes the marker with it.
// Anything left is the marker's to find.
func (w *Workspace) removeDetached(ctx context.Context, vols []string) error {
	marker := w.names.Container + "-reap"
	if _, err := w.cl.createContainer(ctx, marker, reapMarkerSpec(w.imageID, w.labels, vols)); err != nil {
		// No marker, no detaching: remove and wait.
		for _, v := range vols {
			if err := w.removeOwnVolume(ctx, v); err != nil {
				return err
			}
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		bg, cancel := cleanupContext()
		defer cancel()
		var err error
		for _, v := range vols {
			if rerr := w.removeOwnVolume(bg, v); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err == nil {
			_ = w.cl.removeContainer(bg, marker)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(detachedWait):
		return nil // the marker stays until the removal is seen done
	}
}

// ReapMarked removes the volumes reap markers name, then the markers: the
// removals finished runs left detached. Each volume goes only when it
// carries the marker's dirtywork.run label; a marker whose volumes are
// all gone is removed. Errors are left for the next reaper.
func (c *Client) ReapMarked(ctx context.Context) {
	list, err := c.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelReap))})
	if err != nil {
		return
	}
	for _, m := range list {
		slug := m.Labels[labelRun]
		left := false
		for _, v := range strings.Split(m.Labels[LabelReap], ",") {
			labels, err := c.volumeLabels(ctx, v)
			switch {
			case err != nil && !errors.Is(err, ErrNotFound):
				left = true
			case err != nil:
			case labels[labelRun] != slug || slug == "":
				// Not the marker's run: never removed on its word.
			default:
				if c.removeVolume(ctx, v) != nil {
					left = true
				}
			}
		}
		if !left {
			_ = c.removeContainer(ctx, m.ID)
		}
	}
}
