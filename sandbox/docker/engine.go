package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// Client is the docker workspace's Engine: each call under its contract
// deadline (C-2), its error classified (ErrNotFound, ErrConflict, ...).
var _ daemon.Engine = (*Client)(nil)

// Host is the daemon's address (unix:///var/run/docker.sock, tcp://…).
func (c *Client) Host() string { return c.endpoint.Host }

// Local reports whether the daemon runs on this machine (a unix socket),
// so its storage can be measured here.
func (c *Client) Local() bool { return strings.HasPrefix(c.endpoint.Host, "unix://") }

// ConnectEngine is Connect for what takes any daemon.Engine: the docker
// workspace's entry points.
func ConnectEngine() (daemon.Engine, error) { return ConnectEngineTo("") }

// ConnectEngineTo is ConnectTo for what takes any daemon.Engine: host is a
// DOCKER_HOST value, "" the environment's daemon.
func ConnectEngineTo(host string) (daemon.Engine, error) {
	cl, err := ConnectTo(host)
	if err != nil {
		return nil, err // never a typed nil inside the interface
	}
	return cl, nil
}

// DockerRoot is the daemon's storage directory. The daemon's info is the
// slowest of its queries (tens of milliseconds: it counts every container
// and image), and a run asks it twice on its start's path (the preflight's
// free-space check, the work volume's file system); a daemon's data root
// is set when it starts, so an answer stays good for rootTTL, per daemon
// address.
func (c *Client) DockerRoot(ctx context.Context) (string, error) {
	if root, ok := roots.get(c.endpoint.Host); ok {
		return root, nil
	}
	var root string
	err := query(ctx, "query docker daemon info", func(ctx context.Context) error {
		info, err := c.api.Info(ctx)
		root = info.DockerRootDir
		return err
	})
	if err == nil {
		roots.put(c.endpoint.Host, root)
	}
	return root, err
}

// rootTTL is how long a daemon's data root is taken as known: long enough
// for a run's start, short against a daemon restarted with another root.
const rootTTL = 30 * time.Second

// roots are the daemons' data roots known in this process.
var roots = rootCache{m: map[string]knownRoot{}}

type knownRoot struct {
	root string
	at   time.Time
}

type rootCache struct {
	mu sync.Mutex
	m  map[string]knownRoot
}

func (r *rootCache) get(host string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.m[host]
	if !ok || time.Since(k.at) > rootTTL {
		return "", false
	}
	return k.root, true
}

func (r *rootCache) put(host, root string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[host] = knownRoot{root: root, at: time.Now()}
}

// CreateVolume creates the named volume with labels.
func (c *Client) CreateVolume(ctx context.Context, name string, labels map[string]string) error {
	return call(ctx, "create volume "+name, LifecycleTimeout, func(ctx context.Context) error {
		_, err := c.api.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels})
		return err
	})
}

// CreateBoundVolume creates the named volume with labels on the local
// driver, bound to dir: wherever a container uses the volume, it is dir.
func (c *Client) CreateBoundVolume(ctx context.Context, name string, labels map[string]string, dir string) error {
	return call(ctx, "create volume "+name, LifecycleTimeout, func(ctx context.Context) error {
		_, err := c.api.VolumeCreate(ctx, volume.CreateOptions{
			Name: name, Driver: "local", Labels: labels,
			DriverOpts: map[string]string{"type": "none", "o": "bind", "device": dir},
		})
		return err
	})
}

// InspectVolume describes the named volume (ErrNotFound when there is
// none).
func (c *Client) InspectVolume(ctx context.Context, name string) (daemon.Volume, error) {
	var v volume.Volume
	err := query(ctx, "inspect volume "+name, func(ctx context.Context) error {
		var err error
		v, err = c.api.VolumeInspect(ctx, name)
		return err
	})
	if err != nil {
		return daemon.Volume{}, err
	}
	return volumeOf(&v), nil
}

// volumeOf is v as the daemon package describes a volume.
func volumeOf(v *volume.Volume) daemon.Volume {
	created, _ := time.Parse(time.RFC3339, v.CreatedAt) // zero: not said
	return daemon.Volume{Name: v.Name, Labels: v.Labels, Driver: v.Driver, Mountpoint: v.Mountpoint, Created: created}
}

// ListVolumes lists the volumes carrying label (a key, or key=value).
func (c *Client) ListVolumes(ctx context.Context, label string) ([]daemon.Volume, error) {
	var vols []daemon.Volume
	err := query(ctx, "list volumes labelled "+label, func(ctx context.Context) error {
		resp, err := c.api.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
		vols = vols[:0]
		for _, v := range resp.Volumes {
			if v != nil {
				vols = append(vols, volumeOf(v))
			}
		}
		return err
	})
	return vols, err
}

// RemoveVolume removes the named volume; one already gone is removed.
// Force removes it from the daemon even when its driver fails to; a
// volume in use is never removed (ErrConflict).
func (c *Client) RemoveVolume(ctx context.Context, name string, force bool) error {
	err := call(ctx, "remove volume "+name, LifecycleTimeout, func(ctx context.Context) error {
		return c.api.VolumeRemove(ctx, name, force)
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// CreateContainer creates a container named name from spec and returns
// its id.
func (c *Client) CreateContainer(ctx context.Context, name string, spec daemon.ContainerSpec) (string, error) {
	cfg, host := containerConfig(spec)
	var id string
	err := call(ctx, "create container "+name, LifecycleTimeout, func(ctx context.Context) error {
		resp, err := c.api.ContainerCreate(ctx, cfg, host, nil, nil, name)
		id = resp.ID
		return err
	})
	return id, err
}

// containerConfig is spec in the Engine API's terms. Nothing is set that
// spec does not say: no capability added, no privilege, no bind, no TTY.
func containerConfig(spec daemon.ContainerSpec) (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image:        spec.Image,
		User:         spec.User,
		Env:          spec.Env,
		Entrypoint:   spec.Entrypoint,
		Cmd:          spec.Cmd,
		Labels:       spec.Labels,
		OpenStdin:    spec.Stdin,
		StdinOnce:    spec.Stdin,
		AttachStdin:  spec.Stdin,
		AttachStdout: spec.Output,
		AttachStderr: spec.Output,
	}
	init, pids := spec.Init, spec.PidsLimit
	host := &container.HostConfig{
		NetworkMode:    container.NetworkMode(spec.Network),
		ReadonlyRootfs: spec.ReadOnlyRoot,
		CapDrop:        spec.CapDrop,
		SecurityOpt:    spec.SecurityOpt,
		Init:           &init,
		Resources: container.Resources{
			Memory:     spec.Memory,
			MemorySwap: spec.Memory,
			NanoCPUs:   spec.NanoCPUs,
			PidsLimit:  &pids,
		},
		Tmpfs: spec.Tmpfs,
	}
	if spec.NoLogs {
		host.LogConfig = container.LogConfig{Type: "none"}
	}
	for _, m := range spec.Mounts {
		mt := mount.Mount{Type: mount.TypeVolume, Source: m.Volume, Target: m.Target, ReadOnly: m.ReadOnly}
		if m.NoCopy {
			mt.VolumeOptions = &mount.VolumeOptions{NoCopy: true}
		}
		host.Mounts = append(host.Mounts, mt)
	}
	return cfg, host
}

// Upload extracts the tar stream r at dir in the container, keeping the
// ownership its headers give.
func (c *Client) Upload(ctx context.Context, id, dir string, r io.Reader) error {
	return call(ctx, "upload to "+dir+" in container "+short(id), TransferTimeout, func(ctx context.Context) error {
		return c.api.CopyToContainer(ctx, id, dir, r, container.CopyToContainerOptions{})
	})
}

// Download streams the container's path as a tar archive into f.
func (c *Client) Download(ctx context.Context, id, path string, f func(io.Reader) error) error {
	return call(ctx, "download "+path+" from container "+short(id), TransferTimeout, func(ctx context.Context) error {
		rc, _, err := c.api.CopyFromContainer(ctx, id, path)
		if err != nil {
			return err
		}
		defer func() { _ = rc.Close() }() // a response body
		return f(rc)
	})
}

// Attach attaches to the created container's stdin, stdout and stderr;
// stderr is copied to stderr. The stream outlives ctx, which only bounds
// the request.
func (c *Client) Attach(ctx context.Context, id string, stderr io.Writer) (daemon.Stream, error) {
	var resp types.HijackedResponse
	err := call(ctx, "attach to container "+short(id), LifecycleTimeout, func(ctx context.Context) error {
		var err error
		resp, err = c.api.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
		return err
	})
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		// Without a TTY the daemon multiplexes stdout and stderr.
		_, err := stdcopy.StdCopy(pw, stderr, resp.Reader)
		_ = pw.CloseWithError(err) // nil: the end of the stream
	}()
	return &attached{resp: resp, stdout: pr}, nil
}

// attached is an attached container's streams: stdout demultiplexed into
// a pipe, stdin the connection itself.
type attached struct {
	resp   types.HijackedResponse
	stdout *io.PipeReader
}

func (a *attached) Read(p []byte) (int, error)  { return a.stdout.Read(p) }
func (a *attached) Write(p []byte) (int, error) { return a.resp.Conn.Write(p) }

// CloseRead closes the pipe: the demultiplexer stops at its next write.
func (a *attached) CloseRead() error { return a.stdout.Close() }

// CloseWrite half-closes the connection, which closes the container's
// stdin.
func (a *attached) CloseWrite() error { return a.resp.CloseWrite() }

func (a *attached) Close() error {
	a.resp.Close()
	return nil
}

// StartContainer starts the container.
func (c *Client) StartContainer(ctx context.Context, id string) error {
	return call(ctx, "start container "+short(id), LifecycleTimeout, func(ctx context.Context) error {
		return c.api.ContainerStart(ctx, id, container.StartOptions{})
	})
}

// KillContainer kills the container; one that does not run (or exist) is
// killed.
func (c *Client) KillContainer(ctx context.Context, id string) error {
	err := call(ctx, "kill container "+short(id), LifecycleTimeout, func(ctx context.Context) error {
		return c.api.ContainerKill(ctx, id, "KILL")
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
		return nil
	}
	return err
}

// WaitStopped waits until the container does not run, within limit,
// returning its exit code.
func (c *Client) WaitStopped(ctx context.Context, id string, limit time.Duration) (int64, error) {
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

// RemoveContainer removes the container by force; one already gone is
// removed.
func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	err := call(ctx, "remove container "+short(id), LifecycleTimeout, func(ctx context.Context) error {
		return c.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// InspectContainer inspects the container by id or name.
func (c *Client) InspectContainer(ctx context.Context, id string) (daemon.Container, error) {
	var info container.InspectResponse
	err := query(ctx, "inspect container "+short(id), func(ctx context.Context) error {
		var err error
		info, err = c.api.ContainerInspect(ctx, id)
		return err
	})
	if err != nil {
		return daemon.Container{}, err
	}
	ct := daemon.Container{ID: info.ID, Name: strings.TrimPrefix(info.Name, "/")}
	ct.Created, _ = time.Parse(time.RFC3339Nano, info.Created) // zero: not said
	if info.Config != nil {
		ct.Labels = info.Config.Labels
	}
	if st := info.State; st != nil {
		ct.State = daemon.State{Status: st.Status, Running: st.Running, OOMKilled: st.OOMKilled, ExitCode: st.ExitCode}
	}
	return ct, nil
}

// ListContainers lists the containers, running or not, carrying label (a
// key, or key=value).
func (c *Client) ListContainers(ctx context.Context, label string) ([]daemon.Container, error) {
	var list []daemon.Container
	err := query(ctx, "list containers labelled "+label, func(ctx context.Context) error {
		resp, err := c.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
		list = list[:0]
		for _, ct := range resp {
			name := ""
			if len(ct.Names) > 0 {
				name = strings.TrimPrefix(ct.Names[0], "/")
			}
			list = append(list, daemon.Container{
				ID: ct.ID, Name: name, Labels: ct.Labels, Created: time.Unix(ct.Created, 0),
				State: daemon.State{Status: ct.State},
			})
		}
		return err
	})
	return list, err
}

// Top lists the container's processes' commands.
func (c *Client) Top(ctx context.Context, id string) ([]string, error) {
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
		cmds = cmds[:0]
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

// Logs copies the stopped container's stdout and stderr, merged, to out.
func (c *Client) Logs(ctx context.Context, id string, out io.Writer) error {
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

// StatPath describes path in the container, without following a final
// link.
func (c *Client) StatPath(ctx context.Context, id, path string) (daemon.PathStat, error) {
	var st container.PathStat
	err := query(ctx, "look at "+path+" in container "+short(id), func(ctx context.Context) error {
		var err error
		st, err = c.api.ContainerStatPath(ctx, id, path)
		return err
	})
	return daemon.PathStat{Mode: st.Mode, Size: st.Size}, err
}

// Events streams what the daemon reports of the containers carrying
// label, for the given actions, until ctx ends or the stream breaks (an
// error on the second channel).
func (c *Client) Events(ctx context.Context, label string, actions ...string) (<-chan daemon.Event, <-chan error) {
	args := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("label", label))
	for _, a := range actions {
		args.Add("event", a)
	}
	msgs, errs := c.api.Events(ctx, events.ListOptions{Filters: args})
	out, broke := make(chan daemon.Event), make(chan error, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-errs:
				broke <- err
				return
			case m := <-msgs:
				select {
				case out <- daemon.Event{ContainerID: m.Actor.ID, Action: string(m.Action)}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, broke
}
