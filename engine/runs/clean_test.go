package runs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/transcript"
)

func actions(r *CleanResult) string {
	var lines []string
	for _, a := range r.Actions {
		lines = append(lines, a.String())
	}
	return strings.Join(lines, "\n")
}

func mustContain(t *testing.T, r *CleanResult, wants ...string) {
	t.Helper()
	got := actions(r)
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("actions lack %q:\n%s", w, got)
		}
	}
}

func TestCleanRemovesMatchingObjectsAndTheRunDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	e.addLaneRun(repo, "slug1", map[string]any{"sandbox": "docker", "container": "dw-slug1", "volume": "dw-slug1-work", "export_status": "ok"})
	e.docker.addContainer("dw-slug1", "exited", "slug1", repo)
	e.docker.addVolume("dw-slug1-work", "slug1", repo)
	e.docker.addVolume("dw-slug1-tools", "slug1", repo)
	r := e.store.Clean(t.Context(), "slug1", CleanOptions{})
	if r.Skipped() {
		t.Fatalf("skipped:\n%s", actions(r))
	}
	mustContain(t, r, "removed-container: dw-slug1", "removed-volume: dw-slug1-work", "removed-volume: dw-slug1-tools",
		"removed-worktree: ", "removed-branch: dirtywork/slug1", "removed-rundir: ")
	if _, err := os.Stat(filepath.Join(e.root, "slug1")); !os.IsNotExist(err) {
		t.Error("run dir still there")
	}
	if out := git(t, repo, "branch", "--list", "dirtywork/slug1"); out != "" {
		t.Errorf("branch still there: %q", out)
	}
	// Twice is fine: the run is gone, which is a skip for an unknown slug
	// (0.9.1), but nothing else is touched.
	again := e.store.Clean(t.Context(), "slug1", CleanOptions{})
	mustContain(t, again, "skip: no such run 'slug1'")
}

func TestCleanTwiceAfterKeepTranscript(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	e.addLaneRun(repo, "kept", map[string]any{"sandbox": "docker", "container": "dw-kept", "volume": "dw-kept-work"})
	writeFile(t, filepath.Join(e.root, "kept", "transcript.jsonl"), "")
	writeFile(t, filepath.Join(e.root, "kept", "diff.patch"), "x")
	for i := range 2 {
		r := e.store.Clean(t.Context(), "kept", CleanOptions{KeepTranscript: true})
		if r.Skipped() {
			t.Fatalf("round %d skipped:\n%s", i, actions(r))
		}
		mustContain(t, r, "absent-container: dw-kept", "absent-volume: dw-kept-work", "kept-transcript: ")
	}
	entries, _ := os.ReadDir(filepath.Join(e.root, "kept"))
	var names []string
	for _, en := range entries {
		if !strings.HasPrefix(en.Name(), ".") {
			names = append(names, en.Name())
		}
	}
	if !equal(names, []string{"run.json", "transcript.jsonl"}) {
		t.Errorf("left %v", names)
	}
}

func TestCleanRefusesForeignLabelsAndADeadDaemon(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "labels", map[string]any{"sandbox": "docker", "container": "dw-labels", "volume": "dw-labels-work"})
	e.docker.addContainer("dw-labels", "exited", "someone-else", repo)
	r := e.store.Clean(t.Context(), "labels", CleanOptions{Force: true})
	if !r.Skipped() {
		t.Fatal("not skipped")
	}
	mustContain(t, r, "skip-container: dw-labels: labels do not match", "kept-worktree: ", "kept-run-dir: ")
	if _, err := os.Stat(wt); err != nil {
		t.Error("worktree removed")
	}
	e.docker.down = errors.New("Cannot connect to the Docker daemon: no such file or directory")
	r = e.store.Clean(t.Context(), "labels", CleanOptions{Force: true})
	mustContain(t, r, "skip-container: dw-labels: cannot inspect", "kept-run-dir: ")
	if len(e.docker.removed) != 0 {
		t.Errorf("removed %v", e.docker.removed)
	}
}

func TestCleanLiveAndCrashedRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.addRun("live", map[string]any{"status": "running", "host_pid": os.Getpid()})
	lock, err := transcript.AcquireLiveness(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := e.store.Clean(t.Context(), "live", CleanOptions{Force: true})
	mustContain(t, r, "skip: 'live' is still running (its host process is alive)")
	_ = lock.Release()
	r = e.store.Clean(t.Context(), "live", CleanOptions{})
	mustContain(t, r, "dead host process")
	if !r.Skipped() {
		t.Error("a crashed run was cleaned without --force")
	}
	r = e.store.Clean(t.Context(), "live", CleanOptions{Force: true})
	if r.Skipped() {
		t.Errorf("crashed run with --force:\n%s", actions(r))
	}
	// A record of a version without the lock: its host_pid decides, when
	// it is still the run's process (dirtywork, started before the run).
	pid, _ := startFakeOriginal(t)
	e.addRun("old", map[string]any{"status": "running", "host_pid": pid, "started": isoNow()})
	mustContain(t, e.store.Clean(t.Context(), "old", CleanOptions{Force: true}), "host process is alive")
}

func TestCleanInvalidSlugsTouchNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, slug := range []string{"../victim", "/etc", ".", "..", "a/b", "", "-x", "unknown"} {
		if r := e.store.Clean(t.Context(), slug, CleanOptions{Force: true}); !r.Skipped() || len(r.Actions) != 1 {
			t.Errorf("%q: %s", slug, actions(r))
		}
	}
}

func TestCleanNotOwned(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("changing a file's owner needs root")
	}
	e := newEnv(t)
	dir := e.addRun("foreign", nil)
	if err := os.Chown(filepath.Join(dir, "run.json"), 12345, 12345); err != nil {
		t.Fatal(err)
	}
	mustContain(t, e.store.Clean(t.Context(), "foreign", CleanOptions{Force: true}), "skip: run.json of 'foreign' is not owned")
}

func TestCleanNeverLosesWork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "dirty", nil)
	writeFile(t, filepath.Join(wt, "work.txt"), "precious\n")
	r := e.store.Clean(t.Context(), "dirty", CleanOptions{})
	mustContain(t, r, "skip-worktree: ", "uncommitted changes", "kept-run-dir: ")
	if _, err := os.Stat(filepath.Join(wt, "work.txt")); err != nil {
		t.Fatal("work deleted without --force")
	}
	r = e.store.Clean(t.Context(), "dirty", CleanOptions{Force: true})
	if r.Skipped() {
		t.Fatalf("--force skipped:\n%s", actions(r))
	}
	mustContain(t, r, "parked: refs/dirtywork/parked/dirty", "removed-worktree: ", "removed-branch: dirtywork/dirty")
	if got := git(t, repo, "show", "refs/dirtywork/parked/dirty:work.txt"); got != "precious" {
		t.Errorf("parked work.txt = %q", got)
	}

	wt = e.addLaneRun(repo, "ahead", nil)
	writeFile(t, filepath.Join(wt, "c.txt"), "committed\n")
	git(t, wt, "add", "c.txt")
	git(t, wt, "commit", "-q", "-m", "worker commit")
	mustContain(t, e.store.Clean(t.Context(), "ahead", CleanOptions{}), "commits beyond its base")
	r = e.store.Clean(t.Context(), "ahead", CleanOptions{Force: true})
	mustContain(t, r, "parked: refs/dirtywork/parked/ahead")
	if got := git(t, repo, "show", "refs/dirtywork/parked/ahead:c.txt"); got != "committed" {
		t.Errorf("parked c.txt = %q", got)
	}

	// A worktree deleted by hand: its branch's commits are parked too.
	wt = e.addLaneRun(repo, "handgone", nil)
	writeFile(t, filepath.Join(wt, "d.txt"), "d\n")
	git(t, wt, "add", "d.txt")
	git(t, wt, "commit", "-q", "-m", "worker commit")
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	r = e.store.Clean(t.Context(), "handgone", CleanOptions{})
	if r.Skipped() {
		t.Fatalf("hand-deleted worktree:\n%s", actions(r))
	}
	mustContain(t, r, "absent-worktree: ", "parked: refs/dirtywork/parked/handgone", "removed-branch: dirtywork/handgone")
}

// A lane that never received a tree (only its .git file: a run killed
// before its checkout or export) has nothing to park: no parked ref that
// would read as the deletion of every file.
func TestCleanParksNothingOfALaneThatNeverGotATree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "empty", nil)
	entries, err := os.ReadDir(wt)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if en.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(wt, en.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := e.store.Clean(t.Context(), "empty", CleanOptions{})
	if r.Skipped() {
		t.Fatalf("clean skipped:\n%s", actions(r))
	}
	mustContain(t, r, "removed-worktree: ", "removed-branch: dirtywork/empty")
	if out := git(t, repo, "for-each-ref", "refs/dirtywork/parked/"); out != "" {
		t.Errorf("parked %q", out)
	}
}

func TestCleanRefusesWorktreesThatAreNotTheRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	other := filepath.Join(repo, ".worktrees", "mine")
	git(t, repo, "worktree", "add", "-q", "-b", "mine", other, "main")
	e.addRun("foreignwt", map[string]any{"repo": repo, "worktree": other, "branch": "mine", "base_commit": git(t, repo, "rev-parse", "main")})
	mustContain(t, e.store.Clean(t.Context(), "foreignwt", CleanOptions{Force: true}), "skip-worktree: ", "not a linked worktree")
	if _, err := os.Stat(other); err != nil {
		t.Error("a worktree that is not the run's was removed")
	}
}

func TestCleanOtherBranchCheckedOutAndResumedBy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "switched", nil)
	git(t, wt, "checkout", "-q", "-b", "elsewhere")
	r := e.store.Clean(t.Context(), "switched", CleanOptions{Force: true})
	mustContain(t, r, "removed-worktree: ", "skip-branch: dirtywork/switched")
	if git(t, repo, "branch", "--list", "dirtywork/switched") == "" {
		t.Error("the recorded branch was deleted though another was checked out")
	}

	wt = e.addLaneRun(repo, "resumed", map[string]any{"resumed_by": "newer"})
	r = e.store.Clean(t.Context(), "resumed", CleanOptions{})
	if r.Skipped() {
		t.Fatalf("resumed:\n%s", actions(r))
	}
	mustContain(t, r, "kept-worktree: ", "removed-rundir: ")
	if _, err := os.Stat(wt); err != nil {
		t.Error("the worktree a newer run owns was removed")
	}
}

func TestCleanExportsAVolumeWhoseTreeNeverReachedTheWorktree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	var exported []string
	e.store = Open(e.root, WithDocker(e.docker), WithExporter(func(_ context.Context, slug string, opts ExportOptions) (*ExportResult, error) {
		exported = append(exported, slug)
		if !opts.KeepVolume {
			t.Error("the export was asked to drop the volume itself")
		}
		wt := filepath.Join(repo, ".worktrees", "dw-"+slug)
		writeFile(t, filepath.Join(wt, "a.txt"), "from the volume\n")
		writeFile(t, filepath.Join(wt, "b.txt"), "beta\n")
		return &ExportResult{Slug: slug, OK: true, Status: "ok"}, nil
	}))
	wt := e.addLaneRun(repo, "vol", map[string]any{"sandbox": "docker", "status": "export_failed", "container": "dw-vol", "volume": "dw-vol-work"})
	for _, n := range []string{"a.txt", "b.txt"} {
		_ = os.Remove(filepath.Join(wt, n))
	}
	e.docker.addVolume("dw-vol-work", "vol", repo)
	r := e.store.Clean(t.Context(), "vol", CleanOptions{})
	mustContain(t, r, "exported-volume: dw-vol-work", "removed-volume: dw-vol-work", "skip-worktree: ")
	if len(exported) != 1 {
		t.Fatalf("exported %v", exported)
	}
	r = e.store.Clean(t.Context(), "vol", CleanOptions{Force: true})
	mustContain(t, r, "parked: refs/dirtywork/parked/vol")
	if got := git(t, repo, "show", "refs/dirtywork/parked/vol:a.txt"); got != "from the volume" {
		t.Errorf("parked a.txt = %q", got)
	}

	// An export that fails, of a volume nothing can be salvaged of,
	// keeps the volume.
	e.store = Open(e.root, WithDocker(e.docker), WithExporter(func(context.Context, string, ExportOptions) (*ExportResult, error) {
		return &ExportResult{Status: "export_failed: worktree exceeds 2048 MB"}, nil
	}), WithSalvager(func(context.Context, string, ExportOptions) (workspace.VolumeSalvage, error) {
		return workspace.VolumeSalvage{}, errors.New("the daemon went away")
	}))
	wt = e.addLaneRun(repo, "vol2", map[string]any{"sandbox": "docker", "volume": "dw-vol2-work"})
	for _, n := range []string{"a.txt", "b.txt"} {
		_ = os.Remove(filepath.Join(wt, n))
	}
	e.docker.addVolume("dw-vol2-work", "vol2", repo)
	r = e.store.Clean(t.Context(), "vol2", CleanOptions{Force: true})
	mustContain(t, r, "skip-volume: dw-vol2-work: the export refused it", "could be salvaged (the daemon went away); kept", "kept-run-dir: ")
	if _, ok := e.docker.volumes["dw-vol2-work"]; !ok {
		t.Error("the only copy of the work was removed")
	}
}

func TestCleanDryRunIsThePlanAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "plan", map[string]any{"sandbox": "docker", "container": "dw-plan", "volume": "dw-plan-work"})
	writeFile(t, filepath.Join(wt, "w.txt"), "w\n")
	e.docker.addContainer("dw-plan", "exited", "plan", repo)
	e.docker.addVolume("dw-plan-work", "plan", repo)
	r := e.store.Clean(t.Context(), "plan", CleanOptions{Force: true, DryRun: true})
	if r.Skipped() || !r.DryRun || r.Parked != ParkedRef("plan") {
		t.Fatalf("plan:\n%s", actions(r))
	}
	mustContain(t, r, "remove-container: dw-plan", "remove-volume: dw-plan-work", "park: refs/dirtywork/parked/plan", "remove-worktree: ", "remove-branch: dirtywork/plan", "remove-rundir: ")
	if len(e.docker.removed) != 0 {
		t.Errorf("removed %v", e.docker.removed)
	}
	if _, err := os.Stat(filepath.Join(wt, "w.txt")); err != nil {
		t.Error("the worktree changed")
	}
	if out := git(t, repo, "for-each-ref", "refs/dirtywork/"); out != "" {
		t.Errorf("a dry run parked: %s", out)
	}
}

// A docker run killed mid-export: its lane holds the base and part of the
// new tree; the volume holds all of it. The lane is cleared and the
// export tried again; the work ends up parked, none lost.
func TestCleanOfACrashMidExportClearsTheLaneAndExports(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "midexp", map[string]any{"sandbox": "docker", "status": "running", "volume": "dw-midexp-work"})
	crashRunDir(t, filepath.Join(e.root, "midexp"))
	writeFile(t, filepath.Join(wt, "half.txt"), "half\n")
	calls := 0
	e.store = Open(e.root, WithDocker(e.docker), WithExporter(func(_ context.Context, slug string, _ ExportOptions) (*ExportResult, error) {
		calls++
		if !onlyGitFile(wt) {
			return nil, errors.New("worktree is not empty")
		}
		writeFile(t, filepath.Join(wt, "a.txt"), "alpha\n")
		writeFile(t, filepath.Join(wt, "b.txt"), "beta\n")
		writeFile(t, filepath.Join(wt, "half.txt"), "half\n")
		writeFile(t, filepath.Join(wt, "whole.txt"), "whole\n")
		return &ExportResult{Slug: slug, OK: true, Status: "ok"}, nil
	}))
	e.docker.addVolume("dw-midexp-work", "midexp", repo)
	r := e.store.Clean(t.Context(), "midexp", CleanOptions{Force: true, KeepTranscript: true})
	if r.Skipped() || calls != 2 {
		t.Fatalf("%d export calls:\n%s", calls, actions(r))
	}
	mustContain(t, r, "cleared-worktree: ", "exported-volume: dw-midexp-work", "removed-volume: dw-midexp-work", "parked: ")
	for f, want := range map[string]string{"half.txt": "half", "whole.txt": "whole"} {
		if got := git(t, repo, "show", ParkedRef("midexp")+":"+f); got != want {
			t.Errorf("parked %s = %q", f, got)
		}
	}
}

func crashRunDir(t *testing.T, dir string) {
	t.Helper()
	lock, err := transcript.AcquireLiveness(dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Release()
}

func TestCleanLeavesARunWhoseLockIsHeldWhateverItsStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.addRun("beingresumed", map[string]any{"status": "max_turns"})
	lock, err := transcript.AcquireLiveness(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	r := e.store.Clean(t.Context(), "beingresumed", CleanOptions{Force: true})
	mustContain(t, r, "skip: 'beingresumed' is in use")
	if _, err := os.Stat(dir); err != nil {
		t.Error("the run dir was removed")
	}
}

// A work volume's file system goes with the volume, and one whose volume
// is gone (a run killed before it made it) goes too.
func TestCleanReleasesVolumeStores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	e.addLaneRun(repo, "kept", map[string]any{"sandbox": "docker", "volume": "dw-kept-work", "export_status": "ok"})
	e.docker.addVolume("dw-kept-work", "kept", repo)
	e.docker.addStore("dw-kept-work")
	e.addLaneRun(repo, "early", map[string]any{"sandbox": "docker", "volume": "dw-early-work", "export_status": "ok"})
	e.docker.addStore("dw-early-work")

	dry := e.store.Clean(t.Context(), "early", CleanOptions{DryRun: true})
	mustContain(t, dry, "remove-volume-store: /images/dw-early-work.ext4")
	if len(e.docker.stores) != 2 {
		t.Fatalf("a dry run released %v", e.docker.removed)
	}
	for _, slug := range []string{"kept", "early"} {
		r := e.store.Clean(t.Context(), slug, CleanOptions{})
		if r.Skipped() {
			t.Fatalf("%s skipped:\n%s", slug, actions(r))
		}
	}
	if len(e.docker.stores) != 0 {
		t.Errorf("file systems left: %v", e.docker.stores)
	}
	mustContain(t, e.store.Clean(t.Context(), "early", CleanOptions{}), "skip: no such run")
}

// A kept volume the export refuses as a whole (a member it will not
// write) does not stop --force: what can be written of it is salvaged
// into the worktree and parked with the run's work, what could not is
// named, and the volume goes. Without --force it stays.
func TestCleanForceSalvagesAnUnexportableVolume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "refused", map[string]any{"sandbox": "docker", "volume": "dw-refused-work", "export_status": "export_failed: archive exceeds 10 files at 'x'"})
	e.docker.addVolume("dw-refused-work", "refused", repo)
	e.docker.addStore("dw-refused-work")
	salvages := 0
	e.store = Open(e.root, WithDocker(e.docker),
		WithExporter(func(_ context.Context, slug string, _ ExportOptions) (*ExportResult, error) {
			return &ExportResult{Slug: slug, Status: "export_failed: archive exceeds 10 files at 'x'"}, nil
		}),
		WithSalvager(func(_ context.Context, slug string, opts ExportOptions) (workspace.VolumeSalvage, error) {
			salvages++
			if slug != "refused" || opts.RunsRoot != e.root {
				t.Errorf("salvage of %s in %s", slug, opts.RunsRoot)
			}
			writeFile(t, filepath.Join(wt, "salvaged.txt"), "the worker wrote this\n")
			return workspace.VolumeSalvage{
				Entries: 1, Bytes: 22, LeftOutCount: 3,
				LeftOut: []export.LeftOut{{Name: "x", Reason: "archive exceeds 10 files at 'x'"}, {Name: "y", Reason: "archive exceeds 10 files at 'y'"}},
				Dropped: []string{"sub/.git"},
			}, nil
		}))

	r := e.store.Clean(t.Context(), "refused", CleanOptions{})
	mustContain(t, r, "skip-volume: dw-refused-work: ", "--force parks what of it can be written")
	if salvages != 0 || e.docker.volumes["dw-refused-work"].Name == "" {
		t.Fatalf("without --force: %d salvages, volume %v", salvages, e.docker.volumes)
	}
	r = e.store.Clean(t.Context(), "refused", CleanOptions{Force: true})
	if r.Skipped() {
		t.Fatalf("--force skipped:\n%s", actions(r))
	}
	mustContain(t, r, "salvaged-volume: dw-refused-work into "+wt, "1 entries, 22 bytes",
		"not-parked: x: archive exceeds 10 files at 'x'", "not-parked: y: ", "not-parked: 1 more entries of dw-refused-work",
		"not-parked: sub/.git: ", "removed-volume: dw-refused-work", "parked: refs/dirtywork/parked/refused", "removed-worktree: ")
	if got := git(t, repo, "show", ParkedRef("refused")+":salvaged.txt"); got != "the worker wrote this" {
		t.Errorf("parked salvaged.txt = %q", got)
	}
	if len(e.docker.stores) != 0 {
		t.Errorf("the volume's file system is left: %v", e.docker.stores)
	}
}

// A pre-resume stash (<worktree>.pre-resume-<slug>: the worktree's files a
// docker resume set aside around its export, left by an interrupted one)
// may be the only copy of the work from before that resume. It is never
// deleted beside a worktree that stays (0.9.1's kept-stash line), and it
// goes only with its worktree, parked like the worktree's own changes:
// with --force when the worktree is there, always when it was deleted.
func TestCleanNeverDeletesAPreResumeStashItDidNotPark(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	stashOf := func(wt, slug string, files map[string]string) string {
		t.Helper()
		st := wt + PreResumeMarker + slug
		if err := os.Mkdir(st, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			writeFile(t, filepath.Join(st, name), content)
		}
		return st
	}
	prior := map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "prior.txt": "work from before the resume\n"}
	exists := func(path string) bool {
		_, err := os.Lstat(path)
		return err == nil
	}

	t.Run("kept beside a worktree clean refuses", func(t *testing.T) {
		wt := e.addLaneRun(repo, "dirtystash", nil)
		writeFile(t, filepath.Join(wt, "work.txt"), "uncommitted\n")
		own := stashOf(wt, "dirtystash", prior)
		other := stashOf(wt, "older-0101000000-00000001", prior)
		r := e.store.Clean(t.Context(), "dirtystash", CleanOptions{})
		if !r.Skipped() {
			t.Fatalf("not skipped:\n%s", actions(r))
		}
		mustContain(t, r, "skip-worktree: ", "kept-stash: "+own+": kept -- worktree was not removed",
			"kept-stash: "+other+": kept -- worktree was not removed", "kept-run-dir: ")
		if !exists(filepath.Join(own, "prior.txt")) || !exists(filepath.Join(other, "prior.txt")) {
			t.Fatal("a stash beside a kept worktree was deleted")
		}
	})

	t.Run("kept beside a worktree a newer run owns, even with --force", func(t *testing.T) {
		wt := e.addLaneRun(repo, "ownedstash", map[string]any{"resumed_by": "newer-0101000000-00000002"})
		st := stashOf(wt, "newer-0101000000-00000002", prior)
		r := e.store.Clean(t.Context(), "ownedstash", CleanOptions{Force: true})
		mustContain(t, r, "kept-worktree: ", "kept-stash: "+st+": kept -- worktree was not removed")
		if !exists(filepath.Join(st, "prior.txt")) {
			t.Fatal("--force deleted a stash beside a kept worktree")
		}
	})

	t.Run("its work refuses the worktree's removal without --force and is parked with it", func(t *testing.T) {
		wt := e.addLaneRun(repo, "cleanstash", nil)
		st := stashOf(wt, "cleanstash", prior)
		r := e.store.Clean(t.Context(), "cleanstash", CleanOptions{})
		mustContain(t, r, "skip-worktree: ", "the pre-resume stash "+st+" beside it holds work", "kept-stash: "+st)
		if !exists(wt) || !exists(filepath.Join(st, "prior.txt")) {
			t.Fatal("the worktree or the stash went without --force")
		}
		writeFile(t, filepath.Join(wt, "work.txt"), "newest\n")
		r = e.store.Clean(t.Context(), "cleanstash", CleanOptions{Force: true})
		if r.Skipped() {
			t.Fatalf("--force skipped:\n%s", actions(r))
		}
		ref := ParkedRef("cleanstash")
		mustContain(t, r, "parked: "+ref, "removed-worktree: ", "removed-stash: "+st+" (its work is parked under "+ref+")")
		if exists(st) {
			t.Error("the parked stash is still there")
		}
		// The worktree's work on top, the stash's below it.
		if got := git(t, repo, "show", ref+":work.txt"); got != "newest" {
			t.Errorf("parked work.txt = %q", got)
		}
		if got := git(t, repo, "show", ref+"~1:prior.txt"); got != "work from before the resume" {
			t.Errorf("parked stash prior.txt = %q", got)
		}
		if got := git(t, repo, "log", "-1", "--format=%s", ref+"~1"); !strings.Contains(got, "pre-resume stash dw-cleanstash.pre-resume-cleanstash") {
			t.Errorf("stash commit %q", got)
		}
	})

	t.Run("beside a worktree deleted by hand it is parked without --force", func(t *testing.T) {
		wt := e.addLaneRun(repo, "gonestash", nil)
		st := stashOf(wt, "gonestash", prior)
		if err := os.RemoveAll(wt); err != nil {
			t.Fatal(err)
		}
		r := e.store.Clean(t.Context(), "gonestash", CleanOptions{})
		if r.Skipped() {
			t.Fatalf("skipped:\n%s", actions(r))
		}
		ref := ParkedRef("gonestash")
		mustContain(t, r, "absent-worktree: ", "parked: "+ref, "removed-stash: "+st, "removed-branch: dirtywork/gonestash")
		if got := git(t, repo, "show", ref+":prior.txt"); got != "work from before the resume" {
			t.Errorf("parked prior.txt = %q", got)
		}
	})

	t.Run("a stash holding nothing new goes with its worktree, nothing parked", func(t *testing.T) {
		wt := e.addLaneRun(repo, "samestash", nil)
		same := stashOf(wt, "samestash", map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n"})
		empty := stashOf(wt, "zzempty-0101000000-00000003", nil)
		r := e.store.Clean(t.Context(), "samestash", CleanOptions{})
		if r.Skipped() {
			t.Fatalf("skipped:\n%s", actions(r))
		}
		mustContain(t, r, "removed-worktree: ", "removed-stash: "+same+" (it held nothing", "removed-stash: "+empty+" (it held nothing")
		if out := git(t, repo, "for-each-ref", ParkedRef("samestash")); out != "" {
			t.Errorf("parked %q", out)
		}
	})
}

// A second clean --force of a run the first removed says it is gone (and
// where its work went) and skips nothing; a slug that never was a run is
// still a skip, and so is a removed run without --force (0.9.1).
func TestCleanForceOfARunAlreadyCleanedSaysItIsGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "twice", nil)
	writeFile(t, filepath.Join(wt, "work.txt"), "precious\n")
	dir := filepath.Join(e.root, "twice")
	if r := e.store.Clean(t.Context(), "twice", CleanOptions{Force: true}); r.Skipped() {
		t.Fatalf("first clean:\n%s", actions(r))
	}
	again := e.store.Clean(t.Context(), "twice", CleanOptions{Force: true})
	if again.Skipped() || len(again.Actions) != 1 {
		t.Fatalf("second clean --force:\n%s", actions(again))
	}
	mustContain(t, again, "absent-rundir: "+dir+" (cleaned already, at ", "its work parked under "+ParkedRef("twice")+")")
	mustContain(t, e.store.Clean(t.Context(), "twice", CleanOptions{}), "skip: no such run 'twice'")
	if r := e.store.Clean(t.Context(), "never", CleanOptions{Force: true}); !r.Skipped() || !strings.Contains(actions(r), "skip: no such run 'never'") {
		t.Errorf("a slug that never was:\n%s", actions(r))
	}
	if runs, err := e.store.List(t.Context(), ListOptions{}); err != nil || len(runs) != 0 {
		t.Errorf("List after the clean: %v %v", runs, err)
	}
}
