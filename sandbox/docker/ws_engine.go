package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"
)

// The Engine API calls the workspace makes, each under its contract
// deadline (C-2) and classified (ErrNotFound, ErrConflict, ...).

// createVolume creates the named volume with labels.
func (c *Client) createVolume(ctx context.Context, name string, labels map[string]string) error {
	return call(ctx, "create volume "+name, LifecycleTimeout, func(ctx context.Context) error {
		_, err := c.api.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels})
		return err
	})
}

// volumeLabels returns the named volume's labels (ErrNotFound when there
// is none).
func (c *Client) volumeLabels(ctx context.Context, name string) (map[string]string, error) {
	v, err := c.inspectVolume(ctx, name)
	return v.Labels, err
}

// inspectVolume inspects the named volume (ErrNotFound when there is
// none).
func (c *Client) inspectVolume(ctx context.Context, name string) (volume.Volume, error) {
	var v volume.Volume
	err := query(ctx, "inspect volume "+name, func(ctx context.Context) error {
		var err error
		v, err = c.api.VolumeInspect(ctx, name)
		return err
	})
	return v, err
}

// removeUnusedVolume removes the named volume unless a container uses it
// (ErrConflict then), without releasing a file system of its own: for
// volumes that never have one.
func (c *Client) removeUnusedVolume(ctx context.Context, name string) error {
	return call(ctx, "remove volume "+name, LifecycleTimeout, func(ctx context.Context) error {
		return c.api.VolumeRemove(ctx, name, false)
	})
}

// listVolumes lists the volumes carrying label (a key, or key=value).
func (c *Client) listVolumes(ctx context.Context, label string) ([]*volume.Volume, error) {
	var vols []*volume.Volume
	err := query(ctx, "list volumes labelled "+label, func(ctx context.Context) error {
		resp, err := c.api.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
		vols = resp.Volumes
		return err
	})
	return vols, err
}

// listContainers lists the containers, running or not, carrying label (a
// key, or key=value).
func (c *Client) listContainers(ctx context.Context, label string) ([]container.Summary, error) {
	var list []container.Summary
	err := query(ctx, "list containers labelled "+label, func(ctx context.Context) error {
		var err error
		list, err = c.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
		return err
	})
	return list, err
}

// containerEvents streams what the daemon reports of the containers
// carrying label, for the given actions, until ctx ends or the stream
// breaks (an error on the second channel).
func (c *Client) containerEvents(ctx context.Context, label string, actions ...events.Action) (<-chan events.Message, <-chan error) {
	args := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("label", label))
	for _, a := range actions {
		args.Add("event", string(a))
	}
	return c.api.Events(ctx, events.ListOptions{Filters: args})
}

// settleVersion settles the API version the client speaks with one ping,
// if no request has yet.
func (c *Client) settleVersion(ctx context.Context) {
	nctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	c.api.NegotiateAPIVersion(nctx)
}

// dockerRoot is the daemon's storage directory.
func (c *Client) dockerRoot(ctx context.Context) (string, error) {
	var root string
	err := query(ctx, "query docker daemon info", func(ctx context.Context) error {
		info, err := c.api.Info(ctx)
		root = info.DockerRootDir
		return err
	})
	return root, err
}

// createVolumeOn creates the named work volume with labels on the file
// system of store (see volstore.go): the local driver binds the file
// system's tree directory, mounted by this process, wherever a container
// uses the volume.
func (c *Client) createVolumeOn(ctx context.Context, name string, labels map[string]string, store *volumeStore) error {
	return call(ctx, "create volume "+name, LifecycleTimeout, func(ctx context.Context) error {
		_, err := c.api.VolumeCreate(ctx, volume.CreateOptions{
			Name: name, Driver: "local", Labels: labels,
			DriverOpts: map[string]string{"type": "none", "o": "bind", "device": storeTree(store.mount)},
		})
		return err
	})
}

// removeVolume removes the named volume; one already gone is removed. A
// work volume whose size the kernel held goes with its file system: its
// loop device is detached and its image deleted (ReleaseVolumeStore).
func (c *Client) removeVolume(ctx context.Context, name string) error {
	err := call(ctx, "remove volume "+name, LifecycleTimeout, func(ctx context.Context) error {
		return c.api.VolumeRemove(ctx, name, true)
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return releaseVolumeStore(name)
}

// createContainer creates a container named name from spec and returns
// its id.
func (c *Client) createContainer(ctx context.Context, name string, spec containerSpec) (string, error) {
	var id string
	err := call(ctx, "create container "+name, LifecycleTimeout, func(ctx context.Context) error {
		resp, err := c.api.ContainerCreate(ctx, spec.Config, spec.Host, nil, nil, name)
		id = resp.ID
		return err
	})
	return id, err
}

// upload extracts the tar stream r at dir in the container, keeping the
// ownership its headers give.
func (c *Client) upload(ctx context.Context, id, dir string, r io.Reader) error {
	return call(ctx, "upload to "+dir+" in container "+short(id), TransferTimeout, func(ctx context.Context) error {
		return c.api.CopyToContainer(ctx, id, dir, r, container.CopyToContainerOptions{})
	})
}

// download streams the container's dir as a tar archive into f.
func (c *Client) download(ctx context.Context, id, dir string, f func(io.Reader) error) error {
	return call(ctx, "download "+dir+" from container "+short(id), TransferTimeout, func(ctx context.Context) error {
		rc, _, err := c.api.CopyFromContainer(ctx, id, dir)
		if err != nil {
			return err
		}
		defer func() { _ = rc.Close() }() // a response body
		return f(rc)
	})
}

// attach attaches to the created container's stdin, stdout and stderr.
// The stream outlives ctx, which only bounds the request.
func (c *Client) attach(ctx context.Context, id string) (types.HijackedResponse, error) {
	var resp types.HijackedResponse
	err := call(ctx, "attach to container "+short(id), LifecycleTimeout, func(ctx context.Context) error {
		var err error
		resp, err = c.api.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
		return err
	})
	return resp, err
}

// start starts the container.
func (c *Client) start(ctx context.Context, id string) error {
	return call(ctx, "start container "+short(id), LifecycleTimeout, func(ctx context.Context) error {
		return c.api.ContainerStart(ctx, id, container.StartOptions{})
	})
}

// kill kills the container; one that does not run (or exist) is killed.
func (c *Client) kill(ctx context.Context, id string) error {
	err := call(ctx, "kill container "+short(id), LifecycleTimeout, func(ctx context.Context) error {
		return c.api.ContainerKill(ctx, id, "KILL")
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
		return nil
	}
	return err
}

// waitStopped waits until the container does not run, returning its exit
// code.
func (c *Client) waitStopped(ctx context.Context, id string) (int64, error) {
	return c.waitStoppedWithin(ctx, id, LifecycleTimeout)
}

// waitStoppedWithin is waitStopped with the deadline limit.
func (c *Client) waitStoppedWithin(ctx context.Context, id string, limit time.Duration) (int64, error) {
	var code int64
	err := call(ctx, "wait for container "+short(id), limit, func(ctx context.Context) error {
		okC, errC := c.api.ContainerWait(ctx, id, container.WaitConditionNotRunning)
		select {
		case res := <-okC:
			code = res.StatusCode
			if res.Error != nil {
				return errors.New(res.Error.Message)
			}
			return nil
		case err := <-errC:
			return err
		}
	})
	return code, err
}

// removeContainer removes the container by force; one already gone is
// removed.
func (c *Client) removeContainer(ctx context.Context, id string) error {
	err := call(ctx, "remove container "+short(id), LifecycleTimeout, func(ctx context.Context) error {
		return c.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// inspectContainer inspects the container by id or name.
func (c *Client) inspectContainer(ctx context.Context, id string) (container.InspectResponse, error) {
	var info container.InspectResponse
	err := query(ctx, "inspect container "+short(id), func(ctx context.Context) error {
		var err error
		info, err = c.api.ContainerInspect(ctx, id)
		return err
	})
	return info, err
}

// top lists the container's processes' commands.
func (c *Client) top(ctx context.Context, id string) ([]string, error) {
	var cmds []string
	err := query(ctx, "list processes of container "+short(id), func(ctx context.Context) error {
		resp, err := c.api.ContainerTop(ctx, id, nil)
		if err != nil {
			return err
		}
		col := -1
		for i, t := range resp.Titles {
			if t == "CMD" || t == "COMMAND" {
				col = i
			}
		}
		if col < 0 {
			return fmt.Errorf("no command column in %q", resp.Titles)
		}
		for _, p := range resp.Processes {
			if col < len(p) {
				cmds = append(cmds, p[col])
			}
		}
		return nil
	})
	return cmds, err
}

// short is a container id cut to the 12 digits docker shows, or a name as
// it is.
func short(id string) string {
	if len(id) == 64 {
		return id[:12]
	}
	return id
}

// logs copies the stopped container's stdout and stderr, merged, to out.
func (c *Client) logs(ctx context.Context, id string, out io.Writer) error {
	return call(ctx, "read logs of container "+short(id), TransferTimeout, func(ctx context.Context) error {
		rc, err := c.api.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			return err
		}
		defer func() { _ = rc.Close() }() // a response body
		_, err = stdcopy.StdCopy(out, out, rc)
		return err
	})
}

// statPath describes path in the container, without following a final
// link.
func (c *Client) statPath(ctx context.Context, id, path string) (container.PathStat, error) {
	var st container.PathStat
	err := query(ctx, "look at "+path+" in container "+short(id), func(ctx context.Context) error {
		var err error
		st, err = c.api.ContainerStatPath(ctx, id, path)
		return err
	})
	return st, err
}
