//go:build docker

package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/dockertest"
	"github.com/dirtywork/dirtywork/sandbox/docker/volstore"
)

// liveImage is the worker image the live tests run (see scripts/test-all).
const liveImage = "dirtywork-worker:dev"

// toolboxBinary is the dirtywork binary TestMain builds for the containers.
var toolboxBinary string

// childToolboxEnv hands a test binary this one starts (a child that is
// killed, TestTetherChild) the toolbox this one built: the child builds
// nothing, keeps this one's DIRTYWORK_HOME, and leaves nothing to remove.
const childToolboxEnv = "DW_TEST_TOOLBOX"

func TestMain(m *testing.M) {
	if bin := os.Getenv(childToolboxEnv); bin != "" {
		toolboxBinary = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "dw-toolbox-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	toolboxBinary = filepath.Join(dir, "dirtywork")
	build := exec.Command("go", "build", "-o", toolboxBinary, "github.com/dirtywork/dirtywork/cmd/dirtywork")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the toolbox binary:", err)
		os.Exit(1)
	}
	// Volume images go to a home of the tests' own, checked when they
	// are done: nothing may be left attached or on disk.
	home := filepath.Join(dir, "home")
	for k, v := range map[string]string{"DIRTYWORK_HOME": home, childToolboxEnv: toolboxBinary} {
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	removeTestToolbox()
	if left := leftStores(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "volume stores left after the tests: %+v\n", left)
		for _, s := range left {
			_, _ = volstore.Release(s.Volume)
		}
		code = 1
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// removeTestToolbox removes the toolbox volume of the tests' build, which
// the runs of every test shared; one still in use (by a test binary of
// the same build running beside this one) stays for its last user.
func removeTestToolbox() {
	v, err := toolboxVolumeOf(Toolbox{Path: toolboxBinary})
	if err != nil {
		return
	}
	cl, err := docker.Connect()
	if err != nil {
		return
	}
	defer func() { _ = cl.Close() }() // idle connections only
	ctx, cancel := cleanupContext()
	defer cancel()
	_ = cl.RemoveVolume(ctx, v.name, false)
}

// leftStores are the volume images and loop devices of the tests' home.
func leftStores() []volstore.Listed {
	left, err := volstore.List()
	if err != nil {
		return []volstore.Listed{{Volume: err.Error()}}
	}
	return left
}

// newSlug is a slug no other test run uses.
func newSlug(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "gotest-" + hex.EncodeToString(b)
}

// liveConfig is a workspace config for r.
func liveConfig(slug string, r testRepo) Config {
	return Config{
		Slug:       slug,
		RepoRoot:   r.root,
		CommonDir:  filepath.Join(r.root, ".git"),
		Worktree:   r.worktree,
		Branch:     r.branch,
		BaseCommit: r.base,
		RunDir:     r.runDir,
		Image:      liveImage,
		Memory:     "1g",
		CPUs:       1,
		MaxPatchMB: 10,
		Limits:     sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: 5000},
		Toolbox:    liveToolbox,
	}
}

// liveToolbox is the tool server TestMain built, which is for this
// machine's architecture only.
func liveToolbox(goarch string) (Toolbox, error) {
	if goarch != runtime.GOARCH {
		return Toolbox{}, fmt.Errorf("%w: the test's build is for linux/%s", ErrNoToolbox, runtime.GOARCH)
	}
	return Toolbox{Path: toolboxBinary}, nil
}

// liveClient connects to the machine's daemon (dockertest.Client).
func liveClient(t testing.TB) *docker.Client { return dockertest.Client(t) }

// cleanupCtx is a context for cleanups, which run after t.Context is
// cancelled: they must still reach the daemon.
func cleanupCtx(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(t.Context()), daemon.LifecycleTimeout)
}

// resets records the reasons OnReset was called with.
type resets struct {
	mu      sync.Mutex
	reasons []string
}

func (r *resets) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

func (r *resets) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reasons...)
}

// openLive opens a workspace for cfg, closed when the test ends; every
// container the run made is checked for bind mounts first.
func openLive(t testing.TB, cfg Config) *Workspace {
	t.Helper()
	cl := liveClient(t)
	w, err := Open(t.Context(), docker.ConnectEngine, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		// A failed export keeps the work volume for recovery.
		assertGone(t, cl, cfg, cfg.KeepVolume || (w.finalized && !w.exportOK))
	})
	assertNoBindMounts(t, cl, cfg.Slug)
	return w
}

// assertNoBindMounts inspects every container labelled with slug and
// fails on any bind mount, or on a mount that is neither one of the two
// volumes nor a tmpfs.
func assertNoBindMounts(t testing.TB, cl *docker.Client, slug string) {
	t.Helper()
	list, err := cl.ListContainers(t.Context(), daemon.LabelRun+"="+slug)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatal("no container carries the run's label")
	}
	for _, c := range list {
		binds, mounts := dockertest.Mounts(t, c.ID)
		if len(binds) != 0 {
			t.Errorf("container %s has binds %q", c.Name, binds)
		}
		for _, m := range mounts {
			if m.Type == "bind" {
				t.Errorf("container %s bind-mounts %s at %s", c.Name, m.Source, m.Destination)
			}
			if m.Type != "volume" && m.Type != "tmpfs" {
				t.Errorf("container %s has a %s mount at %s", c.Name, m.Type, m.Destination)
			}
		}
	}
}

// assertGone fails when anything labelled with the run is left, except
// the work volume when it is to be kept; it removes what it finds.
func assertGone(t testing.TB, cl *docker.Client, cfg Config, keepWork bool) {
	ctx, cancel := cleanupCtx(t)
	defer cancel()
	list, err := cl.ListContainers(ctx, daemon.LabelRun+"="+cfg.Slug)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		t.Errorf("container %v left after Close", c.Name)
		_ = cl.RemoveContainer(ctx, c.ID)
	}
	names, _ := namesFor(cfg.Slug)
	for _, v := range []string{names.WorkVolume, names.ToolsVolume} {
		if _, err := volumeLabels(ctx, cl, v); err == nil {
			if v != names.WorkVolume || !keepWork {
				t.Errorf("volume %s left after Close", v)
			}
			_ = removeVolume(ctx, cl, v)
		}
	}
	// The work volume's file system goes with it, whatever happened.
	for _, s := range leftStores() {
		if s.Volume == names.WorkVolume {
			if !keepWork {
				t.Errorf("the work volume's file system is left: %+v", s)
			}
			_, _ = volstore.Release(s.Volume)
		}
	}
}

// bash runs command in w and fails the test unless it exits 0.
func bash(t *testing.T, w *Workspace, command string) string {
	t.Helper()
	res, err := w.Bash(t.Context(), command, 30*time.Second)
	if err != nil {
		t.Fatalf("bash %q: %v", command, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("bash %q: exit %d, %+v", command, res.ExitCode, res)
	}
	return strings.TrimSpace(res.Output)
}

// The container is locked down and the worker sees exactly the base
// commit under the host's ids, with no history; file tools work; the
// export's patch is what git diff says for the same change.
func TestLiveWorkspaceIsolationAndExport(t *testing.T) {
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "one\ntwo\nthree\n", "dir/b.txt": "bee\n"})
	start := time.Now()
	w := openLive(t, liveConfig(slug, r))
	t.Logf("create → first tool call ready: %v", time.Since(start).Round(time.Millisecond))
	ctx := t.Context()

	if got := bash(t, w, "id -u; id -g"); got != "1000\n1000" {
		t.Errorf("ids = %q, want 1000 1000", got)
	}
	for line := range strings.SplitSeq(bash(t, w, "grep Cap /proc/self/status"), "\n") {
		if f := strings.Fields(line); len(f) != 2 || strings.Trim(f[1], "0") != "" {
			t.Errorf("capability line %q, want all zero", line)
		}
	}
	netdev := bash(t, w, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
	if netdev != "lo" {
		t.Errorf("network interfaces %q, want only lo", netdev)
	}
	if res, err := w.Bash(ctx, "touch /rootfs-probe", 10*time.Second); err != nil || res.ExitCode == 0 {
		t.Errorf("touch / = %+v, %v; want a failure (read-only root)", res, err)
	}
	if res, err := w.Bash(ctx, "touch /opt/dirtywork/probe || rm -rf /opt/dirtywork/objects || touch /opt/dirtywork-bin/probe || rm -f /opt/dirtywork-bin/dirtywork", 10*time.Second); err != nil || res.ExitCode == 0 {
		t.Errorf("writing the tools volume = %+v, %v; want a failure", res, err)
	}
	if got := bash(t, w, "git rev-list --all | wc -l; git rev-parse HEAD; git rev-parse HEAD^{tree}"); got != "1\n"+r.base+"\n"+r.git(t, r.root, "rev-parse", "HEAD^{tree}") {
		t.Errorf("in-container history:\n%s\nwant one commit %s", got, r.base)
	}
	if got := bash(t, w, "git status --porcelain; ls"); got != "a.txt\ndir\nlater.txt" {
		t.Errorf("clean checkout: %q", got)
	}

	hostRead, err := os.ReadFile(filepath.Join(r.root, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.ReadFile(ctx, "a.txt", 0, 0)
	if err != nil || !strings.Contains(out, "two") {
		t.Fatalf("read_file = %q, %v", out, err)
	}
	_ = hostRead
	if out, err := w.EditFile(ctx, "a.txt", "two\n", "TWO\n"); err != nil || strings.HasPrefix(out, "ERROR") {
		t.Fatalf("edit_file = %q, %v", out, err)
	}
	if out, err := w.WriteFile(ctx, "dir/new.txt", "new file\n"); err != nil || strings.HasPrefix(out, "ERROR") {
		t.Fatalf("write_file = %q, %v", out, err)
	}
	bash(t, w, "rm later.txt")
	inDiff := bash(t, w, "git diff "+r.base+" --stat | tail -n 1")
	if !strings.Contains(inDiff, "2 files changed") {
		t.Errorf("git diff <base> inside: %q", inDiff)
	}

	timeCalls(t, w)

	fin, err := w.Finalize(ctx)
	if err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	if fin.ExportStatus != "ok" {
		t.Fatalf("export_status %q", fin.ExportStatus)
	}
	// The same change made on the host, diffed by git.
	r.git(t, r.root, "checkout", "-q", "--detach")
	if err := os.WriteFile(filepath.Join(r.root, "a.txt"), []byte("one\nTWO\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.root, "dir/new.txt"), []byte("new file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(r.root, "later.txt")); err != nil {
		t.Fatal(err)
	}
	r.git(t, r.root, "add", "-A")
	want := r.git(t, r.root, "diff", "--cached", "--no-renames", r.base)
	patch, err := os.ReadFile(*fin.PatchPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(patch)) != want {
		t.Errorf("diff.patch:\n%s\nwant git's:\n%s", patch, want)
	}
	if fi, err := os.Stat(*fin.PatchPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("diff.patch mode: %v %v", fi.Mode(), err)
	}
	if got := strings.Join(fin.FilesChanged, ","); got != "a.txt,dir/new.txt,later.txt" {
		t.Errorf("files_changed = %q", got)
	}
	// The lane holds the worker's tree, its index the base tree.
	if data, err := os.ReadFile(filepath.Join(r.worktree, "a.txt")); err != nil || string(data) != "one\nTWO\nthree\n" {
		t.Errorf("lane a.txt = %q, %v", data, err)
	}
	if got := r.git(t, r.worktree, "diff", "--cached", "--name-only", r.base); got != "" {
		t.Errorf("lane index differs from base: %q", got)
	}
}

// timeCalls logs the round trips the report quotes.
func timeCalls(t *testing.T, w *Workspace) {
	const n = 20
	start := time.Now()
	for range n {
		if _, err := w.ReadFile(t.Context(), "a.txt", 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("read_file round trip: %v", (time.Since(start) / n).Round(time.Microsecond))
	start = time.Now()
	for range n {
		bash(t, w, "true")
	}
	t.Logf("bash true (with the after-bash checks): %v", (time.Since(start) / n).Round(time.Microsecond))
}

// The export of a 200-file tree, timed for the report; its figures must
// add up.
func TestLiveExport200Files(t *testing.T) {
	slug := newSlug(t)
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("d%d/f%03d.txt", i%10, i)] = strings.Repeat("line\n", i+1)
	}
	r := newTestRepo(t, slug, files)
	w := openLive(t, liveConfig(slug, r))
	bash(t, w, "echo changed >> d0/f000.txt")
	start := time.Now()
	fin, err := w.Finalize(t.Context())
	if err != nil || fin.ExportStatus != "ok" {
		t.Fatalf("Finalize: %+v, %v", fin, err)
	}
	t.Logf("export of 201 files (stop, download, extract, diff, read-tree): %v", time.Since(start).Round(time.Millisecond))
	// 201 files and 10 directories.
	if fin.WorktreeFiles != 211 || !slices.Equal(fin.FilesChanged, []string{"d0/f000.txt"}) {
		t.Errorf("worktree_files %d, files_changed %q", fin.WorktreeFiles, fin.FilesChanged)
	}
}

// BenchmarkLiveToolCalls times tool calls through a real container:
// read_file of a small file, and bash `true` with everything a command
// costs (the call, the server's reaping, the after-command checks).
func BenchmarkLiveToolCalls(b *testing.B) {
	slug := newSlug(b)
	r := newTestRepo(b, slug, map[string]string{"a.txt": strings.Repeat("line of text\n", 250)})
	w := openLive(b, liveConfig(slug, r))
	b.Run("read_file", func(b *testing.B) {
		for b.Loop() {
			if _, err := w.ReadFile(b.Context(), "a.txt", 0, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bash_true", func(b *testing.B) {
		for b.Loop() {
			res, err := w.Bash(b.Context(), "true", 30*time.Second)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("bash true: %+v, %v", res, err)
			}
		}
	})
}
