//go:build docker

package docker

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/stdcopy"

	workerimage "github.com/dirtywork/dirtywork/docker"
)

// requireDockerEnv=1 turns a missing daemon from a skip into a failure.
const requireDockerEnv = "DIRTYWORK_REQUIRE_DOCKER"

// liveClient connects to the machine's daemon. Without one the test is
// skipped, unless DIRTYWORK_REQUIRE_DOCKER is set: then it fails.
func liveClient(t testing.TB) *Client {
	t.Helper()
	cl, err := Connect()
	if err == nil {
		t.Cleanup(func() { _ = cl.Close() })
		_, err = cl.ServerVersion(t.Context())
	}
	if err != nil {
		if os.Getenv(requireDockerEnv) != "" {
			t.Fatalf("%s is set but no docker daemon answers: %v", requireDockerEnv, err)
		}
		t.Skipf("no docker daemon answers (set %s=1 to make this a failure): %v", requireDockerEnv, err)
	}
	return cl
}

// cleanupCtx is a context for cleanups, which run after t.Context is
// cancelled: they must still reach the daemon.
func cleanupCtx(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(t.Context()), LifecycleTimeout)
}

// removeImage removes ref when the test ends.
func removeImage(t *testing.T, cl *Client, ref string) {
	t.Cleanup(func() {
		ctx, cancel := cleanupCtx(t)
		defer cancel()
		if _, err := cl.api.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Logf("remove image %s: %v", ref, err)
		}
	})
}

// The worker image, made the way an operator without a registry makes it:
// the base bootstrapped with debootstrap and imported, then the embedded
// Dockerfile built on it, all through the Engine API. The image must run
// its tools as uid 1000 in the sandbox's locked-down container.
func TestWorkerImageBootstrapsBuildsAndRuns(t *testing.T) {
	cl := liveClient(t)
	ctx := t.Context()
	// Tags of the test's own, so the operator's images are never touched.
	baseTag := "dirtywork-base:gotest"
	workerTag := "dirtywork-worker:gotest"

	var log bytes.Buffer
	defer func() {
		if t.Failed() {
			t.Logf("build output (last 8 KiB):\n%s", tail(log.Bytes(), 8<<10))
		}
	}()

	_, lookErr := exec.LookPath("debootstrap")
	switch {
	case os.Geteuid() == 0 && lookErr == nil:
		start := time.Now()
		removeImage(t, cl, baseTag)
		baseID, err := cl.BootstrapBase(ctx, baseTag, &log)
		if err != nil {
			t.Fatalf("bootstrap the base: %v", err)
		}
		t.Logf("bootstrapped and imported %s (%s) in %s", baseTag, baseID, time.Since(start).Round(time.Second))
	default:
		// Not root, or no debootstrap: build on a base bootstrapped
		// earlier, which must then exist.
		if _, _, err := cl.ImageExists(ctx, workerimage.BaseImage); err != nil {
			t.Fatalf("cannot bootstrap a base (needs root and debootstrap: euid %d, %v) and there is none: %v",
				os.Geteuid(), lookErr, err)
		}
		baseTag = workerimage.BaseImage
		t.Logf("not bootstrapping (needs root and debootstrap); building on the existing %s", baseTag)
	}

	start := time.Now()
	removeImage(t, cl, workerTag)
	id, err := cl.BuildImage(ctx, BuildSpec{Tag: workerTag, Base: baseTag}, &log)
	if err != nil {
		t.Fatalf("build the worker image: %v", err)
	}
	t.Logf("built %s (%s) in %s", workerTag, id, time.Since(start).Round(time.Second))

	gotID, digest, err := cl.ImageExists(ctx, workerTag)
	if err != nil {
		t.Fatal(err)
	}
	if gotID != id || !strings.HasPrefix(id, "sha256:") || len(id) != len("sha256:")+64 {
		t.Errorf("ImageExists id = %q, build returned %q", gotID, id)
	}
	if digest != nil {
		t.Errorf("a locally built image has digest %q, want nil", *digest)
	}

	inspected, err := cl.api.ImageInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	cfg := inspected.Config
	if cfg == nil {
		t.Fatal("the image has no configuration")
	}
	if len(cfg.Entrypoint) != 0 || len(cfg.Cmd) != 0 || cfg.WorkingDir != "" {
		t.Errorf("the image sets ENTRYPOINT %q, CMD %q, WORKDIR %q; want none", cfg.Entrypoint, cfg.Cmd, cfg.WorkingDir)
	}

	out := runInSandbox(t, cl, id, `id -u; id -g; echo "$HOME"
git --version; python3 --version; node --version; rg --version | head -n 1; jq --version; go version`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"1000", "1000", "/home/worker", "git version ", "Python 3.", "v", "ripgrep ", "jq-", "go version go1."}
	if len(lines) != len(want) {
		t.Fatalf("container output:\n%s\nwant %d lines", out, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], w)
		}
	}
}

// runInSandbox runs script with sh in a container of img locked down as
// the sandbox locks its containers down (no network, read-only root, no
// capabilities) as the image's own user, and returns its output. A
// non-zero exit fails the test.
func runInSandbox(t *testing.T, cl *Client, img, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), LifecycleTimeout)
	defer cancel()
	created, err := cl.api.ContainerCreate(ctx, &container.Config{
		Image:  img,
		Cmd:    []string{"/bin/sh", "-c", script},
		Env:    []string{pathEnv},
		Labels: map[string]string{"dirtywork.test": t.Name()},
	}, &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
	}, nil, nil, "")
	if err != nil {
		t.Fatalf("create container: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := cleanupCtx(t)
		defer cancel()
		if err := cl.api.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Logf("remove container: %v", err)
		}
	})
	// Wait is registered before start, so a fast exit is never missed.
	waitC, errC := cl.api.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := cl.api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start container: %v", err)
	}
	var exit int64
	select {
	case res := <-waitC:
		if res.Error != nil {
			t.Fatalf("wait for container: %s", res.Error.Message)
		}
		exit = res.StatusCode
	case err := <-errC:
		t.Fatalf("wait for container: %v", err)
	}
	logs, err := cl.api.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("container logs: %v", err)
	}
	defer func() { _ = logs.Close() }()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, logs); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("read container logs: %v", err)
	}
	if exit != 0 {
		t.Fatalf("container exited %d\nstdout:\n%s\nstderr:\n%s", exit, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// tail is the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
