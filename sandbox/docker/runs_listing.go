package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/volstore"
)

// The labels every object of a run carries: the run's slug, and the
// hash of its repository's resolved path (RepoLabel); and the label of a
// reap marker, a container standing for the removal of the volumes its
// value names (comma-separated), which a run whose export succeeded
// handed off. Once the marker has exited 0, the marker and each named
// volume carrying the marker's dirtywork.run label may be removed.
const (
	LabelRun  = daemon.LabelRun
	LabelRepo = daemon.LabelRepo
	LabelReap = daemon.LabelReap
)

// RepoLabel is the dirtywork.repo label the objects of runs on the
// repository at repoRoot carry.
func RepoLabel(repoRoot string) string { return daemon.RepoLabel(repoRoot) }

// RunObjectNames are the names of the containers and volumes a docker run
// with slug creates: the worker dw-<slug>, the setup container
// dw-<slug>-setup, the export container dw-<slug>-export, the measurer
// dw-<slug>-measure, the egress proxy dw-<slug>-egress and the reap marker
// dw-<slug>-reap; the volumes dw-<slug>-work and dw-<slug>-tools.
func RunObjectNames(slug string) (containers, volumes []string, err error) {
	n, err := daemon.NamesFor(slug)
	if err != nil {
		return nil, nil, err
	}
	return []string{n.Container, n.Setup, n.Container + "-export", n.Measurer, n.Egress, n.Container + "-reap"}, []string{n.WorkVolume, n.ToolsVolume}, nil
}

// Labelled is a container or volume carrying the dirtywork.run label.
type Labelled struct {
	Name string
	// State is a container's state (running, exited, …); "" for a volume.
	State string
	// ReapDone is set for a reap marker (LabelReap) that did its work: it
	// exited, and with 0. One that exited otherwise left something in the
	// volume it empties and must run again (StartLabelledContainer).
	ReapDone bool
	Labels   map[string]string
}

// Run is the slug the object is labelled with.
func (l Labelled) Run() string { return l.Labels[LabelRun] }

// ListLabelled lists every container (running or not) and every volume
// labelled dirtywork.run, in one request each.
func (c *Client) ListLabelled(ctx context.Context) (containers, volumes []Labelled, err error) {
	list, err := c.ListContainers(ctx, LabelRun)
	if err != nil {
		return nil, nil, err
	}
	for _, ct := range list {
		containers = append(containers, Labelled{Name: ct.Name, State: ct.State.Status, Labels: ct.Labels})
	}
	// The list does not say how a container exited: an exited reap marker
	// (there are few; each is removed once done) is asked.
	for i, ct := range containers {
		if _, ok := ct.Labels[LabelReap]; ok && ct.State == "exited" {
			info, err := c.InspectContainer(ctx, ct.Name)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return nil, nil, err
			}
			containers[i].ReapDone = err == nil && info.State.Succeeded()
		}
	}
	vols, err := c.ListVolumes(ctx, LabelRun)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range vols {
		volumes = append(volumes, Labelled{Name: v.Name, Labels: v.Labels})
	}
	return containers, volumes, nil
}

// ContainerLabels returns the labels of the named container (ErrNotFound
// when there is none).
func (c *Client) ContainerLabels(ctx context.Context, name string) (map[string]string, error) {
	info, err := c.InspectContainer(ctx, name)
	if err != nil {
		return nil, err
	}
	if info.Labels == nil {
		return map[string]string{}, nil
	}
	return info.Labels, nil
}

// VolumeLabels returns the labels of the named volume (ErrNotFound when
// there is none).
func (c *Client) VolumeLabels(ctx context.Context, name string) (map[string]string, error) {
	v, err := c.InspectVolume(ctx, name)
	return v.Labels, err
}

// RemoveLabelledContainer force-removes the named container only if it
// carries exactly the labels want (every key of want, same value); one
// already gone is removed. A mismatch is ErrLabelMismatch and nothing is
// removed.
func (c *Client) RemoveLabelledContainer(ctx context.Context, name string, want map[string]string) error {
	info, err := c.InspectContainer(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !labelsMatch(info.Labels, want) {
		return fmt.Errorf("%w: container %s", ErrLabelMismatch, name)
	}
	return c.RemoveContainer(ctx, info.ID)
}

// RemoveLabelledVolume removes the named volume only if it carries the
// labels want; one already gone is removed. A work volume whose size the
// kernel held goes with its file system: its loop device is detached and
// its image deleted (volstore.Release).
func (c *Client) RemoveLabelledVolume(ctx context.Context, name string, want map[string]string) error {
	labels, err := c.VolumeLabels(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !labelsMatch(labels, want) {
		return fmt.Errorf("%w: volume %s", ErrLabelMismatch, name)
	}
	if err := c.RemoveVolume(ctx, name, true); err != nil {
		return err
	}
	return volstore.ReleaseGone(name)
}

// StartLabelledContainer starts the named container (a reap marker to run
// again) only if it carries the labels want. A mismatch is
// ErrLabelMismatch and nothing is started.
func (c *Client) StartLabelledContainer(ctx context.Context, name string, want map[string]string) error {
	info, err := c.InspectContainer(ctx, name)
	if err != nil {
		return err
	}
	if !labelsMatch(info.Labels, want) {
		return fmt.Errorf("%w: container %s", ErrLabelMismatch, name)
	}
	return c.StartContainer(ctx, info.ID)
}

// ErrLabelMismatch: an object is not labelled as the one to act on.
var ErrLabelMismatch = errors.New("labels do not match")

func labelsMatch(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
