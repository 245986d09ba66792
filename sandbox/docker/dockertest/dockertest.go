// Package dockertest is what the docker sandbox's live tests (build tag
// docker) need of the machine's daemon beyond daemon.Engine: a client that
// skips the test without a daemon, and what the tests do to containers
// that dirtywork itself never does (pause one, run a process in one, look
// at its mounts or its process), through the Docker SDK's own client.
package dockertest

import (
	"context"
	"net"
	"os"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/dirtywork/dirtywork/sandbox/docker"
)

// RequireEnv set to 1 turns a missing daemon from a skip into a failure.
const RequireEnv = "DIRTYWORK_REQUIRE_DOCKER"

// Client connects to the machine's daemon, closed when the test ends.
// Without one the test is skipped, unless RequireEnv is set: then it
// fails.
func Client(t testing.TB) *docker.Client {
	t.Helper()
	cl, err := docker.Connect()
	if err == nil {
		t.Cleanup(func() { _ = cl.Close() })
		_, err = cl.ServerVersion(t.Context())
	}
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("%s is set but no docker daemon answers: %v", RequireEnv, err)
		}
		t.Skipf("no docker daemon answers (set %s=1 to make this a failure): %v", RequireEnv, err)
	}
	return cl
}

// sdk is the SDK's client for the daemon Client finds, closed when the
// test ends.
func sdk(t testing.TB) *client.Client {
	t.Helper()
	ep, err := docker.DiscoverEndpoint(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithHost(ep.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Close() })
	return api
}

// Pause freezes the container's processes until the test ends.
func Pause(t testing.TB, id string) {
	t.Helper()
	api := sdk(t)
	if err := api.ContainerPause(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.ContainerUnpause(context.WithoutCancel(t.Context()), id) })
}

// Exec starts cmd in the running container, detached: nothing waits for
// it.
func Exec(t testing.TB, id string, cmd ...string) {
	t.Helper()
	api := sdk(t)
	exec, err := api.ContainerExecCreate(t.Context(), id, container.ExecOptions{Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.ContainerExecStart(t.Context(), exec.ID, container.ExecStartOptions{Detach: true}); err != nil {
		t.Fatal(err)
	}
}

// Process is what the daemon says of a container's process.
type Process struct {
	// Pid is its pid on the daemon's machine, 0 when it does not run.
	Pid int
	// StartedAt is when it last started, in the daemon's words.
	StartedAt string
}

// ProcessOf describes the container's process.
func ProcessOf(t testing.TB, id string) Process {
	t.Helper()
	info, err := sdk(t).ContainerInspect(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info.State == nil {
		return Process{}
	}
	return Process{Pid: info.State.Pid, StartedAt: info.State.StartedAt}
}

// Mount is one of a container's mounts.
type Mount struct {
	// Type is volume, bind or tmpfs.
	Type, Source, Destination string
}

// Mounts are the container's binds (as its host config lists them) and
// mounts.
func Mounts(t testing.TB, id string) (binds []string, mounts []Mount) {
	t.Helper()
	info, err := sdk(t).ContainerInspect(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info.HostConfig != nil {
		binds = info.HostConfig.Binds
	}
	for _, m := range info.Mounts {
		mounts = append(mounts, Mount{Type: string(m.Type), Source: m.Source, Destination: m.Destination})
	}
	return binds, mounts
}

// BridgeGateway is docker's default bridge's gateway: an address of the
// host that every container on the bridge reaches.
func BridgeGateway(t testing.TB) string {
	t.Helper()
	nw, err := sdk(t).NetworkInspect(t.Context(), "bridge", network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range nw.IPAM.Config {
		if c.Gateway != "" {
			return c.Gateway
		}
	}
	// Some daemons leave the default bridge's gateway unsaid: it is the
	// address of the bridge's interface on the host.
	if i, err := net.InterfaceByName(nw.Options["com.docker.network.bridge.name"]); err == nil {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
				return ip.IP.String()
			}
		}
	}
	t.Fatal("the bridge network has no gateway")
	return ""
}
