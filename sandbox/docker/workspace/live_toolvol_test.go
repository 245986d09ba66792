//go:build docker

package workspace

import (
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// variantToolbox is a build of the tool server no other test uses: the
// test's build with bytes of its own appended (the loader ignores them),
// so its toolbox volume is the test's alone. The volume is removed when
// the test ends, after every workspace the test opened is closed.
func variantToolbox(t *testing.T) (ToolboxSource, toolboxVolume) {
	t.Helper()
	data, err := os.ReadFile(toolboxBinary)
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 16)
	_, _ = rand.Read(suffix)
	path := filepath.Join(t.TempDir(), "dirtywork")
	if err := os.WriteFile(path, append(data, suffix...), 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := toolboxVolumeOf(Toolbox{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	removeToolboxAtEnd(t, v)
	return func(string) (Toolbox, error) { return Toolbox{Path: path}, nil }, v
}

// removeToolboxAtEnd removes v's volume when the test ends, after every
// workspace it opened is closed, and fails if a fill container is left.
func removeToolboxAtEnd(t *testing.T, v toolboxVolume) {
	t.Helper()
	cl := liveClient(t)
	t.Cleanup(func() {
		ctx, cancel := cleanupCtx(t)
		defer cancel()
		if list := fillContainers(t, cl, v); len(list) > 0 {
			t.Errorf("fill containers left: %v", list)
			for _, id := range list {
				_ = cl.RemoveContainer(ctx, id)
			}
		}
		if err := cl.RemoveVolume(ctx, v.name, false); err != nil {
			t.Errorf("remove the toolbox volume %s: %v", v.name, err)
		}
	})
}

// fillContainers are the ids of v's fill containers.
func fillContainers(t *testing.T, cl *docker.Client, v toolboxVolume) []string {
	t.Helper()
	ctx, cancel := cleanupCtx(t)
	defer cancel()
	list, err := cl.ListContainers(ctx, labelToolbox+"="+v.key)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(list))
	for i, c := range list {
		ids[i] = c.ID
	}
	return ids
}

// toolboxLabel is v's dirtywork.toolbox label, "" when the volume is not
// there.
func toolboxLabel(t *testing.T, cl *docker.Client, v toolboxVolume) string {
	t.Helper()
	labels, err := volumeLabels(t.Context(), cl, v.name)
	if errors.Is(err, daemon.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return labels[labelToolbox]
}

// openToolboxRun opens a run on a repository of its own with the tool
// server source src; the workspace is closed when the test ends.
func openToolboxRun(t *testing.T, src ToolboxSource) *Workspace {
	t.Helper()
	slug := newSlug(t)
	cfg := liveConfig(slug, newTestRepo(t, slug, map[string]string{"a.txt": "a\n"}))
	cfg.Toolbox = src
	return openLive(t, cfg)
}

// Runs that start at once share one toolbox volume: one of them fills it,
// the others wait for that fill and use it; none can write into it, and
// nothing of the fill is left.
func TestLiveToolboxVolumeSharedByConcurrentRuns(t *testing.T) {
	src, v := variantToolbox(t)
	cl := liveClient(t)
	const runs = 3
	cfgs := make([]Config, runs)
	for i := range cfgs {
		slug := newSlug(t)
		cfgs[i] = liveConfig(slug, newTestRepo(t, slug, map[string]string{"a.txt": "a\n"}))
		cfgs[i].Toolbox = src
	}
	ws := make([]*Workspace, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Go(func() { ws[i], errs[i] = Open(t.Context(), docker.ConnectEngine, cfgs[i]) })
	}
	wg.Wait()
	for i, w := range ws {
		if errs[i] != nil {
			t.Errorf("run %d: Open: %v", i, errs[i])
			continue
		}
		t.Cleanup(func() {
			if err := w.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			assertGone(t, cl, cfgs[i], false)
		})
	}
	if t.Failed() {
		return
	}
	for i, w := range ws {
		if got := bash(t, w, "cat a.txt; cat /opt/dirtywork-bin/complete"); got != "a\n"+v.key {
			t.Errorf("run %d: %q", i, got)
		}
		res, err := w.Bash(t.Context(), "touch /opt/dirtywork-bin/probe || rm -f /opt/dirtywork-bin/complete || rm -f "+toolboxPath, 10*time.Second)
		if err != nil || res.ExitCode == 0 {
			t.Errorf("run %d wrote into the toolbox volume: %+v, %v", i, res, err)
		}
	}
	if got := toolboxLabel(t, cl, v); got != v.key {
		t.Errorf("toolbox volume labelled %q, want %q", got, v.key)
	}
	if list := fillContainers(t, cl, v); len(list) > 0 {
		t.Errorf("fill containers left while the runs work: %v", list)
	}
}

// A toolbox volume removed between runs is made again by the next.
func TestLiveToolboxVolumeRemovedBetweenRunsIsRecreated(t *testing.T) {
	src, v := variantToolbox(t)
	cl := liveClient(t)
	first := openToolboxRun(t, src)
	bash(t, first, "true")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cl.RemoveVolume(t.Context(), v.name, false); err != nil {
		t.Fatalf("remove the toolbox volume: %v", err)
	}
	second := openToolboxRun(t, src)
	if got := bash(t, second, "cat a.txt"); got != "a" {
		t.Errorf("second run reads %q", got)
	}
	if got := toolboxLabel(t, cl, v); got != v.key {
		t.Errorf("toolbox volume labelled %q after the second run started", got)
	}
}

// plantToolbox makes v's volume, labelled as a fill makes it (or not, with
// label false), holding entries.
func plantToolbox(t *testing.T, v toolboxVolume, label bool, entries ...[]uploadEntry) {
	t.Helper()
	cl := liveClient(t)
	ctx := t.Context()
	labels := map[string]string{}
	if label {
		labels[labelToolbox] = v.key
	}
	if err := cl.CreateVolume(ctx, v.name, labels); err != nil {
		t.Fatal(err)
	}
	img, err := cl.InspectImage(ctx, liveImage)
	if err != nil {
		t.Fatal(err)
	}
	w := &Workspace{eng: cl}
	id, err := cl.CreateContainer(ctx, v.name+"-plant", fillSpec(v, img.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cl.RemoveContainer(ctx, id) }()
	for _, e := range entries {
		if err := w.uploadEntries(ctx, id, toolboxDir, e); err != nil {
			t.Fatal(err)
		}
	}
}

// A toolbox volume is trusted only as its fill left it: one holding
// something else where the tool server belongs, without the marker, is
// filled again (and the run works); one made empty and unlabelled (as a
// container's create makes a missing volume) is made again; one whose
// marker is not the fill's is never used nor written over.
func TestLiveToolboxVolumeNotAsMadeIsNeverTrusted(t *testing.T) {
	impostor := []uploadEntry{{Name: "/", Mode: 0o755}, {Name: "dirtywork", Data: []byte("#!/bin/sh\necho impostor\n"), Mode: 0o555}}
	t.Run("unfinished", func(t *testing.T) {
		src, v := variantToolbox(t)
		plantToolbox(t, v, true, impostor)
		w := openToolboxRun(t, src)
		if got := bash(t, w, "cat a.txt; cat /opt/dirtywork-bin/complete"); got != "a\n"+v.key {
			t.Errorf("run reads %q", got)
		}
	})
	t.Run("unlabelled", func(t *testing.T) {
		src, v := variantToolbox(t)
		plantToolbox(t, v, false)
		w := openToolboxRun(t, src)
		bash(t, w, "true")
		if got := toolboxLabel(t, liveClient(t), v); got != v.key {
			t.Errorf("toolbox volume labelled %q", got)
		}
	})
	t.Run("foreign marker", func(t *testing.T) {
		src, v := variantToolbox(t)
		plantToolbox(t, v, true, impostor, markerEntries(strings.Repeat("0", 64)))
		slug := newSlug(t)
		cfg := liveConfig(slug, newTestRepo(t, slug, map[string]string{"a.txt": "a\n"}))
		cfg.Toolbox = src
		w, err := Open(t.Context(), docker.ConnectEngine, cfg)
		if err == nil {
			_ = w.Close()
			t.Fatal("Open used a toolbox volume whose marker is not its fill's")
		}
		if !errors.Is(err, errToolboxUnfit) {
			t.Errorf("Open: %v, want errToolboxUnfit", err)
		}
		assertGone(t, liveClient(t), cfg, false)
	})
}

// A fill container left by a process that died does not hold the next
// run up: it is removed, and the run fills the volume itself.
func TestLiveAbandonedFillIsTakenOver(t *testing.T) {
	src, v := variantToolbox(t)
	cl := liveClient(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	img, err := cl.InspectImage(t.Context(), liveImage)
	if err != nil {
		t.Fatal(err)
	}
	spec := fillSpec(v, img.ID)
	spec.Labels[labelFillPID] = strconv.Itoa(dead.Process.Pid)
	if err := cl.CreateVolume(t.Context(), v.name, map[string]string{labelToolbox: v.key}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateContainer(t.Context(), v.fillName(), spec); err != nil {
		t.Fatal(err)
	}
	w := openToolboxRun(t, src)
	bash(t, w, "true")
}
