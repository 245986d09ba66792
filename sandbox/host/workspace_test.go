package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpenRefusesBadConfig(t *testing.T) {
	r := newTestRepo(t)
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"missing worktree", func(c *Config) { c.Worktree = filepath.Join(r.home, "nope") }, "resolve worktree"},
		{"no common dir", func(c *Config) { c.CommonDir = "" }, "no common git dir given"},
		{"no run dir", func(c *Config) { c.RunDir = "" }, "no run directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := r.config()
			tc.change(&cfg)
			w, err := Open(t.Context(), cfg)
			if err == nil {
				_ = w.Close() // the test fails anyway; this only releases it
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestCheckoutHappensInTheJail(t *testing.T) {
	r := newTestRepo(t)
	w, err := Open(t.Context(), r.config())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	// The first tool call waits for the checkout.
	got, err := w.ReadFile(t.Context(), "tracked.txt", 0, 10)
	if err != nil || !strings.Contains(got, "one") {
		t.Fatalf("read_file = %q, %v", got, err)
	}
	if readFile(t, filepath.Join(r.worktree, "src", "lib.go")) != "package lib\n" {
		t.Error("the base tree is not in the worktree")
	}
	res := bash(t, w, "git log --format=%H%n%s && git status --porcelain && git rev-parse --git-dir && git rev-parse --abbrev-ref HEAD")
	lines := strings.Split(strings.TrimSpace(res.Output), "\n")
	if res.ExitCode != 0 || len(lines) != 4 || lines[0] != r.base || lines[1] != "initial" ||
		lines[2] != w.private.gitDir || lines[3] != r.branch {
		t.Errorf("the worker's repository: %d %q", res.ExitCode, res.Output)
	}
	dir := w.private.dir
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(dir) {
		t.Error("Close left the worker's repository")
	}
}

func TestOpenReturnsBeforeTheJailIsUp(t *testing.T) {
	r := newTestRepo(t)
	start := time.Now()
	w, err := Open(t.Context(), r.config())
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Since(start)
	defer func() { _ = w.Close() }()
	if w.DisplayRoot() != r.worktree {
		t.Errorf("DisplayRoot %q", w.DisplayRoot())
	}
	if _, err := w.ListDir(t.Context(), "."); err != nil {
		t.Fatal(err)
	}
	t.Logf("Open took %v, the first call %v", opened, time.Since(start))
	if _, err := os.Stat(filepath.Join(w.private.gitDir, "HEAD")); err != nil {
		t.Errorf("no private repository: %v", err)
	}
}

func TestWithHistoryGivesTheWholeHistory(t *testing.T) {
	r := newTestRepo(t)
	writeFile(t, filepath.Join(r.repo, "second.txt"), "2\n")
	r.git(t, r.repo, "add", "second.txt")
	r.git(t, r.repo, "commit", "-q", "-m", "second")
	r.base = strings.TrimSpace(r.git(t, r.repo, "rev-parse", "HEAD"))
	r.git(t, r.repo, "update-ref", "refs/heads/"+r.branch, r.base)
	for _, history := range []bool{false, true} {
		cfg := r.config()
		cfg.WithHistory = history
		cfg.RunDir = t.TempDir()
		w := open(t, cfg)
		out, code := run(t, w, "git log --format=%s | tr '\\n' ' '")
		want := "second "
		if history {
			want = "second initial "
		}
		if code != 0 || out != want {
			t.Errorf("with history %v: log %q (exit %d), want %q", history, out, code, want)
		}
		_ = w.Close()
	}
}

// TestCloseBeforeTheStartBegan: a workspace closed before its background
// start began (a run refused or interrupted at once) ends cleanly.
func TestCloseBeforeTheStartBegan(t *testing.T) {
	r := newTestRepo(t)
	w, err := Open(t.Context(), r.config())
	if err != nil {
		t.Fatal(err)
	}
	dir := w.private.dir
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// What the fallback timer calls at beginDelay, called now: it finds
	// the workspace closed.
	w.Begin()
	if exists(dir) {
		t.Error("the worker's repository was made after Close")
	}
	if _, err := w.ReadFile(t.Context(), "README.md", 0, 10); err == nil {
		t.Error("a tool call after Close succeeded")
	}
}

// TestStaleWorkerRepositoriesAreSwept: a worker repository a killed run
// left (no one holds its lock) is removed by the next run; a live run's
// stays.
func TestStaleWorkerRepositoriesAreSwept(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	live, err := newPrivateRepo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.remove() }()
	dead, err := newPrivateRepo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_ = dead.owner.Close() // as if its process had died
	young := filepath.Join(dir, workerDirPrefix+"young")
	if err := os.Mkdir(young, 0o700); err != nil {
		t.Fatal(err)
	}
	sweepStaleRepos(dir)
	if exists(dead.dir) {
		t.Error("the dead run's repository is still there")
	}
	if !exists(live.dir) || !exists(young) {
		t.Error("a live (or just made) repository was removed")
	}
}

// TestSweepNeverTakesANewRepository: runs starting while others sweep
// never lose their new repository to a sweep, nor fail to lock it (a
// sweep used to find the owner file before its lock was taken).
func TestSweepNeverTakesANewRepository(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	stop := make(chan struct{})
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		for {
			select {
			case <-stop:
				return
			default:
				sweepStaleRepos(dir)
			}
		}
	}()
	defer func() {
		close(stop)
		<-swept
	}()
	for i := range 300 {
		p, err := newPrivateRepo(t.TempDir())
		if err != nil {
			t.Fatalf("repository %d: %v", i, err)
		}
		for range 3 {
			sweepStaleRepos(dir)
		}
		if !exists(p.dir) || !exists(filepath.Join(p.dir, ".owner")) {
			t.Fatalf("repository %d was swept while its run lived", i)
		}
		if err := p.remove(); err != nil {
			t.Fatal(err)
		}
	}
}
