package daemon

import (
	"context"
	"io"
	"io/fs"
	"time"
)

// Engine is what the docker workspace asks of a Docker daemon. Every call
// runs under a deadline (QueryTimeout, LifecycleTimeout or a transfer's)
// and its error matches at most one of ErrNotFound, ErrConflict,
// ErrDaemonUnreachable and ErrTimedOut. It is safe for concurrent use.
type Engine interface {
	// Host is where the daemon is reached (unix:///var/run/docker.sock,
	// tcp://…), for messages. Local reports whether it runs on this
	// machine (a unix socket), so that its storage can be looked at here.
	Host() string
	Local() bool
	// Close releases the connection's idle resources.
	Close() error

	// ServerVersion is the daemon's version: the check that it answers.
	ServerVersion(ctx context.Context) (string, error)
	// DockerRoot is the daemon's storage directory ("" when it says none).
	DockerRoot(ctx context.Context) (string, error)
	// InspectImage describes the local image ref; nothing is pulled.
	InspectImage(ctx context.Context, ref string) (Image, error)

	// CreateVolume creates the named volume with labels; CreateBoundVolume
	// creates it on the local driver bound to dir, a directory of the
	// daemon's machine, so that the volume is that directory.
	CreateVolume(ctx context.Context, name string, labels map[string]string) error
	CreateBoundVolume(ctx context.Context, name string, labels map[string]string, dir string) error
	// InspectVolume describes the named volume.
	InspectVolume(ctx context.Context, name string) (Volume, error)
	// ListVolumes lists the volumes carrying label (a key, or key=value).
	ListVolumes(ctx context.Context, label string) ([]Volume, error)
	// RemoveVolume removes the named volume; one already gone is removed.
	// A volume a container uses is never removed (ErrConflict); force
	// removes it from the daemon even when its driver fails to.
	RemoveVolume(ctx context.Context, name string, force bool) error

	// CreateContainer creates a container named name and returns its id.
	CreateContainer(ctx context.Context, name string, spec ContainerSpec) (string, error)
	// InspectContainer describes the container with id (or name).
	InspectContainer(ctx context.Context, id string) (Container, error)
	// ListContainers lists the containers, running or not, carrying label
	// (a key, or key=value); their State has its Status only.
	ListContainers(ctx context.Context, label string) ([]Container, error)
	// StartContainer starts the created (or stopped) container.
	StartContainer(ctx context.Context, id string) error
	// KillContainer kills the container; one that does not run, or does
	// not exist, is killed.
	KillContainer(ctx context.Context, id string) error
	// WaitStopped waits, within limit, until the container does not run,
	// and returns its exit code.
	WaitStopped(ctx context.Context, id string, limit time.Duration) (int64, error)
	// RemoveContainer removes the container, running or not; one already
	// gone is removed.
	RemoveContainer(ctx context.Context, id string) error

	// Attach attaches to the created container's stdin, stdout and
	// stderr, before it starts, so that nothing it writes is lost: the
	// Stream reads its stdout and writes its stdin, and its stderr is
	// copied to stderr. The stream outlives ctx, which only bounds the
	// request.
	Attach(ctx context.Context, id string, stderr io.Writer) (Stream, error)
	// Upload extracts the tar stream r at dir in the container, keeping
	// the ownership and modes its headers give.
	Upload(ctx context.Context, id, dir string, r io.Reader) error
	// Download streams path in the container to f as a tar archive whose
	// members are named from path's last element (work/…, for /work).
	Download(ctx context.Context, id, path string, f func(io.Reader) error) error
	// StatPath describes path in the container, without following a final
	// link.
	StatPath(ctx context.Context, id, path string) (PathStat, error)
	// Top lists the commands of the container's processes.
	Top(ctx context.Context, id string) ([]string, error)
	// Logs copies the stopped container's stdout and stderr, merged, to
	// out.
	Logs(ctx context.Context, id string, out io.Writer) error
	// Events streams what the daemon reports of the containers carrying
	// label, for the given actions (ActionOOM, ActionDie), until ctx ends
	// or the stream breaks (an error on the second channel).
	Events(ctx context.Context, label string, actions ...string) (<-chan Event, <-chan error)
}

// Stream is a container's attached standard streams, as a connection:
// Read reads the container's stdout, Write writes its stdin.
type Stream interface {
	io.Reader
	io.Writer
	// CloseRead stops reading stdout: a Read waiting on it returns, and
	// the container's output is no longer taken. The connection stays.
	CloseRead() error
	// CloseWrite closes the container's stdin; a container created with
	// ContainerSpec.Stdin sees its stdin end, and (holding it for one
	// attach) cannot have it again.
	CloseWrite() error
	// Close closes the connection.
	Close() error
}

// ContainerSpec is what a container is created from: what dirtywork sets,
// and nothing else. No capability is ever added, nothing is privileged,
// nothing bind-mounted, and there is no TTY.
type ContainerSpec struct {
	Image, User     string
	Env             []string
	Entrypoint, Cmd []string
	Labels          map[string]string
	// Stdin gives the container a stdin that one attach holds (open,
	// attached, and closed for good when that attach closes it); Output
	// attaches its stdout and stderr.
	Stdin, Output bool
	// Network is the network mode: "none", or "bridge" for the egress
	// proxy.
	Network      string
	ReadOnlyRoot bool
	CapDrop      []string
	SecurityOpt  []string
	// Init runs docker's init as pid 1 instead of the entrypoint.
	Init bool
	// Memory caps memory and memory with swap alike (bytes); NanoCPUs the
	// CPU time (1e9 is one CPU, 0 no cap); PidsLimit processes and
	// threads.
	Memory, NanoCPUs, PidsLimit int64
	// Tmpfs maps a mount point to its tmpfs options.
	Tmpfs  map[string]string
	Mounts []Mount
	// NoLogs has the daemon keep none of the container's output (the
	// "none" log driver): what reads it does so through an attach.
	NoLogs bool
}

// Mount is a named volume mounted into a container.
type Mount struct {
	Volume, Target string
	ReadOnly       bool
	// NoCopy leaves an empty volume empty: nothing of the image at Target
	// is copied into it.
	NoCopy bool
}

// Image is what a run needs to know of its image.
type Image struct {
	// ID is the image's Id (sha256:<64 hex>): containers are made from
	// it, not from the name, so nothing is ever pulled implicitly.
	ID string
	// Digest is the registry digest the image was pulled by (the
	// reference's repository@sha256:…), nil for a locally built image.
	Digest *string
	// OS and Arch are its platform, as Go names them ("linux", "amd64").
	OS, Arch string
}

// Volume is a named volume.
type Volume struct {
	Name   string
	Labels map[string]string
	// Driver and Mountpoint are its driver and where that keeps it on
	// the daemon's machine.
	Driver, Mountpoint string
	// Created is when it was made; zero when the daemon does not say.
	Created time.Time
}

// Container is a container as the daemon describes it.
type Container struct {
	ID, Name string
	Labels   map[string]string
	// Created is when it was made; zero when the daemon does not say.
	Created time.Time
	State   State
}

// State is a container's state.
type State struct {
	// Status is created, running, paused, restarting, removing, exited or
	// dead.
	Status             string
	Running, OOMKilled bool
	ExitCode           int
}

// Succeeded reports whether the container ran and exited 0.
func (s State) Succeeded() bool { return s.Status == "exited" && s.ExitCode == 0 }

// PathStat describes a path in a container.
type PathStat struct {
	Mode fs.FileMode
	Size int64
}

// Event is one report of the daemon about a container.
type Event struct {
	ContainerID, Action string
}

// The container actions Events reports.
const (
	// ActionOOM: the kernel killed a process of the container for memory.
	ActionOOM = "oom"
	// ActionDie: the container's process ended.
	ActionDie = "die"
)
