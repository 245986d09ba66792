package runs

import (
	"context"
	"sync"

	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/volstore"
)

// Docker is what the store needs of the Docker daemon: listing dirtywork's
// objects and removing them only when their labels match. Errors of an
// absent object match ErrObjectGone.
type Docker interface {
	// ListLabelled lists the containers and volumes labelled
	// dirtywork.run, one request each.
	ListLabelled(ctx context.Context) (containers, volumes []docker.Labelled, err error)
	// ContainerLabels and VolumeLabels inspect one object.
	ContainerLabels(ctx context.Context, name string) (map[string]string, error)
	VolumeLabels(ctx context.Context, name string) (map[string]string, error)
	// RemoveContainer and RemoveVolume remove one object if its labels
	// include want; an object already gone is success.
	RemoveContainer(ctx context.Context, name string, want map[string]string) error
	RemoveVolume(ctx context.Context, name string, want map[string]string) error
	// StartContainer starts one container (a reap marker whose work is
	// not done) if its labels include want.
	StartContainer(ctx context.Context, name string, want map[string]string) error
	// VolumeStores lists the file systems of work volumes whose size the
	// kernel held (images in this home, and the loop devices backed by
	// them); ReleaseVolumeStore detaches and deletes the one of a volume
	// that is gone, reporting whether there was one.
	VolumeStores(ctx context.Context) ([]volstore.Listed, error)
	ReleaseVolumeStore(ctx context.Context, volume string) (bool, error)
}

// ErrObjectGone matches the error of an operation on a container or
// volume that does not exist.
var ErrObjectGone = docker.ErrNotFound

// ErrLabelMismatch matches a removal refused because the object is
// labelled for something else.
var ErrLabelMismatch = docker.ErrLabelMismatch

// daemon is a Docker engine (host, a DOCKER_HOST value; "" is the
// environment's), dialled on first use. A daemon that cannot be reached
// answers every call with that error.
type daemon struct {
	host string
	once sync.Once
	cl   *docker.Client
	err  error
}

func defaultDocker() Docker { return &daemon{} }

// WithDockerHost makes the store reach the Docker engine at host (a
// DOCKER_HOST value) instead of the environment's: a bench sweep spreads
// its runs over several engines and cleans each run on its own.
func WithDockerHost(host string) Option { return func(s *Store) { s.docker = &daemon{host: host} } }

func (d *daemon) client() (*docker.Client, error) {
	d.once.Do(func() { d.cl, d.err = docker.ConnectTo(d.host) })
	return d.cl, d.err
}

func (d *daemon) ListLabelled(ctx context.Context) ([]docker.Labelled, []docker.Labelled, error) {
	cl, err := d.client()
	if err != nil {
		return nil, nil, err
	}
	return cl.ListLabelled(ctx)
}

func (d *daemon) ContainerLabels(ctx context.Context, name string) (map[string]string, error) {
	cl, err := d.client()
	if err != nil {
		return nil, err
	}
	return cl.ContainerLabels(ctx, name)
}

func (d *daemon) VolumeLabels(ctx context.Context, name string) (map[string]string, error) {
	cl, err := d.client()
	if err != nil {
		return nil, err
	}
	return cl.VolumeLabels(ctx, name)
}

func (d *daemon) RemoveContainer(ctx context.Context, name string, want map[string]string) error {
	cl, err := d.client()
	if err != nil {
		return err
	}
	return cl.RemoveLabelledContainer(ctx, name, want)
}

func (d *daemon) RemoveVolume(ctx context.Context, name string, want map[string]string) error {
	cl, err := d.client()
	if err != nil {
		return err
	}
	return cl.RemoveLabelledVolume(ctx, name, want)
}

func (d *daemon) StartContainer(ctx context.Context, name string, want map[string]string) error {
	cl, err := d.client()
	if err != nil {
		return err
	}
	return cl.StartLabelledContainer(ctx, name, want)
}

func (d *daemon) VolumeStores(context.Context) ([]volstore.Listed, error) {
	return volstore.List()
}

func (d *daemon) ReleaseVolumeStore(_ context.Context, volume string) (bool, error) {
	return volstore.Release(volume)
}
