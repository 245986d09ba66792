package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// fakeImage is the worker image the fake daemon holds.
const fakeImage = "dirtywork-worker:test"

// fakeToolbox is the tool server the fake runs delivers: bytes, never run
// (the fake runs the tool server in the test's process).
var fakeToolbox = []byte("\x7fELF the tool server")

// inProcess accepts the fake's tool servers: this process's, not
// dumpable.
func inProcess(info toolbox.ServerInfo) bool { return info.PID == os.Getpid() && !info.Dumpable }

// fakeRun is a run on a repository of its own, for a daemon of its own.
type fakeRun struct {
	f    *fakeEngine
	cfg  Config
	repo testRepo
	// names are the run's objects' names.
	names objectNames
}

// newFakeRun is a run of slug "fake" on a repository holding files, and a
// fake daemon holding the worker image that checks the base tree out.
func newFakeRun(t *testing.T, files map[string]string) fakeRun {
	t.Helper()
	const slug = "fake"
	r := newTestRepo(t, slug, files)
	f := newFakeEngine(t, map[string]daemon.Image{
		fakeImage: {ID: "sha256:" + strings.Repeat("a", 64), OS: "linux", Arch: runtime.GOARCH},
	})
	f.repo, f.base = r.root, r.base
	cfg := Config{
		Slug: slug, RepoRoot: r.root, CommonDir: filepath.Join(r.root, ".git"), Worktree: r.worktree,
		Branch: r.branch, BaseCommit: r.base, RunDir: r.runDir, Image: fakeImage, MaxPatchMB: 10,
		Toolbox: func(string) (Toolbox, error) { return Toolbox{Data: fakeToolbox}, nil },
	}
	names, err := namesFor(slug)
	if err != nil {
		t.Fatal(err)
	}
	return fakeRun{f: f, cfg: cfg, repo: r, names: names}
}

// open opens the run's workspace as Open does, but accepting the fake's
// tool servers; it is closed when the test ends.
func (r fakeRun) open(t *testing.T) *Workspace {
	t.Helper()
	w, err := r.tryOpen(t)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// tryOpen is open, returning the error.
func (r fakeRun) tryOpen(t *testing.T) (*Workspace, error) {
	t.Helper()
	w, err := newWorkspace(r.f.connect, r.cfg)
	if err != nil {
		return nil, err
	}
	w.isolated = inProcess
	if err := w.start(t.Context()); err != nil {
		return nil, err
	}
	return w, nil
}

// runBash runs command in w and fails the test unless it exits 0.
func runBash(t *testing.T, w *Workspace, command string) string {
	t.Helper()
	res, err := w.Bash(t.Context(), command, 30*time.Second)
	if err != nil || res.ExitCode != 0 || res.LaunchError != "" {
		t.Fatalf("bash %q: %+v, %v", command, res, err)
	}
	return strings.TrimSpace(res.Output)
}

// before reports whether call a was made, and made before call b.
func before(calls []string, a, b string) bool {
	i, j := slices.Index(calls, a), slices.Index(calls, b)
	return i >= 0 && j >= 0 && i < j
}

// lastIndexFunc is the index of the last call f is true for, or -1.
func lastIndexFunc(calls []string, f func(string) bool) int {
	for i := len(calls) - 1; i >= 0; i-- {
		if f(calls[i]) {
			return i
		}
	}
	return -1
}

// A run's names taken by another (a container or a volume) refuse the
// run before anything is made, saying how to remove what is in the way;
// nothing of the run is left, and the daemon's connection is closed.
func TestOpenRefusesTakenNamesBeforeMakingAnything(t *testing.T) {
	t.Parallel()
	for _, taken := range []string{"container", "setup container", "work volume", "tools volume"} {
		t.Run(taken, func(t *testing.T) {
			t.Parallel()
			r := newFakeRun(t, map[string]string{"a.txt": "a\n"})
			switch taken {
			case "container":
				_, _ = r.f.CreateContainer(t.Context(), r.names.Container, daemon.ContainerSpec{Image: "other"})
			case "setup container":
				_, _ = r.f.CreateContainer(t.Context(), r.names.Setup, daemon.ContainerSpec{Image: "other"})
			case "work volume":
				_ = r.f.CreateVolume(t.Context(), r.names.WorkVolume, nil)
			case "tools volume":
				_ = r.f.CreateVolume(t.Context(), r.names.ToolsVolume, nil)
			}
			made := len(r.f.calls())
			_, err := r.tryOpen(t)
			if !errors.Is(err, daemon.ErrConflict) || !strings.Contains(err.Error(), "already exists; remove it with: docker") {
				t.Fatalf("open: %v, want a conflict saying how to remove it", err)
			}
			for _, c := range r.f.calls()[made:] {
				if strings.HasPrefix(c, "Create") || strings.HasPrefix(c, "Upload") {
					t.Errorf("%s after the names were found taken", c)
				}
			}
			if n := r.f.closes(); n != 1 {
				t.Errorf("the connection was closed %d times, want once", n)
			}
			// What was there before stays.
			r.f.mu.Lock()
			left := len(r.f.containers) + len(r.f.volumes)
			r.f.mu.Unlock()
			if left != 1 {
				t.Errorf("%d containers and volumes after the refusal, want the one in the way", left)
			}
		})
	}
}

// A run opens in order (the names checked and the image looked at before
// anything is made, the volumes made and prepared before the worker
// starts, attached before it starts), works, and Close removes the
// container before the volumes, everything of the run, and leaves the
// lane as it came when the run was never finalized.
func TestOpenWorksAndCloseRemovesEverything(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n", "dir/b.txt": "bee\n"})
	r.cfg.Limits = sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: 1000}
	w := r.open(t)
	if got := runBash(t, w, "cat a.txt dir/b.txt"); got != "one\nbee" {
		t.Errorf("the base tree in /work: %q", got)
	}
	if out, err := w.WriteFile(t.Context(), "new.txt", "new\n"); err != nil || strings.HasPrefix(out, "ERROR") {
		t.Fatalf("write_file: %q, %v", out, err)
	}
	if out, err := w.ReadFile(t.Context(), "new.txt", 0, 0); err != nil || !strings.Contains(out, "new") {
		t.Fatalf("read_file: %q, %v", out, err)
	}
	sl, _ := w.Settings()["size_limit"].(map[string]any)
	if sl["kind"] != sizeMeasured || !strings.Contains(sl["reason"].(string), "not reached through a local socket") {
		t.Errorf("size_limit %v", sl)
	}
	if c, v := w.Names(); c != "dw-fake" || v != "dw-fake-work" {
		t.Errorf("names %s, %s", c, v)
	}
	opened := r.f.calls()
	for _, order := range [][2]string{
		{"InspectContainer dw-fake", "CreateVolume dw-fake-tools"},
		{"InspectImage " + fakeImage, "CreateVolume dw-fake-tools"},
		{"CreateVolume dw-fake-work", "CreateContainer dw-fake"},
		{"CreateVolume dw-fake-tools", "CreateContainer dw-fake"},
		{"Upload dw-fake /work", "StartContainer dw-fake"},
		{"Attach dw-fake", "StartContainer dw-fake"},
		{"StartContainer dw-fake", "StartContainer dw-fake-measure"},
	} {
		if !before(opened, order[0], order[1]) {
			t.Errorf("%q not before %q in %q", order[0], order[1], opened)
		}
	}
	if !slices.Contains(opened, "Upload dw-fake /opt/dirtywork") {
		t.Errorf("the base pack was not uploaded: %q", opened)
	}

	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
	calls := r.f.calls()[len(opened):]
	lastContainer := lastIndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "RemoveContainer dw-fake") })
	firstVolume := slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "RemoveVolume dw-fake") })
	if lastContainer < 0 || firstVolume < 0 || lastContainer > firstVolume {
		t.Errorf("containers not all removed before the volumes: %q", calls)
	}
	if !before(calls, "KillContainer dw-fake", "RemoveContainer dw-fake") {
		t.Errorf("the worker was not stopped before its removal: %q", calls)
	}
	for _, name := range []string{"dw-fake-work", "dw-fake-tools"} {
		if r.f.hasVolume(name) {
			t.Errorf("volume %s left", name)
		}
	}
	if left := r.f.containerNames(); len(left) != 0 {
		t.Errorf("containers left: %q", left)
	}
	if n := r.f.closes(); n != 1 {
		t.Errorf("the connection was closed %d times, want once", n)
	}
	if names := laneEntries(t, r.repo.worktree); !slices.Equal(names, []string{".git"}) {
		t.Errorf("the lane of a run never finalized holds %q, want only its .git file", names)
	}
}

// laneEntries are the names in the lane's root.
func laneEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Finalize stops the worker and exports its tree into the lane, with the
// patch; Close then removes both volumes, unless the volume is to be kept
// or the export failed: a failed export keeps the work volume, the only
// copy of the work.
func TestFinalizeExportsAndCloseKeepsWhatMustStay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		keep         bool
		failDownload bool
		wantStatus   string
		wantWorkKept bool
	}{
		{name: "exported", wantStatus: "ok"},
		{name: "keep volume", keep: true, wantStatus: "ok", wantWorkKept: true},
		{name: "export failed", failDownload: true, wantStatus: "export_failed: docker step failed", wantWorkKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
			r.cfg.KeepVolume = tc.keep
			if tc.failDownload {
				r.f.failOn("Download dw-fake /work", errors.New("the stream broke"))
			}
			w := r.open(t)
			runBash(t, w, "echo two >> a.txt && mkdir d && echo new > d/n.txt")
			fin, err := w.Finalize(t.Context())
			if err != nil {
				t.Fatalf("Finalize: %v", err)
			}
			if !strings.HasPrefix(fin.ExportStatus, tc.wantStatus) {
				t.Fatalf("export_status %q, want %q", fin.ExportStatus, tc.wantStatus)
			}
			if calls := r.f.calls(); !before(calls, "KillContainer dw-fake", "Download dw-fake /work") {
				t.Errorf("exported before the worker was stopped: %q", calls)
			}
			if _, err := w.Bash(t.Context(), "true", time.Second); err == nil {
				t.Error("a tool call after Finalize was run")
			}
			if tc.wantStatus == "ok" {
				if data, err := os.ReadFile(filepath.Join(r.repo.worktree, "a.txt")); err != nil || string(data) != "one\ntwo\n" {
					t.Errorf("lane a.txt = %q, %v", data, err)
				}
				if !slices.Equal(fin.FilesChanged, []string{"a.txt", "d/n.txt"}) || fin.PatchPath == nil {
					t.Errorf("files_changed %q, patch %v", fin.FilesChanged, fin.PatchPath)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			workKept, toolsKept := r.f.hasVolume("dw-fake-work"), r.f.hasVolume("dw-fake-tools")
			if workKept != tc.wantWorkKept || toolsKept {
				t.Errorf("after Close: work volume kept %v (want %v), tools volume kept %v", workKept, tc.wantWorkKept, toolsKept)
			}
		})
	}
}

// With DetachRemoval, Close leaves the volumes of an exported run to a
// reap marker, which it starts, instead of waiting for their removal; the
// next reaper removes the marker and the volumes once it exited 0.
func TestDetachedRemovalLeavesAReapMarker(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	r.cfg.DetachRemoval = true
	w := r.open(t)
	runBash(t, w, "echo two >> a.txt")
	if fin, err := w.Finalize(t.Context()); err != nil || fin.ExportStatus != "ok" {
		t.Fatalf("Finalize: %+v, %v", fin, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	calls := r.f.calls()
	if !before(calls, "CreateContainer dw-fake-reap", "StartContainer dw-fake-reap") ||
		slices.Contains(calls, "RemoveVolume dw-fake-work") || slices.Contains(calls, "RemoveVolume dw-fake-tools") {
		t.Fatalf("calls %q: want the marker made and started, no volume removed", calls)
	}
	marker, err := r.f.InspectContainer(t.Context(), "dw-fake-reap")
	if err != nil || marker.Labels[daemon.LabelReap] != "dw-fake-tools,dw-fake-work" || marker.Labels[daemon.LabelRun] != "fake" {
		t.Fatalf("the marker: %+v, %v", marker, err)
	}
	reapMarked(t.Context(), r.f)
	for _, name := range []string{"dw-fake-work", "dw-fake-tools"} {
		if r.f.hasVolume(name) {
			t.Errorf("volume %s left after the marker was reaped", name)
		}
	}
	if _, err := r.f.InspectContainer(t.Context(), "dw-fake-reap"); !errors.Is(err, daemon.ErrNotFound) {
		t.Errorf("the marker after reaping: %v", err)
	}
}

// A reap marker is taken at its word only for its own run's volumes, and
// only once it exited 0: one that failed is started again and its volume
// stays, one still running is left alone.
func TestReapMarkedRemovesOnlyWhatADoneMarkerOwns(t *testing.T) {
	t.Parallel()
	f := newFakeEngine(t, nil)
	ctx := t.Context()
	marker := func(name, slug string, vols ...string) {
		t.Helper()
		if _, err := f.CreateContainer(ctx, name, reapMarkerSpec("img", map[string]string{daemon.LabelRun: slug}, vols, "")); err != nil {
			t.Fatal(err)
		}
	}
	for vol, slug := range map[string]string{"dw-a-work": "a", "dw-a-tools": "a", "dw-b-work": "b", "dw-c-work": "c", "dw-d-work": "d"} {
		if err := f.CreateVolume(ctx, vol, map[string]string{daemon.LabelRun: slug}); err != nil {
			t.Fatal(err)
		}
	}
	// a is done; its marker also names b's volume, which is never removed
	// on its word.
	marker("dw-a-reap", "a", "dw-a-work", "dw-a-tools", "dw-b-work")
	_ = f.StartContainer(ctx, "dw-a-reap")
	// c's marker could not empty its volume.
	f.reapExit = 1
	marker("dw-c-reap", "c", "dw-c-work")
	_ = f.StartContainer(ctx, "dw-c-reap")
	// d's runs still.
	marker("dw-d-reap", "d", "dw-d-work")
	f.mu.Lock()
	f.find("dw-d-reap").state = daemon.State{Status: "running", Running: true}
	f.mu.Unlock()
	made := len(f.calls())

	reapMarked(ctx, f)
	for vol, want := range map[string]bool{"dw-a-work": false, "dw-a-tools": false, "dw-b-work": true, "dw-c-work": true, "dw-d-work": true} {
		if ok := f.hasVolume(vol); ok != want {
			t.Errorf("volume %s there: %v, want %v", vol, ok, want)
		}
	}
	calls := f.calls()[made:]
	if !slices.Contains(calls, "StartContainer dw-c-reap") || slices.Contains(calls, "RemoveContainer dw-c-reap") {
		t.Errorf("the failed marker: %q, want it started again and kept", calls)
	}
	if slices.ContainsFunc(calls, func(c string) bool { return strings.HasSuffix(c, " dw-d-reap") && !strings.HasPrefix(c, "Inspect") }) {
		t.Errorf("the running marker was acted on: %q", calls)
	}
	if _, err := f.InspectContainer(ctx, "dw-a-reap"); !errors.Is(err, daemon.ErrNotFound) {
		t.Errorf("the done marker stays: %v", err)
	}
}

// resets records the reasons OnReset was called with.
type resetLog struct {
	mu      sync.Mutex
	reasons []string
}

func (r *resetLog) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

func (r *resetLog) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reasons)
}

// A worker container that dies (or is killed for memory) is replaced on
// the same volumes at the next tool call: the old one is killed and
// removed, a new one made, attached and started, the model told why, and
// the tree kept.
func TestAContainerThatDiedIsReplaced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		oom        bool
		wantReason string
	}{{false, "container died"}, {true, "oom"}} {
		t.Run(tc.wantReason, func(t *testing.T) {
			t.Parallel()
			r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
			var rs resetLog
			r.cfg.OnReset = rs.add
			w := r.open(t)
			runBash(t, w, "echo kept > kept.txt")
			made := len(r.f.calls())
			r.f.crash("dw-fake", tc.oom)
			res, err := w.Bash(t.Context(), "echo after", 30*time.Second)
			if err != nil || !strings.Contains(res.LaunchError, "the sandbox was reset ("+tc.wantReason+")") {
				t.Fatalf("the call after the death: %+v, %v", res, err)
			}
			if got := rs.list(); !slices.Equal(got, []string{tc.wantReason}) {
				t.Errorf("resets %q, want one for %q", got, tc.wantReason)
			}
			calls := r.f.calls()[made:]
			for _, order := range [][2]string{
				{"KillContainer dw-fake", "RemoveContainer dw-fake"},
				{"RemoveContainer dw-fake", "CreateContainer dw-fake"},
				{"CreateContainer dw-fake", "Attach dw-fake"},
				{"Attach dw-fake", "StartContainer dw-fake"},
			} {
				if !before(calls, order[0], order[1]) {
					t.Errorf("%q not before %q in %q", order[0], order[1], calls)
				}
			}
			if got := runBash(t, w, "cat kept.txt a.txt"); got != "kept\none" {
				t.Errorf("the tree after the reset: %q", got)
			}
		})
	}
}

// A process the daemon lists in the container besides the tool server,
// between commands, resets the container after the next command, which
// says so.
func TestAStrayProcessResetsAfterTheNextCommand(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	r.f.top = []string{toolboxPath + " toolbox -root /work", "sleep 600"}
	var rs resetLog
	r.cfg.OnReset = rs.add
	w := r.open(t)
	// The watchdog lists the processes on its first tick after the
	// checkout.
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		seen := w.straySeen
		w.mu.Unlock()
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watchdog did not see the stray process within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.f.mu.Lock()
	r.f.top = r.f.top[:1]
	r.f.mu.Unlock()
	res, err := w.Bash(t.Context(), "echo after", 30*time.Second)
	if err != nil || !strings.Contains(res.Output, "reset after this command (stray process outside the tool server)") {
		t.Fatalf("the command after: %+v, %v", res, err)
	}
	if got := rs.list(); !slices.Equal(got, []string{"stray process outside the tool server"}) {
		t.Errorf("resets %q", got)
	}
}

// A tree past its entry cap ends the run with a budget error, and the
// container is killed at once; every later call gets the same error, and
// Finalize reports the violation and still exports.
func TestABudgetBreachKillsTheContainer(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	r.cfg.Limits = sandbox.Limits{MaxEntries: 4}
	w := r.open(t)
	made := len(r.f.calls())
	var be *sandbox.BudgetError
	var err error
	for i := range 10 {
		if _, err = w.WriteFile(t.Context(), "f"+string(rune('a'+i))+".txt", "x\n"); err != nil {
			break
		}
	}
	if !errors.As(err, &be) {
		t.Fatalf("writing past the cap: %v, want a budget error", err)
	}
	if calls := r.f.calls()[made:]; !slices.Contains(calls, "KillContainer dw-fake") {
		t.Errorf("the container was not killed: %q", calls)
	}
	if _, err := w.ReadFile(t.Context(), "a.txt", 0, 0); !errors.As(err, &be) {
		t.Errorf("a call after the breach: %v, want the budget error", err)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	if fin.WatchdogViolation == nil || *fin.WatchdogViolation != be.Reason || fin.WatchdogViolationKind == nil || *fin.WatchdogViolationKind != kindBudget {
		t.Errorf("watchdog_violation %v (%v), want %q", fin.WatchdogViolation, fin.WatchdogViolationKind, be.Reason)
	}
	if fin.ExportStatus == "" {
		t.Error("no export was tried")
	}
}

// --setup runs in a container of its own before the worker's, its network
// the egress proxy's sidecar, which is stopped before the worker's first
// command when the worker has no network; its result is reported. A setup
// that fails ends the open, with its output, and leaves nothing.
func TestSetupRunsBeforeTheWorkerThroughTheProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		exit int64
	}{{"passes", 0}, {"fails", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
			r.f.setupExit, r.f.setupOutput = tc.exit, "fetched deps\n"
			r.cfg.Setup = "make deps"
			var gotExit *int
			var gotOutput string
			r.cfg.OnSetup = func(_ string, exit *int, output string, _ float64) { gotExit, gotOutput = exit, output }
			w, err := r.tryOpen(t)
			if gotExit == nil || int64(*gotExit) != tc.exit || gotOutput != "fetched deps\n" {
				t.Errorf("OnSetup: exit %v, output %q", gotExit, gotOutput)
			}
			calls := r.f.calls()
			for _, order := range [][2]string{
				{"StartContainer dw-fake-egress", "StartContainer dw-fake-setup"},
				{"StartContainer dw-fake-setup", "Logs dw-fake-setup"},
				{"Logs dw-fake-setup", "RemoveContainer dw-fake-setup"},
			} {
				if !before(calls, order[0], order[1]) {
					t.Errorf("%q not before %q in %q", order[0], order[1], calls)
				}
			}
			if tc.exit != 0 {
				var se *sandbox.SandboxError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), "fetched deps") {
					t.Fatalf("open: %v, want a sandbox error with the setup's output", err)
				}
				if left := r.f.containerNames(); len(left) != 0 || r.f.hasVolume("dw-fake-work") || r.f.hasVolume("dw-fake-tools") {
					t.Errorf("left after a failed setup: containers %q, work volume %v, tools volume %v",
						left, r.f.hasVolume("dw-fake-work"), r.f.hasVolume("dw-fake-tools"))
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			t.Cleanup(func() { _ = w.Close() })
			// The worker has no network: the proxy is stopped before the
			// worker's first command, once the setup is done.
			if !before(r.f.calls(), "Logs dw-fake-setup", "KillContainer dw-fake-egress") {
				t.Errorf("the proxy outlived the setup into the worker's time: %q", r.f.calls())
			}
			if s, ok := w.Settings()["egress"].(map[string]any); !ok || !slices.Equal(s["for"].([]string), []string{"setup"}) || w.Settings()["network"] != "none" {
				t.Errorf("settings: network %v, egress %v", w.Settings()["network"], w.Settings()["egress"])
			}
		})
	}
}

// The toolbox volume is made and filled once, through its fill container,
// and trusted as it is by the next run; one whose marker is not its
// fill's is never used.
func TestToolboxVolumeIsFilledOnceAndTrustedOnlyAsMade(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	v, err := toolboxVolumeOf(Toolbox{Data: fakeToolbox})
	if err != nil {
		t.Fatal(err)
	}
	w := r.open(t)
	runBash(t, w, "true")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	first := r.f.calls()
	if !before(first, "CreateContainer "+v.fillName(), "Upload "+v.fillName()+" "+toolboxDir) ||
		!before(first, "Upload "+v.fillName()+" "+toolboxDir, "RemoveContainer "+v.fillName()) {
		t.Errorf("the fill: %q", first)
	}
	if vol, err := r.f.InspectVolume(t.Context(), v.name); err != nil || vol.Labels[labelToolbox] != v.key {
		t.Fatalf("the toolbox volume after the first run: %+v, %v", vol, err)
	}

	// A second run of the build finds the volume whole.
	w = r.open(t)
	runBash(t, w, "true")
	if slices.Contains(r.f.calls()[len(first):], "CreateContainer "+v.fillName()) {
		t.Error("the second run filled the volume again")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// A marker that is not the fill's: never used nor written over.
	marker := filepath.Join(r.f.volumeDir(v.name), toolboxMarker)
	if err := os.Chmod(marker, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte(strings.Repeat("0", 64)+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tryOpen(t); !errors.Is(err, errToolboxUnfit) {
		t.Fatalf("open with a foreign marker: %v, want errToolboxUnfit", err)
	}
	if left := r.f.containerNames(); len(left) != 0 {
		t.Errorf("containers left: %q", left)
	}
	if data, err := os.ReadFile(marker); err != nil || string(data) != strings.Repeat("0", 64)+"\n" {
		t.Errorf("the foreign marker was written over: %q, %v", data, err)
	}
}

// reapToolboxes removes the toolbox volumes of other builds older than an
// hour and fill containers whose process is gone; the current build's
// volume, a recent one, and a fill under way stay.
func TestReapToolboxesRemovesOnlyWhatIsLeftOver(t *testing.T) {
	t.Parallel()
	f := newFakeEngine(t, nil)
	ctx := t.Context()
	vol := func(name, key string, age time.Duration) {
		t.Helper()
		if err := f.CreateVolume(ctx, name, map[string]string{labelToolbox: key}); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		f.volumes[name].created = time.Now().Add(-age)
		f.mu.Unlock()
	}
	vol(toolboxVolumePrefix+"current", "current", 2*time.Hour)
	vol(toolboxVolumePrefix+"old", "old", 2*time.Hour)
	vol(toolboxVolumePrefix+"recent", "recent", time.Minute)
	host, _ := os.Hostname()
	fill := func(name string, pid int) {
		t.Helper()
		spec := daemon.ContainerSpec{Labels: map[string]string{labelToolbox: "k", labelFillHost: host, labelFillPID: strconv.Itoa(pid)}}
		if _, err := f.CreateContainer(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
	}
	fill("dw-toolbox-live-fill", os.Getpid())
	fill("dw-toolbox-dead-fill", deadPID(t))

	reapToolboxes(ctx, f, "current")
	for name, want := range map[string]bool{toolboxVolumePrefix + "current": true, toolboxVolumePrefix + "old": false, toolboxVolumePrefix + "recent": true} {
		if ok := f.hasVolume(name); ok != want {
			t.Errorf("volume %s there: %v, want %v", name, ok, want)
		}
	}
	if left := f.containerNames(); !slices.Equal(left, []string{"dw-toolbox-live-fill"}) {
		t.Errorf("fill containers left: %q, want the one under way", left)
	}
}

// deadPID is the pid of a process that ended.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

// A kept volume is exported into its lane by a container that never
// starts; the volume goes once exported, unless kept. A volume that is
// not there, or is another run's, is refused before anything is made.
func TestExportVolume(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		label   string // the volume's dirtywork.run; "" for no volume
		keep    bool
		wantErr error
	}{
		{name: "exported", label: "fake"},
		{name: "kept", label: "fake", keep: true},
		{name: "missing", wantErr: ErrVolumeMissing},
		{name: "foreign", label: "other", wantErr: ErrVolumeForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
			cfg := VolumeExport{
				Slug: "fake", Volume: "dw-fake-work", RepoRoot: r.repo.root, Worktree: r.repo.worktree,
				BaseCommit: r.repo.base, RunDir: r.repo.runDir, Image: fakeImage, MaxPatchMB: 10, KeepVolume: tc.keep,
			}
			if tc.label != "" {
				if err := r.f.CreateVolume(t.Context(), cfg.Volume, map[string]string{daemon.LabelRun: tc.label}); err != nil {
					t.Fatal(err)
				}
				dir := r.f.volumeDir(cfg.Volume)
				if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fin, err := ExportVolume(t.Context(), r.f.connect, cfg)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ExportVolume: %v, want %v", err, tc.wantErr)
				}
				if slices.ContainsFunc(r.f.calls(), func(c string) bool {
					return strings.HasPrefix(c, "Create") && !strings.HasPrefix(c, "CreateVolume dw-fake-work")
				}) {
					t.Errorf("made something: %q", r.f.calls())
				}
				return
			}
			if err != nil || fin.ExportStatus != "ok" {
				t.Fatalf("ExportVolume: %+v, %v", fin, err)
			}
			if data, err := os.ReadFile(filepath.Join(r.repo.worktree, "a.txt")); err != nil || string(data) != "one\ntwo\n" {
				t.Errorf("lane a.txt = %q, %v", data, err)
			}
			if !slices.Equal(fin.FilesChanged, []string{"a.txt", "later.txt"}) {
				t.Errorf("files_changed %q", fin.FilesChanged)
			}
			if ok := r.f.hasVolume(cfg.Volume); ok != tc.keep {
				t.Errorf("volume there %v after the export, want %v", ok, tc.keep)
			}
			if left := r.f.containerNames(); len(left) != 0 {
				t.Errorf("containers left: %q", left)
			}
			if n := r.f.closes(); n != 1 {
				t.Errorf("the connection was closed %d times, want once", n)
			}
		})
	}
}

// Close removes only what carries the run's label: a container or volume
// of the run's name that is another's stays, and Close says so.
func TestCloseLeavesAnotherRunsObjects(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	w := r.open(t)
	if _, err := r.f.CreateContainer(t.Context(), "dw-fake-measure", daemon.ContainerSpec{Labels: map[string]string{daemon.LabelRun: "other"}}); err != nil {
		t.Fatal(err)
	}
	err := w.Close()
	if err == nil || !strings.Contains(err.Error(), "container dw-fake-measure is not this run's") {
		t.Fatalf("Close: %v, want it to name the foreign container", err)
	}
	if _, err := r.f.InspectContainer(t.Context(), "dw-fake-measure"); err != nil {
		t.Errorf("the foreign container: %v", err)
	}
}

// Preflight refuses, worded for the user, a daemon that does not answer,
// names that are taken and a disk under the floor; it closes the
// connection it was given.
func TestPreflightRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(r *fakeRun)
		wantErr error
		want    string
	}{
		{name: "passes"},
		{
			name:    "daemon down",
			prepare: func(r *fakeRun) { r.f.failOn("ServerVersion", errors.New("connection refused")) },
			wantErr: daemon.ErrDaemonUnreachable, want: "start Docker, or use --sandbox none",
		},
		{
			name: "names taken",
			prepare: func(r *fakeRun) {
				_ = r.f.CreateVolume(r.f.t.Context(), "dw-fake-tools", nil)
			},
			wantErr: daemon.ErrConflict, want: "docker volume rm dw-fake-tools",
		},
		{
			name:    "image missing",
			prepare: func(r *fakeRun) { delete(r.f.images, fakeImage) },
			wantErr: ErrImageMissing, want: "dirtywork image build --tag " + fakeImage,
		},
		{
			name: "low disk",
			prepare: func(r *fakeRun) {
				r.f.local = true
				r.cfg.MinFreeMB = 1 << 40 // more than any disk has
			},
			wantErr: ErrLowDiskSpace, want: "--min-free-mb",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
			if tc.prepare != nil {
				tc.prepare(&r)
			}
			err := Preflight(t.Context(), r.f.connect, r.cfg)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
			} else if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Preflight: %v, want %v saying %q", err, tc.wantErr, tc.want)
			}
			if n := r.f.closes(); n != 1 {
				t.Errorf("the connection was closed %d times, want once", n)
			}
			if slices.ContainsFunc(r.f.calls(), func(c string) bool {
				return strings.HasPrefix(c, "Create") && c != "CreateVolume dw-fake-tools"
			}) {
				t.Errorf("Preflight made something: %q", r.f.calls())
			}
		})
	}
}

// The file tools all go to the tool server, on the tree in the volume.
func TestFileToolsReachTheToolServer(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\ntwo\n"})
	w := r.open(t)
	ctx := t.Context()
	for _, call := range []struct {
		name string
		do   func() (string, error)
	}{
		{"edit_file", func() (string, error) { return w.EditFile(ctx, "a.txt", "two\n", "TWO\n") }},
		{"insert_text", func() (string, error) { return w.InsertText(ctx, "a.txt", "one\n", "half\n", true) }},
		{"apply_edits", func() (string, error) {
			return w.ApplyEdits(ctx, "a.txt", []sandbox.Edit{{Old: "half", New: "HALF"}})
		}},
	} {
		if out, err := call.do(); err != nil || strings.HasPrefix(out, "ERROR") {
			t.Fatalf("%s: %q, %v", call.name, out, err)
		}
	}
	if got := runBash(t, w, "cat a.txt"); got != "one\nHALF\nTWO" {
		t.Errorf("a.txt after the edits: %q", got)
	}
	if out, err := w.ListDir(ctx, "."); err != nil || !strings.Contains(out, "a.txt") {
		t.Errorf("list_dir: %q, %v", out, err)
	}
	if out, err := w.Grep(ctx, sandbox.GrepArgs{Pattern: "HALF", Path: ".", Timeout: 10 * time.Second}); err != nil || !strings.Contains(out, "a.txt") {
		t.Errorf("grep: %q, %v", out, err)
	}
	if w.DisplayRoot() != "/work" || w.ImageDigest() != nil {
		t.Errorf("display root %q, digest %v", w.DisplayRoot(), w.ImageDigest())
	}
}

// A resumed run's /work starts as the prior run's lane, uploaded into the
// volume before the worker starts; the lane is read, never written.
func TestResumeSeedsTheVolumeFromTheLane(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	if err := os.WriteFile(filepath.Join(r.repo.worktree, "a.txt"), []byte("prior work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cfg.Resume = true
	w := r.open(t)
	if got := runBash(t, w, "cat a.txt; ls -A"); got != "prior work\na.txt" {
		t.Errorf("the resumed tree: %q", got)
	}
	if calls := r.f.calls(); !before(calls, "Upload dw-fake /work", "StartContainer dw-fake") {
		t.Errorf("the seed did not go in before the start: %q", calls)
	}
	if names := laneEntries(t, r.repo.worktree); !slices.Equal(names, []string{".git", "a.txt"}) {
		t.Errorf("the lane holds %q", names)
	}
}

// A fill container left by a process that died does not hold the next
// run up: it is removed, and the run fills the volume itself.
func TestAnAbandonedFillIsTakenOver(t *testing.T) {
	t.Parallel()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	v, err := toolboxVolumeOf(Toolbox{Data: fakeToolbox})
	if err != nil {
		t.Fatal(err)
	}
	spec := fillSpec(v, "img")
	spec.Labels[labelFillPID] = strconv.Itoa(deadPID(t))
	if err := r.f.CreateVolume(t.Context(), v.name, map[string]string{labelToolbox: v.key}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.f.CreateContainer(t.Context(), v.fillName(), spec); err != nil {
		t.Fatal(err)
	}
	w := r.open(t)
	runBash(t, w, "true")
	if calls := r.f.calls(); !before(calls, "RemoveContainer "+v.fillName(), "Upload "+v.fillName()+" "+toolboxDir) {
		t.Errorf("the abandoned fill was not taken over: %q", calls)
	}
}

// newSalvageRun is a run whose kept volume, labelled as its own, a
// salvage takes into the lane.
func newSalvageRun(t *testing.T) (fakeRun, VolumeExport) {
	t.Helper()
	r := newFakeRun(t, map[string]string{"a.txt": "one\n"})
	cfg := VolumeExport{
		Slug: "fake", Volume: "dw-fake-work", RepoRoot: r.repo.root, Worktree: r.repo.worktree,
		BaseCommit: r.repo.base, RunDir: r.repo.runDir, Image: fakeImage, MaxPatchMB: 10,
		Limits: sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: 1000},
	}
	if err := r.f.CreateVolume(t.Context(), cfg.Volume, map[string]string{daemon.LabelRun: "fake"}); err != nil {
		t.Fatal(err)
	}
	return r, cfg
}

// A kept volume whose tree the export refuses as a whole is salvaged into
// the lane, member by member, and stays.
func TestSalvageVolume(t *testing.T) {
	t.Parallel()
	r, cfg := newSalvageRun(t)
	dir := r.f.volumeDir(cfg.Volume)
	for name, content := range map[string]string{"a.txt": "salvaged\n", "sub/.git/config": "[core]\n"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := SalvageVolume(t.Context(), r.f.connect, cfg)
	if err != nil {
		t.Fatalf("SalvageVolume: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(r.repo.worktree, "a.txt")); err != nil || string(data) != "salvaged\n" {
		t.Errorf("lane a.txt = %q, %v; salvaged %+v", data, err, got)
	}
	if !slices.Contains(got.Dropped, "sub/.git") {
		t.Errorf("dropped %q, want the nested .git", got.Dropped)
	}
	if !r.f.hasVolume(cfg.Volume) {
		t.Error("the salvaged volume went")
	}
	if left := r.f.containerNames(); len(left) != 0 {
		t.Errorf("containers left: %q", left)
	}
}

// The export container of a salvage that streamed for long is still
// removed with a whole cleanup budget: the budget starts when the removal
// does, not when the stream did (a 3 GB tree read for over a minute under
// load left the container, and so the volume, behind).
func TestSalvageVolumeRemovesItsContainerWithAFreshBudget(t *testing.T) {
	t.Parallel()
	r, cfg := newSalvageRun(t)
	if err := os.WriteFile(filepath.Join(r.f.volumeDir(cfg.Volume), "a.txt"), []byte("salvaged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const delay = 2 * time.Second
	r.f.mu.Lock()
	r.f.downloadDelay = delay
	r.f.mu.Unlock()
	if _, err := SalvageVolume(t.Context(), r.f.connect, cfg); err != nil {
		t.Fatalf("SalvageVolume: %v", err)
	}
	r.f.mu.Lock()
	budgets := slices.Clone(r.f.removeBudgets)
	r.f.mu.Unlock()
	if len(budgets) == 0 {
		t.Fatal("the export container was never removed")
	}
	for _, b := range budgets {
		if b < daemon.LifecycleTimeout-delay/2 {
			t.Errorf("a removal had %v left of its %v: its budget was spent on the download", b, daemon.LifecycleTimeout)
		}
	}
}

// A tool server is trusted only as pid 1 of its container, the worker's
// uid, and not dumpable.
func TestServerIsolated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		info toolbox.ServerInfo
		want bool
	}{
		{toolbox.ServerInfo{PID: 1, UID: workerUID}, true},
		{toolbox.ServerInfo{PID: 7, UID: workerUID}, false},
		{toolbox.ServerInfo{PID: 1, UID: 0}, false},
		{toolbox.ServerInfo{PID: 1, UID: workerUID, Dumpable: true}, false},
	} {
		if got := serverIsolated(tc.info); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.info, got, tc.want)
		}
	}
}
