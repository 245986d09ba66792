//go:build docker

package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/dockertest"
)

// A command past its timeout is killed on time and the sandbox goes on;
// a tool server killed from inside is replaced (a reset the model and
// OnReset are told of), the tree survives, and the next call works.
func TestLiveTimeoutAndReset(t *testing.T) {
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	var rs resets
	cfg.OnReset = rs.add
	w := openLive(t, cfg)
	ctx := t.Context()

	start := time.Now()
	res, err := w.Bash(ctx, "sleep 600", 2*time.Second)
	if took := time.Since(start); err != nil || !res.TimedOut || took > 5*time.Second {
		t.Fatalf("sleep 600 under 2s: %+v, %v after %v", res, err, took)
	}
	bash(t, w, "echo kept > kept.txt")
	if got := bash(t, w, "cat kept.txt"); got != "kept" {
		t.Fatalf("after a timeout: %q", got)
	}

	// The server is pid 1 of the container: SIGKILL from inside its PID
	// namespace does not reach it, nor does SIGSTOP.
	if got := bash(t, w, `kill -9 1; kill -STOP 1; echo alive`); got != "alive" {
		t.Fatalf("after kill -9 1: %q", got)
	}
	if got := rs.list(); len(got) != 0 {
		t.Fatalf("OnReset calls after kill -9 1: %q", got)
	}
	// SIGTERM stops it as it would stop any init: the command hears it
	// first, the server stops, and the next call resets the sandbox.
	res, err = w.Bash(ctx, `kill -TERM 1; sleep 5`, 30*time.Second)
	if err != nil {
		t.Fatalf("stopping the server: %v", err)
	}
	if res.ExitCode == 0 {
		t.Fatalf("the command survived its SIGTERM: %+v", res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(rs.list()) == 0 && time.Now().Before(deadline) {
		if _, err := w.Bash(ctx, "true", 30*time.Second); err != nil {
			t.Fatalf("the call after the server stopped: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := rs.list(); len(got) != 1 {
		t.Fatalf("OnReset calls: %q", got)
	}
	if got := bash(t, w, "cat kept.txt; git rev-parse HEAD; git status --porcelain"); got != "kept\n"+r.base+"\n?? kept.txt" {
		t.Errorf("after the reset: %q", got)
	}
	assertNoBindMounts(t, liveClient(t), slug)

	// A process that escapes the command's group and the server's reaping
	// is not possible to leave behind; the container then holds only the
	// server.
	procs, err := w.eng.Top(ctx, w.sess.id)
	if err != nil || !onlyServer(procs) {
		t.Errorf("processes after bash: %q, %v", procs, err)
	}
}

// A process the tool server cannot see (started in the container from
// outside it, as a worker escaping the server would be) is found by the
// watchdog's listing between commands, and the next command's end resets
// the container; without one, commands never reset.
func TestLiveStrayOutsideServer(t *testing.T) {
	// Restored by a cleanup registered before the workspace's own, so it
	// runs after the workspace (and its watchdog) stopped reading it.
	saved := strayEvery
	t.Cleanup(func() { strayEvery = saved })
	strayEvery = 100 * time.Millisecond
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	var rs resets
	cfg := liveConfig(slug, r)
	cfg.OnReset = rs.add
	w := openLive(t, cfg)
	ctx := t.Context()
	for range 5 {
		time.Sleep(150 * time.Millisecond)
		if got := bash(t, w, "echo ok"); got != "ok" {
			t.Fatalf("a plain command: %q", got)
		}
	}
	if got := rs.list(); len(got) != 0 {
		t.Fatalf("resets without a cause: %q", got)
	}
	w.mu.Lock()
	id := w.sess.id
	w.mu.Unlock()
	dockertest.Exec(t, id, "sleep", "600")
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		seen := w.straySeen
		w.mu.Unlock()
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watchdog did not see the process within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := w.Bash(ctx, "echo after", 30*time.Second)
	if err != nil || !strings.Contains(res.Output, "reset after this command (stray process outside the tool server)") {
		t.Fatalf("the command after: %+v, %v", res, err)
	}
	if got := rs.list(); len(got) != 1 {
		t.Fatalf("resets: %q, want one", got)
	}
	w.mu.Lock()
	newID := w.sess.id
	w.mu.Unlock()
	procs, err := w.eng.Top(ctx, newID)
	if err != nil || !onlyServer(procs) {
		t.Errorf("processes in the new container: %q, %v", procs, err)
	}
}

// A tree grown past its caps by bash ends the run budget_exceeded at the
// next operation that could change the tree (the tool server walks the
// tree while the model reads the command's result) or, when the outside
// measurement sees it first, at the command itself; the violation is
// reported by Finalize, and the export still runs under its hard caps.
func TestLiveBudget(t *testing.T) {
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.Limits = sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: 100}
	w := openLive(t, cfg)
	// The verdict belongs to the next operation, unless the outside
	// measurement (at least once a second) caught the breach while the
	// command ran: then the command itself reports it.
	if _, err := w.Bash(t.Context(), "mkdir many && cd many && touch $(seq 1 200)", 30*time.Second); err != nil && !sandbox.IsBudget(err) {
		t.Fatalf("bash past the entry cap: %v", err)
	}
	if _, err := w.WriteFile(t.Context(), "b.txt", "b"); !sandbox.IsBudget(err) {
		t.Fatalf("a write after the breach: %v, want a budget error", err)
	}
	if _, err := w.Bash(t.Context(), "true", 30*time.Second); !sandbox.IsBudget(err) {
		t.Fatalf("bash after the breach: %v, want the budget error again", err)
	}
	if _, err := w.ReadFile(t.Context(), "a.txt", 0, 0); !sandbox.IsBudget(err) {
		t.Errorf("a call after the breach: %v, want the budget error again", err)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.WatchdogViolation == nil || *fin.WatchdogViolationKind != kindBudget {
		t.Errorf("violation %v", fin.WatchdogViolation)
	}
	if !strings.HasPrefix(fin.ExportStatus, "export_failed: ") || !strings.Contains(fin.ExportStatus, "files") {
		t.Errorf("export_status %q, want the file cap's refusal", fin.ExportStatus)
	}
}

// Hostile trees: each ends with the right export_status, and nothing is
// written outside the lane.
func TestLiveHostileExports(t *testing.T) {
	cases := []struct {
		name, command, status string
		check                 func(t *testing.T, fin sandbox.Finalization, lane string)
	}{
		{
			name: "symlink out", command: "ln -s /etc/passwd pw && ln -s ../../x up", status: "ok",
			check: func(t *testing.T, fin sandbox.Finalization, lane string) {
				if !slices.Equal(fin.EscapingSymlinks, []string{"pw", "up"}) {
					t.Errorf("escaping_symlinks %q", fin.EscapingSymlinks)
				}
				// Listed, and never in the lane as a live link.
				for _, n := range []string{"pw", "up"} {
					if _, err := os.Lstat(filepath.Join(lane, n)); !os.IsNotExist(err) {
						t.Errorf("%s is in the lane: %v", n, err)
					}
				}
			},
		},
		{
			name: "fifo", command: "mkfifo pipe", status: "ok",
			check: func(t *testing.T, fin sandbox.Finalization, lane string) {
				if !slices.Equal(fin.SkippedSpecialEntries, []string{"pipe"}) {
					t.Errorf("skipped_special_entries %q", fin.SkippedSpecialEntries)
				}
			},
		},
		{
			name: "git dir", command: "mkdir -p sub/.GIT && echo x > sub/.GIT/config && mkdir .git && echo y > .git/HEAD", status: "ok",
			check: func(t *testing.T, fin sandbox.Finalization, lane string) {
				if !slices.Equal(fin.DroppedGitEntries, []string{".git", "sub/.GIT"}) {
					t.Errorf("dropped_git_entries %q", fin.DroppedGitEntries)
				}
				if fi, err := os.Lstat(filepath.Join(lane, ".git")); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("the lane's .git file: %v %v", fi, err)
				}
			},
		},
		{name: "too many files", command: "mkdir d && cd d && touch $(seq 1 120)", status: "export_failed: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slug := newSlug(t)
			r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
			cfg := liveConfig(slug, r)
			// Caps that the bash budget check lets through but the
			// export's do not: the export caps count the tree as the
			// archive has it.
			cfg.Limits = sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: 150}
			w := openLive(t, cfg)
			bash(t, w, tc.command)
			// The export's caps, lower than the run's (the 120 files above
			// pass the run's 150, not the export's 100): changed once the
			// watchdog, which reads them, has stopped.
			w.wd.stop()
			w.cfg.Limits = sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: 100}
			fin, err := w.Finalize(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(fin.ExportStatus, tc.status) {
				t.Fatalf("export_status %q, want %q…", fin.ExportStatus, tc.status)
			}
			if tc.status != "ok" {
				if names := laneNames(t, r.worktree); !slices.Equal(names, []string{".git"}) {
					t.Errorf("lane after a failed export: %q", names)
				}
			}
			if _, err := os.Lstat("/etc/passwd"); err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, fin, r.worktree)
			}
		})
	}
}

// laneNames lists dir.
func laneNames(t *testing.T, dir string) []string {
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

// --setup runs in the tree before the worker's first call, with no
// network interface but lo; a failing one fails Open with its output and
// leaves nothing.
func TestLiveSetup(t *testing.T) {
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.Setup = "echo set up > made.txt; ls /sys/class/net | grep -v lo | head -n 1; echo done"
	var got struct {
		cmd  string
		exit *int
		out  string
	}
	cfg.OnSetup = func(cmd string, exit *int, out string, _ float64) { got.cmd, got.exit, got.out = cmd, exit, out }
	w := openLive(t, cfg)
	if got.exit == nil || *got.exit != 0 || !strings.HasSuffix(strings.TrimSpace(got.out), "done") || got.cmd != cfg.Setup {
		t.Errorf("setup event %+v", got)
	}
	if strings.TrimSpace(got.out) != "done" {
		// Its network is the egress proxy's socket (live_egress_linux_test.go).
		t.Errorf("setup saw a network interface besides lo: %q", got.out)
	}
	if out := bash(t, w, "cat made.txt"); out != "set up" {
		t.Errorf("made.txt = %q", out)
	}

	slug2 := newSlug(t)
	r2 := newTestRepo(t, slug2, map[string]string{"a.txt": "a\n"})
	cfg2 := liveConfig(slug2, r2)
	cfg2.Setup = "echo broken-setup-output; exit 3"
	_, err := Open(t.Context(), docker.ConnectEngine, cfg2)
	var se *sandbox.SandboxError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "broken-setup-output") || !strings.Contains(err.Error(), "exited 3") {
		t.Fatalf("Open with a failing setup: %v", err)
	}
	assertGone(t, liveClient(t), cfg2, false)
}

// Preflight refuses a missing image with the command that builds it, and
// names that are taken.
func TestLivePreflight(t *testing.T) {
	cl := liveClient(t)
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	if err := Preflight(t.Context(), docker.ConnectEngine, cfg); err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	// The engine's preflight runs before the run has a slug.
	noSlug := cfg
	noSlug.Slug = ""
	if err := Preflight(t.Context(), docker.ConnectEngine, noSlug); err != nil {
		t.Fatalf("Preflight without a slug: %v", err)
	}
	missing := cfg
	missing.Image = "dirtywork-worker:no-such-tag"
	err := Preflight(t.Context(), docker.ConnectEngine, missing)
	if !errors.Is(err, ErrImageMissing) || !strings.Contains(err.Error(), "dirtywork image build --tag dirtywork-worker:no-such-tag") ||
		!strings.Contains(err.Error(), "--bootstrap-base") {
		t.Errorf("missing image: %v", err)
	}
	names, _ := namesFor(slug)
	if err := cl.CreateVolume(t.Context(), names.WorkVolume, map[string]string{daemon.LabelRun: slug}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := cleanupCtx(t)
		defer cancel()
		if err := removeVolume(ctx, cl, names.WorkVolume); err != nil {
			t.Errorf("remove %s: %v", names.WorkVolume, err)
		}
	})
	if err := Preflight(t.Context(), docker.ConnectEngine, cfg); !errors.Is(err, daemon.ErrConflict) || !strings.Contains(err.Error(), "docker volume rm "+names.WorkVolume) {
		t.Errorf("taken volume: %v", err)
	}
}

// The container dies with this process, SIGKILL included: a child process
// opens a workspace and is killed; its container is gone within seconds.
func TestLiveContainerDiesWithProcess(t *testing.T) {
	if os.Getenv("DW_TETHER_CHILD") != "" {
		return // the child's part runs in TestTetherChild
	}
	cl := liveClient(t)
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestTetherChild$", "-test.v")
	cmd.Env = append(os.Environ(), "DW_TETHER_CHILD="+strings.Join([]string{slug, r.root, r.worktree, r.branch, r.base, r.runDir}, "\n"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var seen string
	for !strings.Contains(seen, "OPENED") {
		n, err := stdout.Read(buf)
		if err != nil {
			t.Fatalf("child ended before opening: %v\n%s", err, seen)
		}
		seen += string(buf[:n])
	}
	names, _ := namesFor(slug)
	t.Cleanup(func() {
		ctx, cancel := cleanupCtx(t)
		defer cancel()
		_ = cl.RemoveContainer(ctx, names.Container)
		_ = removeVolume(ctx, cl, names.WorkVolume)
		_ = removeVolume(ctx, cl, names.ToolsVolume)
	})
	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for {
		info, err := cl.InspectContainer(t.Context(), names.Container)
		if err != nil {
			t.Fatal(err)
		}
		if !info.State.Running {
			t.Logf("container stopped %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
			if time.Since(killed) > 5*time.Second {
				t.Errorf("container outlived its process by %v", time.Since(killed))
			}
			return
		}
		if time.Since(killed) > 10*time.Second {
			t.Fatal("container still runs 10 s after its process was killed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTetherChild is the child of TestLiveContainerDiesWithProcess: it
// opens a workspace, says so, and waits to be killed.
func TestTetherChild(t *testing.T) {
	spec := os.Getenv("DW_TETHER_CHILD")
	if spec == "" {
		return
	}
	f := strings.Split(spec, "\n")
	r := testRepo{root: f[1], worktree: f[2], branch: f[3], base: f[4], runDir: f[5]}
	w, err := Open(t.Context(), docker.ConnectEngine, liveConfig(f[0], r))
	if err != nil {
		t.Fatal(err)
	}
	_ = w
	if _, err := os.Stdout.WriteString("OPENED\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
}
