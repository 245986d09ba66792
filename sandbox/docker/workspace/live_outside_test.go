//go:build docker

package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/dockertest"
)

// A fast fill against a 50 MB cap is stopped while the command runs, by
// the measurement from outside the worker's container: the container is
// killed, the command ends with the budget error, Finalize reports it.
func TestLiveOutsideMeasurementStopsAFastFill(t *testing.T) {
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.Limits = sandbox.Limits{MaxBytes: 50 << 20, MaxEntries: 5000}
	cfg.MeasuredSize = true
	w := openLive(t, cfg)
	assertMeasurerHasNoCapability(t, w)
	start := time.Now()
	// 10 MB every 50 ms: 4 GB if nothing stops it, in about 20 s.
	res, err := w.Bash(t.Context(), `for i in $(seq 400); do head -c 10M /dev/zero > f$i; sleep 0.05; done`, 120*time.Second)
	took := time.Since(start)
	var be *sandbox.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("the fill: %+v, %v after %v; want the budget error", res, err, took)
	}
	t.Logf("stopped %v after the command began: %s", took.Round(time.Millisecond), be.Reason)
	if !strings.Contains(be.Reason, "measured from outside the sandbox") {
		t.Errorf("reason %q, want the outside measurement's", be.Reason)
	}
	if took > 10*time.Second {
		t.Errorf("stopped after %v, want within a few 1 s periods", took)
	}
	info, err := w.eng.InspectContainer(t.Context(), w.names.Container)
	if err != nil || info.State.Status == "" || info.State.Running {
		t.Errorf("container after the breach: %+v, %v; want it killed", info.State, err)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.WatchdogViolation == nil || *fin.WatchdogViolation != be.Reason {
		t.Errorf("watchdog_violation %v, want %q", fin.WatchdogViolation, be.Reason)
	}
}

// Entries are capped from outside too, and a path too long for the
// daemon is no reason to stop: the measurer walks by directory.
func TestLiveOutsideMeasurementCountsEntries(t *testing.T) {
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.Limits = sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: 300}
	cfg.MeasuredSize = true
	w := openLive(t, cfg)
	if got := bash(t, w, `n=$(printf 'd%.0s' $(seq 200)); for i in $(seq 25); do mkdir "$n" && cd "$n" || exit 1; done; sleep 3; echo ok`); got != "ok" {
		t.Fatalf("a deep tree: %q", got)
	}
	_, err := w.Bash(t.Context(), `mkdir many && cd many && for i in $(seq 1000); do touch $i; sleep 0.01; done; sleep 30`, 60*time.Second)
	var be *sandbox.BudgetError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "entries") {
		t.Fatalf("past the entry cap: %v", err)
	}
}

// A measurer that stops answering (paused) stops the run after two
// measurements in a row time out: never silence.
func TestLiveOutsideMeasurementTimingOutIsAViolation(t *testing.T) {
	// Restored by a cleanup registered before the workspace's own, so it
	// runs after the workspace (and its watchdog) stopped reading it.
	saved := outsideTimeout
	t.Cleanup(func() { outsideTimeout = saved })
	outsideTimeout = time.Second
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.MeasuredSize = true
	w := openLive(t, cfg)
	bash(t, w, "true") // the measurer is up
	m := w.currentMeasurer()
	if m == nil {
		t.Fatal("no measurer")
	}
	dockertest.Pause(t, m.id)
	start := time.Now()
	_, err := w.Bash(t.Context(), "sleep 60", 90*time.Second)
	var be *sandbox.BudgetError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "could not be measured from outside") {
		t.Fatalf("with the measurer paused: %v after %v", err, time.Since(start))
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("stopped after %v", took)
	}
}

// Sparse files: 20 of 500 MB (no data) are refused before gigabytes reach
// the lane: the budget counts their size, and the export writes zeros as
// holes and refuses each member past the cap at its header.
func TestLiveSparseFiles(t *testing.T) {
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.Limits = sandbox.Limits{MaxBytes: 2048 << 20, MaxEntries: 5000}
	w := openLive(t, cfg)
	_, err := w.Bash(t.Context(), `for i in $(seq 20); do truncate -s 500M s$i; done`, 60*time.Second)
	if err == nil {
		// The walk after the command has the verdict; the next command
		// takes it.
		_, err = w.Bash(t.Context(), "true", 30*time.Second)
	}
	if !sandbox.IsBudget(err) {
		t.Fatalf("20 sparse files of 500 MB under a 2 GB cap: %v, want the budget error", err)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fin.ExportStatus, "export_failed: archive exceeds") {
		t.Errorf("export_status %q", fin.ExportStatus)
	}
	var used int64
	_ = filepath.Walk(r.worktree, func(_ string, fi os.FileInfo, err error) error {
		if err == nil {
			used += fi.Size()
		}
		return nil
	})
	if used > 1<<20 {
		t.Errorf("the lane held %d bytes after the refusal", used)
	}
}

// With DetachRemoval, Close does not wait for the volumes' removal: a
// reap marker stands for them until they are gone, and ReapMarked (the
// next run's, or reconcile's) removes what is left and the marker. A
// marker never removes a volume of another run.
func TestLiveDetachedRemovalIsReaped(t *testing.T) {
	cl := liveClient(t)
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.DetachRemoval = true
	cfg.MeasuredSize = true // a volume with a file system of its own needs no marker
	w, err := Open(t.Context(), docker.ConnectEngine, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bash(t, w, "for i in $(seq 2000); do echo $i > f$i; done")
	if fin, err := w.Finalize(t.Context()); err != nil || fin.ExportStatus != "ok" {
		t.Fatalf("finalize: %+v, %v", fin.ExportStatus, err)
	}
	start := time.Now()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
	// A foreign volume named by a forged marker stays.
	other := newSlug(t)
	otherNames, _ := namesFor(other)
	if err := cl.CreateVolume(t.Context(), otherNames.WorkVolume, labelsFor(other, r.root)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeVolume(context.WithoutCancel(t.Context()), cl, otherNames.WorkVolume) })
	forged, err := cl.CreateContainer(t.Context(), "dw-"+slug+"-forged", reapMarkerSpec(w.imageID, labelsFor(slug, r.root), []string{otherNames.WorkVolume}, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.RemoveContainer(context.WithoutCancel(t.Context()), forged) })
	deadline := time.Now().Add(time.Minute)
	for {
		reapMarked(t.Context(), cl)
		_, errW := volumeLabels(t.Context(), cl, w.names.WorkVolume)
		_, errT := volumeLabels(t.Context(), cl, w.names.ToolsVolume)
		_, errM := cl.InspectContainer(t.Context(), w.names.Container+"-reap")
		// A marker that never ran is started, and removed once it has.
		_, errF := cl.InspectContainer(t.Context(), forged)
		if errors.Is(errW, daemon.ErrNotFound) && errors.Is(errT, daemon.ErrNotFound) && errors.Is(errM, daemon.ErrNotFound) && errors.Is(errF, daemon.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: work %v, tools %v, marker %v", errW, errT, errM)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := volumeLabels(t.Context(), cl, otherNames.WorkVolume); err != nil {
		t.Errorf("a forged marker removed another run's volume: %v", err)
	}
	assertGone(t, cl, cfg, false)
}

// assertMeasurerHasNoCapability reads the measurer's process from the
// host: the worker's uid, no capability in any set.
func assertMeasurerHasNoCapability(t *testing.T, w *Workspace) {
	t.Helper()
	if err := w.waitMeasured(t.Context()); err != nil {
		t.Fatal(err)
	}
	m := w.currentMeasurer()
	if m == nil {
		t.Fatal("no measurer")
	}
	p := dockertest.ProcessOf(t, m.id)
	if p.Pid == 0 {
		t.Fatalf("the measurer's process: %+v", p)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid))
	if err != nil {
		t.Skipf("the measurer's process is not visible here: %v", err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && strings.HasPrefix(f[0], "Cap") && strings.Trim(f[1], "0") != "":
			t.Errorf("measurer: %s", line)
		case len(f) >= 3 && (f[0] == "Uid:" || f[0] == "Gid:") && (f[1] != "1000" || f[2] != "1000"):
			t.Errorf("measurer: %s", line)
		}
	}
}
