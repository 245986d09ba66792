package runs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/transcript"
)

func TestReconcileCleansCrashedRunsAndOnlyReportsTheRest(t *testing.T) {
	e := newEnv(t)
	repo := newRepo(t)
	// A docker run killed mid-run: its lane holds the base tree the
	// sandbox filled it with, the worker's file is only in the volume.
	wt := e.addLaneRun(repo, "crashed", map[string]any{"status": "running", "sandbox": "docker", "container": "dw-crashed", "volume": "dw-crashed-work"})
	e.store = Open(e.root, WithDocker(e.docker), WithExporter(func(_ context.Context, slug string, opts engine.ExportOptions) (*engine.ExportResult, error) {
		if slug != "crashed" || opts.RunsRoot != e.root {
			t.Errorf("export of %s in %s", slug, opts.RunsRoot)
		}
		writeFile(t, filepath.Join(wt, "work.txt"), "the worker wrote this\n")
		return &engine.ExportResult{Slug: slug, OK: true, Status: "ok"}, nil
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
	e := newEnv(t)
	repo := newRepo(t)
	e.addLaneRun(repo, "done", map[string]any{"sandbox": "docker", "export_status": "ok"})
	e.addLaneRun(repo, "live", map[string]any{"status": "running"})
	lock, err := transcript.AcquireLiveness(filepath.Join(e.root, "live"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	// The finished run's exited marker names its work and tools volumes;
	// a marker naming the live run's volume is a forgery (another run's
	// label) and removes nothing but itself; a marker still emptying its
	// volume is left for later.
	e.docker.addContainer("dw-done-reap", "exited", "done", repo)
	e.docker.containers["dw-done-reap"].Labels[docker.LabelReap] = "dw-done-work,dw-done-tools"
	e.docker.addVolume("dw-done-work", "done", repo)
	e.docker.addVolume("dw-done-tools", "done", repo)
	e.docker.addContainer("dw-forged-reap", "exited", "forged", repo)
	e.docker.containers["dw-forged-reap"].Labels[docker.LabelReap] = "dw-live-work"
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
	if len(dry.Removed) != 0 || len(e.docker.volumes) != 6 {
		t.Fatalf("a dry run removed %v", dry.Removed)
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
	for _, v := range []string{"dw-busy-work", "dw-new-work", "dw-new-tools"} {
		if _, ok := e.docker.volumes[v]; !ok {
			t.Errorf("%s, named by a marker that has not exited, was removed", v)
		}
	}
	if _, ok := e.docker.containers["dw-new-reap"]; !ok {
		t.Error("a marker not yet started was removed")
	}
	if len(rep.Failed) != 0 {
		t.Errorf("a removal in progress counted as a failure: %v", rep.Failed)
	}
}
