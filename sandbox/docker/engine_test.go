package docker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// A spec reaches the Engine API as it is, and with nothing more: no
// capability added, no privilege, no bind, no TTY, no port, no working
// directory.
func TestContainerConfigSetsWhatTheSpecSaysAndNothingElse(t *testing.T) {
	spec := daemon.ContainerSpec{
		Image: "sha256:abc", User: "1000:1000", Env: []string{"A=1"},
		Entrypoint: []string{"/opt/dirtywork-bin/dirtywork"}, Cmd: []string{"toolbox"},
		Labels: map[string]string{"dirtywork.run": "r"}, Stdin: true, Output: true,
		Network: "none", ReadOnlyRoot: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Memory: 1 << 30, NanoCPUs: 1.5e9, PidsLimit: 512,
		Tmpfs: map[string]string{"/tmp": "rw,size=1m"},
		Mounts: []daemon.Mount{
			{Volume: "dw-r-work", Target: "/work"},
			{Volume: "dw-toolbox-x", Target: "/opt/dirtywork-bin", ReadOnly: true, NoCopy: true},
		},
	}
	cfg, host := containerConfig(spec)
	noInit, pids := false, int64(512)
	wantCfg := &container.Config{
		Image: "sha256:abc", User: "1000:1000", Env: []string{"A=1"},
		Entrypoint: []string{"/opt/dirtywork-bin/dirtywork"}, Cmd: []string{"toolbox"},
		Labels:    map[string]string{"dirtywork.run": "r"},
		OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
	}
	wantHost := &container.HostConfig{
		NetworkMode: "none", ReadonlyRootfs: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Init:      &noInit,
		Resources: container.Resources{Memory: 1 << 30, MemorySwap: 1 << 30, NanoCPUs: 1.5e9, PidsLimit: &pids},
		Tmpfs:     map[string]string{"/tmp": "rw,size=1m"},
		Mounts: []mount.Mount{
			{Type: mount.TypeVolume, Source: "dw-r-work", Target: "/work"},
			{Type: mount.TypeVolume, Source: "dw-toolbox-x", Target: "/opt/dirtywork-bin", ReadOnly: true, VolumeOptions: &mount.VolumeOptions{NoCopy: true}},
		},
	}
	if !reflect.DeepEqual(cfg, wantCfg) {
		t.Errorf("config\n%+v\nwant\n%+v", cfg, wantCfg)
	}
	if !reflect.DeepEqual(host, wantHost) {
		t.Errorf("host config\n%+v\nwant\n%+v", host, wantHost)
	}

	// Without a stdin or output, nothing is attached; init is docker's
	// when asked for.
	cfg, host = containerConfig(daemon.ContainerSpec{Image: "i", Init: true})
	if cfg.OpenStdin || cfg.StdinOnce || cfg.AttachStdin || cfg.AttachStdout || cfg.AttachStderr {
		t.Errorf("attached without a stdin or output: %+v", cfg)
	}
	if host.Init == nil || !*host.Init {
		t.Errorf("init %v, want docker's", host.Init)
	}
	if host.LogConfig.Type != "" {
		t.Errorf("log driver %q, want the daemon's default", host.LogConfig.Type)
	}

	// NoLogs is the none log driver: the daemon keeps nothing.
	if _, host = containerConfig(daemon.ContainerSpec{Image: "i", NoLogs: true}); host.LogConfig.Type != "none" {
		t.Errorf("log driver %q, want none", host.LogConfig.Type)
	}
}

// hijacked serves one attach: it upgrades the connection as the daemon
// does and hands it to serve.
func hijacked(t *testing.T, serve func(conn net.Conn, in *bufio.Reader)) *Client {
	t.Helper()
	return newFakeEngine(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/containers/c1/attach" {
			engineError(w, http.StatusNotFound, "no such container")
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = io.WriteString(conn, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\n"+
			"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		serve(conn, buf.Reader)
	})
}

// The attached stream takes the daemon's multiplexed frames apart: stdout
// is what Read reads, stderr goes to the writer given; what is written
// reaches the container's stdin, and CloseWrite ends it there.
func TestAttachDemultiplexesAndHalfCloses(t *testing.T) {
	t.Parallel()
	stdin := make(chan string, 1)
	cl := hijacked(t, func(conn net.Conn, in *bufio.Reader) {
		_, _ = stdcopy.NewStdWriter(conn, stdcopy.Stdout).Write([]byte("out line\n"))
		_, _ = stdcopy.NewStdWriter(conn, stdcopy.Stderr).Write([]byte("err line\n"))
		data, _ := io.ReadAll(in) // until the client's CloseWrite
		stdin <- string(data)
	})
	var stderr bytes.Buffer
	s, err := cl.Attach(t.Context(), "c1", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	line := make([]byte, len("out line\n"))
	if _, err := io.ReadFull(s, line); err != nil || string(line) != "out line\n" {
		t.Fatalf("stdout %q, %v", line, err)
	}
	if _, err := io.WriteString(s, "to the server\n"); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := <-stdin; got != "to the server\n" {
		t.Errorf("the container's stdin got %q", got)
	}
	// The daemon closes the stream once the container's stdin ended.
	if rest, err := io.ReadAll(s); err != nil || len(rest) != 0 {
		t.Errorf("after the end: %q, %v", rest, err)
	}
	if stderr.String() != "err line\n" {
		t.Errorf("stderr %q", stderr.String())
	}
}

// CloseRead ends a read waiting on a container that says nothing, and
// leaves the connection: the container's stdin still takes writes.
func TestAttachCloseReadStopsAWaitingRead(t *testing.T) {
	t.Parallel()
	stdin := make(chan string, 1)
	cl := hijacked(t, func(_ net.Conn, in *bufio.Reader) {
		line, _ := in.ReadString('\n')
		stdin <- line
	})
	s, err := cl.Attach(t.Context(), "c1", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	read := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 1))
		read <- err
	}()
	if err := s.CloseRead(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("the waiting read: %v, want a closed pipe", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read still waits 10 s after CloseRead")
	}
	if _, err := io.WriteString(s, "still here\n"); err != nil {
		t.Fatal(err)
	}
	if got := <-stdin; got != "still here\n" {
		t.Errorf("the container's stdin got %q", got)
	}
}

// The daemon's data root is asked once per daemon for a while, not on
// every call: a run's start asked it twice, at tens of milliseconds each.
func TestDockerRootIsAskedOncePerDaemon(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	asked := 0
	handle := func(root string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/info" {
				engineError(w, http.StatusNotFound, "unexpected "+r.URL.Path)
				return
			}
			mu.Lock()
			asked++
			mu.Unlock()
			engineJSON(t, w, map[string]any{"DockerRootDir": root})
		}
	}
	a := newFakeEngine(t, handle("/var/lib/a"))
	b := newFakeEngine(t, handle("/var/lib/b"))
	for range 3 {
		if root, err := a.DockerRoot(t.Context()); err != nil || root != "/var/lib/a" {
			t.Fatalf("a: %q, %v", root, err)
		}
		if root, err := b.DockerRoot(t.Context()); err != nil || root != "/var/lib/b" {
			t.Fatalf("b: %q, %v", root, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 2 {
		t.Errorf("the daemons were asked %d times, want once each", asked)
	}
}
