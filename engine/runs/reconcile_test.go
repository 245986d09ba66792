package runs

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/transcript"
)

func TestReconcileCleansCrashedRunsAndOnlyReportsTheRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	// A docker run killed mid-run: its lane holds the base tree the
	// sandbox filled it with, the worker's file is only in the volume.
	wt := e.addLaneRun(repo, "crashed", map[string]any{"status": "running", "sandbox": "docker", "container": "dw-crashed", "volume": "dw-crashed-work"})
	e.store = Open(e.root, WithDocker(e.docker), WithExporter(func(_ context.Context, slug string, opts ExportOptions) (*ExportResult, error) {
		if slug != "crashed" || opts.RunsRoot != e.root {
			t.Errorf("export of %s in %s", slug, opts.RunsRoot)
		}
		writeFile(t, filepath.Join(wt, "work.txt"), "the worker wrote this\n")
		return &ExportResult{Slug: slug, OK: true, Status: "ok"}, nil
	}))
	crashRunDir(t, filepath.Join(e.root, "crashed"))
	e.docker.addContainer("dw-crashed", "exited", "crashed", repo)
	e.docker.addVolume("dw-crashed-work", "crashed", repo)
	e.docker.addVolume("dw-crashed-tools", "crashed", repo)

	liveWt := e.addLaneRun(repo, "live", map[string]any{"status": "running", "sandbox": "docker", "container": "dw-live"})
	lock, err := transcript.AcquireLiveness(filepath.Join(e.root, "live"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	e.docker.addContainer("dw-live", "running", "live", repo)

	e.docker.addContainer("dw-norecord", "exited", "norecord", repo)
	e.docker.addVolume("dw-norecord-work", "norecord", repo)

	other, err := gitops.NewManager(gitops.New(), mustRepo(t, repo)).Open(t.Context(), gitops.OpenOptions{ID: "engine-x/task-1"})
	if err != nil {
		t.Fatal(err)
	}
	// Opening a lane runs the operator's own hooks (their repository, no
	// worker content yet); the marker is for the store's gits only.
	_ = os.Remove(filterMarker())
	if err := os.MkdirAll(filepath.Join(repo, ".worktrees", "stray"), 0o755); err != nil {
		t.Fatal(err)
	}

	dry, err := e.store.Reconcile(t.Context(), ReconcileOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"crashed-run crashed": "clean", "container dw-norecord": "remove", "volume dw-norecord-work": "report",
		"lane engine-x/task-1": "report", "directory " + filepath.Join(repo, ".worktrees", "stray"): "report",
	}
	got := map[string]string{}
	for _, o := range dry.Orphans {
		got[o.Kind+" "+o.Name] = o.Action
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected orphan %s", k)
		}
	}
	if len(e.docker.removed) != 0 {
		t.Fatalf("a dry run removed %v", e.docker.removed)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatal("a dry run removed a worktree")
	}

	done, err := e.store.Reconcile(t.Context(), ReconcileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range done.Cleaned {
		if c.Skipped() {
			t.Errorf("cleaning %s skipped:\n%s", c.Slug, actions(c))
		}
	}
	if got := git(t, repo, "show", ParkedRef("crashed")+":work.txt"); got != "the worker wrote this" {
		t.Errorf("parked work.txt = %q", got)
	}
	for _, gone := range []string{"dw-crashed", "dw-norecord"} {
		if _, ok := e.docker.containers[gone]; ok {
			t.Errorf("container %s left", gone)
		}
	}
	for _, gone := range []string{"dw-crashed-work", "dw-crashed-tools"} {
		if _, ok := e.docker.volumes[gone]; ok {
			t.Errorf("volume %s left", gone)
		}
	}
	if _, ok := e.docker.volumes["dw-norecord-work"]; !ok {
		t.Error("a work volume with no record was removed")
	}
	if _, ok := e.docker.containers["dw-live"]; !ok {
		t.Error("a live run's container was removed")
	}
	if _, err := os.Stat(liveWt); err != nil {
		t.Error("a live run's worktree was removed")
	}
	if _, err := os.Stat(other.Worktree); err != nil {
		t.Error("another engine's lane was removed")
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Error("the crashed run's worktree is still there")
	}
	if out := git(t, repo, "branch", "--list", "dirtywork/crashed"); out != "" {
		t.Errorf("the crashed run's branch is still there: %q", out)
	}
	if _, err := os.Stat(filepath.Join(e.root, "crashed", "run.json")); err != nil {
		t.Error("the crashed run's record was removed")
	}
	// Again: nothing left to do for the crashed run.
	again, err := e.store.Reconcile(t.Context(), ReconcileOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range again.Orphans {
		if o.Slug == "crashed" {
			t.Errorf("still an orphan after reconcile: %+v", o)
		}
	}
}

func mustRepo(t *testing.T, path string) gitops.Repo {
	t.Helper()
	r, err := gitops.ResolveRepo(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReconcileReapsHandedOffVolumeRemovals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	e.addLaneRun(repo, "done", map[string]any{"sandbox": "docker", "export_status": "ok"})
	e.addLaneRun(repo, "live", map[string]any{"status": "running"})
	lock, err := transcript.AcquireLiveness(filepath.Join(e.root, "live"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	// The finished run's marker, exited 0, names its work and tools
	// volumes; a marker naming the live run's volume is a forgery
	// (another run's label) and removes nothing but itself; a marker still
	// emptying its volume is left for later; one that exited with an
	// error (its volume not emptied) and one never started run again.
	e.docker.addContainer("dw-done-reap", "exited", "done", repo)
	e.docker.containers["dw-done-reap"].Labels[docker.LabelReap] = "dw-done-work,dw-done-tools"
	done := e.docker.containers["dw-done-reap"]
	done.ReapDone = true
	e.docker.containers["dw-done-reap"] = done
	e.docker.addVolume("dw-done-work", "done", repo)
	e.docker.addVolume("dw-done-tools", "done", repo)
	e.docker.addContainer("dw-forged-reap", "exited", "forged", repo)
	e.docker.containers["dw-forged-reap"].Labels[docker.LabelReap] = "dw-live-work"
	forged := e.docker.containers["dw-forged-reap"]
	forged.ReapDone = true
	e.docker.containers["dw-forged-reap"] = forged
	e.docker.addContainer("dw-failed-reap", "exited", "failed", repo)
	e.docker.containers["dw-failed-reap"].Labels[docker.LabelReap] = "dw-failed-work"
	e.docker.addVolume("dw-failed-work", "failed", repo)
	e.docker.addVolume("dw-live-work", "live", repo)
	e.docker.addContainer("dw-busy-reap", "running", "busy", repo)
	e.docker.containers["dw-busy-reap"].Labels[docker.LabelReap] = "dw-busy-work"
	e.docker.addVolume("dw-busy-work", "busy", repo)
	e.docker.addContainer("dw-new-reap", "created", "new", repo)
	e.docker.containers["dw-new-reap"].Labels[docker.LabelReap] = "dw-new-work,dw-new-tools"
	e.docker.addVolume("dw-new-work", "new", repo)
	e.docker.addVolume("dw-new-tools", "new", repo)

	dry, err := e.store.Reconcile(t.Context(), ReconcileOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Removed) != 0 || len(e.docker.volumes) != 7 || len(e.docker.started) != 0 {
		t.Fatalf("a dry run removed %v, started %v", dry.Removed, e.docker.started)
	}
	rep, err := e.store.Reconcile(t.Context(), ReconcileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"dw-done-work", "dw-done-tools"} {
		if _, ok := e.docker.volumes[gone]; ok {
			t.Errorf("%s was not reaped (removed %v, failed %v)", gone, rep.Removed, rep.Failed)
		}
	}
	for _, name := range []string{"dw-done-reap", "dw-forged-reap"} {
		if _, ok := e.docker.containers[name]; ok {
			t.Errorf("the exited marker %s is still there", name)
		}
	}
	if _, ok := e.docker.volumes["dw-live-work"]; !ok {
		t.Error("a marker naming another run's volume removed it")
	}
	if _, ok := e.docker.containers["dw-busy-reap"]; !ok {
		t.Error("a marker still emptying its volume was removed")
	}
	for _, v := range []string{"dw-busy-work", "dw-new-work", "dw-new-tools", "dw-failed-work"} {
		if _, ok := e.docker.volumes[v]; !ok {
			t.Errorf("%s, named by a marker that has not emptied it, was removed", v)
		}
	}
	for _, m := range []string{"dw-new-reap", "dw-failed-reap"} {
		if _, ok := e.docker.containers[m]; !ok {
			t.Errorf("the marker %s, whose work is not done, was removed", m)
		}
	}
	if got := slices.Sorted(slices.Values(e.docker.started)); !slices.Equal(got, []string{"dw-failed-reap", "dw-new-reap"}) {
		t.Errorf("started %q, want the failed and the new marker", got)
	}
	if len(rep.Failed) != 0 {
		t.Errorf("a removal in progress counted as a failure: %v", rep.Failed)
	}
}

// The file system of a work volume that is gone is removed, with its loop
// devices, unless its run is alive (it is making the volume); one whose
// volume exists goes with the volume.
func TestReconcileRemovesOrphanedVolumeStores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	e.addLaneRun(repo, "done", map[string]any{"sandbox": "docker", "export_status": "ok"})
	e.addLaneRun(repo, "live", map[string]any{"status": "running", "sandbox": "docker"})
	lock, err := transcript.AcquireLiveness(filepath.Join(e.root, "live"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	e.docker.addStore("dw-done-work")    // its volume was removed by hand
	e.docker.addStore("dw-unknown-work") // no record at all
	e.docker.addStore("dw-live-work")    // the live run makes its volume
	e.docker.addStore("dw-kept-work")    // a volume a finished run kept
	e.addLaneRun(repo, "kept", map[string]any{"sandbox": "docker", "volume": "dw-kept-work", "export_status": "export_failed: x"})
	e.docker.addVolume("dw-kept-work", "kept", repo)

	dry, err := e.store.Reconcile(t.Context(), ReconcileOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range dry.Orphans {
		if o.Kind == "volume-store" {
			got[o.Name] = o.Action
		}
	}
	if want := map[string]string{"dw-done-work": "remove", "dw-unknown-work": "remove"}; !maps.Equal(got, want) {
		t.Errorf("volume-store orphans %v, want %v", got, want)
	}
	if len(e.docker.stores) != 4 {
		t.Fatalf("a dry run released %v", e.docker.removed)
	}
	rep, err := e.store.Reconcile(t.Context(), ReconcileOptions{})
	if err != nil || len(rep.Failed) != 0 {
		t.Fatalf("reconcile: %v, failed %v", err, rep.Failed)
	}
	left := slices.Sorted(maps.Keys(e.docker.stores))
	if want := []string{"dw-kept-work", "dw-live-work"}; !slices.Equal(left, want) {
		t.Errorf("file systems left %q, want %q", left, want)
	}
}

// A run dirtywork 0.9.1 started and that is still going has no liveness
// file: its run.json's host_pid, while it is still the run's process, says
// it is alive. Listing, reconcile and clean leave it alone then, and call
// it crashed once that process is gone.
func TestARunOf091IsAliveWhileItsProcessIs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	pid, stop := startFakeOriginal(t)
	wt := e.addLaneRun(repo, "legacy", map[string]any{"status": "running", "host_pid": pid, "started": isoNow()})
	writeFile(t, filepath.Join(wt, "work.txt"), "being written by 0.9.1\n")
	if transcript.HasLivenessFile(filepath.Join(e.root, "legacy")) {
		t.Fatal("the fixture has a liveness file: not a record of 0.9.1")
	}

	run, err := e.store.Get("legacy")
	if err != nil || !run.Alive || run.Crashed() {
		t.Fatalf("while its process runs: alive %v crashed %v (%v)", run != nil && run.Alive, run != nil && run.Crashed(), err)
	}
	list, err := e.store.List(t.Context(), ListOptions{})
	if err != nil || len(list) != 1 || !list[0].Alive {
		t.Fatalf("List: %v %v", list, err)
	}
	rep, err := e.store.Reconcile(t.Context(), ReconcileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Orphans {
		if o.Slug == "legacy" {
			t.Errorf("reconcile judged the live run: %+v", o)
		}
	}
	if len(rep.Cleaned) != 0 {
		t.Errorf("reconcile cleaned %v", rep.Cleaned)
	}
	mustContain(t, e.store.Clean(t.Context(), "legacy", CleanOptions{Force: true}), "skip: 'legacy' is still running (its host process is alive)")
	if _, err := os.Stat(filepath.Join(wt, "work.txt")); err != nil {
		t.Fatal("the live run's work was touched")
	}

	stop()
	if run, err = e.store.Get("legacy"); err != nil || run.Alive || !run.Crashed() {
		t.Fatalf("after its process ended: alive %v crashed %v (%v)", run.Alive, run.Crashed(), err)
	}
	dry, err := e.store.Reconcile(t.Context(), ReconcileOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(dry.Orphans, func(o Orphan) bool { return o.Kind == "crashed-run" && o.Slug == "legacy" }) {
		t.Errorf("the ended run is not called crashed: %+v", dry.Orphans)
	}
}

// TestReconcileWithoutADaemonFailsOnlyWhenADockerRunIsThere: a host-mode
// user without a docker daemon gets a clean reconcile (a note says docker
// was not looked at); once a run of the runs root used docker, the daemon
// out of reach is a failure: what it holds may be that run's.
func TestReconcileWithoutADaemonFailsOnlyWhenADockerRunIsThere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	e.addLaneRun(repo, "host-run", nil)
	e.docker.down = errors.New("Cannot connect to the Docker daemon at unix:///var/run/docker.sock")
	rep, err := e.store.Reconcile(t.Context(), ReconcileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failed) != 0 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "docker: not looked at") {
		t.Fatalf("host-only runs root, daemon down: failed %v, notes %v", rep.Failed, rep.Notes)
	}
	e.addLaneRun(repo, "docker-run", map[string]any{"sandbox": "docker"})
	rep, err = e.store.Reconcile(t.Context(), ReconcileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failed) != 1 || !strings.HasPrefix(rep.Failed[0], "docker: ") || len(rep.Notes) != 0 {
		t.Fatalf("a docker run there, daemon down: failed %v, notes %v", rep.Failed, rep.Notes)
	}
}
