//go:build docker

package workspace

import (
	"errors"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/dockertest"
)

// runInVolume runs script with /bin/sh as user in a container of the
// worker image with vol at /work, and fails the test unless it exits 0.
func runInVolume(t *testing.T, cl *docker.Client, imageID, vol, user, script string) {
	t.Helper()
	ctx := t.Context()
	spec := daemon.ContainerSpec{
		Image: imageID, User: user, Entrypoint: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=" + pathEnvValue},
		Network: "none", Mounts: []daemon.Mount{{Volume: vol, Target: workDir}},
	}
	id, err := cl.CreateContainer(ctx, "", spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := cleanupCtx(t)
		defer cancel()
		_ = cl.RemoveContainer(cctx, id)
	}()
	if err := cl.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if code, err := cl.WaitStopped(ctx, id, 2*time.Minute); err != nil || code != 0 {
		t.Fatalf("%q as %s: exit %d, %v", script, user, code, err)
	}
}

// A reap marker empties a volume no shell glob could (5,000 names of 200
// bytes, a directory the worker made unreadable) and exits 0, and only
// then do the marker and the volume go. One that cannot empty its volume
// exits non-zero and is started again by whoever reaps, the volume kept,
// until it can.
func TestLiveReapMarkerEmptiesWithoutAGlob(t *testing.T) {
	cl := liveClient(t)
	img, err := cl.InspectImage(t.Context(), liveImage)
	if err != nil {
		t.Fatal(err)
	}
	slug := newSlug(t)
	n, _ := namesFor(slug)
	labels := labelsFor(slug, t.TempDir())
	if err := cl.CreateVolume(t.Context(), n.WorkVolume, labels); err != nil {
		t.Fatal(err)
	}
	marker := n.Container + "-reap"
	t.Cleanup(func() {
		ctx, cancel := cleanupCtx(t)
		defer cancel()
		_ = cl.RemoveContainer(ctx, marker)
		_ = removeVolume(ctx, cl, n.WorkVolume)
	})
	runInVolume(t, cl, img.ID, n.WorkVolume, "0:0", "chown 1000:1000 /work")
	runInVolume(t, cl, img.ID, n.WorkVolume, userSpec(), `cd /work && p=$(printf 'n%.0s' $(seq 195)) && i=0 &&
		while [ $i -lt 5000 ]; do i=$((i+1)); : > "$p$i" || exit 1; done &&
		mkdir -p locked/deeper && echo x > locked/deeper/f && chmod 000 locked/deeper locked && mkdir .hidden && touch .hidden/.f`)
	// Something the worker cannot delete: a directory of root's.
	runInVolume(t, cl, img.ID, n.WorkVolume, "0:0", "mkdir /work/roots && touch /work/roots/f")

	id, err := cl.CreateContainer(t.Context(), marker, reapMarkerSpec(img.ID, labels, []string{n.WorkVolume}, n.WorkVolume))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.StartContainer(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if code, err := cl.WaitStopped(t.Context(), id, 2*time.Minute); err != nil || code == 0 {
		t.Fatalf("a marker that could not empty its volume exited %d, %v; want a failure", code, err)
	}
	first := dockertest.ProcessOf(t, marker)
	reapMarked(t.Context(), cl)
	if _, err := volumeLabels(t.Context(), cl, n.WorkVolume); err != nil {
		t.Fatalf("the volume went with its marker's work undone: %v", err)
	}
	if _, err := cl.InspectContainer(t.Context(), marker); err != nil {
		t.Fatalf("the failed marker was removed: %v", err)
	}
	if again := dockertest.ProcessOf(t, marker); again.StartedAt == first.StartedAt {
		t.Fatalf("the failed marker was not started again: %+v", again)
	}
	// Once what was in the way is gone, the next reaper finishes the job.
	if _, err := cl.WaitStopped(t.Context(), id, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	runInVolume(t, cl, img.ID, n.WorkVolume, "0:0", "rm -rf /work/roots")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		reapMarked(t.Context(), cl)
		_, errV := volumeLabels(t.Context(), cl, n.WorkVolume)
		_, errM := cl.InspectContainer(t.Context(), marker)
		if errors.Is(errV, daemon.ErrNotFound) && errors.Is(errM, daemon.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after two minutes: volume %v, marker %v", errV, errM)
		}
		if _, err := cl.WaitStopped(t.Context(), id, 2*time.Minute); err != nil && !errors.Is(err, daemon.ErrNotFound) {
			t.Fatal(err)
		}
	}
}
