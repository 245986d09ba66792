package workspace

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// A reap marker is a container labelled daemon.LabelReap whose value names the
// volumes to remove, comma-separated. A run whose export succeeded leaves
// one instead of waiting for its volumes' removal: the daemon removes a
// volume holding a large tree while it holds its local driver's lock, for
// seconds, and every volume call of every run waits meanwhile. The marker
// empties the work volume itself (it mounts it, deletes what it holds and
// exits, nothing followed), so that the removal whoever finds the marker
// makes (the next run, `runs` reconcile) costs nothing: remove the marker
// once it has exited 0, then the named volumes that carry the marker's
// dirtywork.run label (reapMarked). A marker that exited otherwise left
// something in the volume: it is started again, by whoever finds it,
// until it empties the volume.

// reapTimeout bounds a run's removal of what finished runs left.
const reapTimeout = 2 * time.Minute

// emptyScript empties /work and fails unless it is empty afterwards.
// Whatever the worker made unreadable is opened up first (as its owner:
// chmod -R changes a directory before it reads it, and never follows a
// link it meets); find deletes depth first by directory descriptor, so no
// name is too long and no argument list too long, and follows nothing.
// What is left (a name find could not delete) makes the exit code non-zero.
const emptyScript = `chmod -R u+rwX /work 2>/dev/null; find /work -mindepth 1 -delete 2>/dev/null; ` +
	`left=$(find /work -mindepth 1 -maxdepth 1 -print -quit 2>&1); [ -z "$left" ] || { echo "not emptied: $left" >&2; exit 1; }`

// reapMarkerSpec is the marker for vols of the run labelled by labels; it
// empties work, when work is not "".
func reapMarkerSpec(imageID string, labels map[string]string, vols []string, work string) daemon.ContainerSpec {
	l := map[string]string{daemon.LabelReap: strings.Join(vols, ",")}
	for k, v := range labels {
		l[k] = v
	}
	spec := daemon.ContainerSpec{
		Image: imageID, Entrypoint: []string{"/bin/true"}, Labels: l, User: userSpec(),
		Env:     []string{"PATH=" + pathEnvValue},
		Network: "none", ReadOnlyRoot: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Init: false, Memory: measurerMemory, PidsLimit: 64,
	}
	if work != "" {
		spec.Entrypoint = []string{"/bin/sh", "-c", emptyScript}
		spec.Mounts = []daemon.Mount{{Volume: work, Target: workDir}}
	}
	return spec
}

// removeDetached leaves vols to a reap marker, which it starts emptying
// the work volume; it waits for nothing more. When no marker can be made,
// the volumes are removed at once.
func (w *Workspace) removeDetached(ctx context.Context, vols []string) error {
	work := ""
	if slices.Contains(vols, w.names.WorkVolume) {
		work = w.names.WorkVolume
	}
	marker := w.names.Container + "-reap"
	id, err := w.eng.CreateContainer(ctx, marker, reapMarkerSpec(w.imageID, w.labels, vols, work))
	if err == nil {
		err = w.eng.StartContainer(ctx, id)
	}
	if err == nil {
		return nil
	}
	if id != "" {
		_ = w.eng.RemoveContainer(ctx, id)
	}
	for _, v := range vols {
		if err := w.removeOwnVolume(ctx, v); err != nil {
			return err
		}
	}
	return nil
}

// reapMarked finishes the removals reap markers stand for: a marker that
// has exited 0 is removed, then each volume it names that carries its
// dirtywork.run label (never another run's). A marker still emptying its
// volume is left for later; one that exited otherwise (or never ran) is
// started again, and the next reaper looks again; errors are left for the
// next reaper.
func reapMarked(ctx context.Context, eng daemon.Engine) {
	list, err := eng.ListContainers(ctx, daemon.LabelReap)
	if err != nil {
		return
	}
	for _, m := range list {
		if m.State.Status == "running" || m.State.Status == "restarting" {
			continue
		}
		// Done: it exited, and with 0.
		if info, err := eng.InspectContainer(ctx, m.ID); err != nil || !info.State.Succeeded() {
			_ = eng.StartContainer(ctx, m.ID)
			continue
		}
		slug := m.Labels[daemon.LabelRun]
		if eng.RemoveContainer(ctx, m.ID) != nil {
			continue
		}
		for _, v := range strings.Split(m.Labels[daemon.LabelReap], ",") {
			labels, err := volumeLabels(ctx, eng, v)
			if err != nil || slug == "" || labels[daemon.LabelRun] != slug {
				continue // gone, unreadable, or not the marker's run: never removed on its word
			}
			_ = removeVolume(ctx, eng, v)
		}
	}
}
