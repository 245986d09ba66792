package docker

import (
	"reflect"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"

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
}
