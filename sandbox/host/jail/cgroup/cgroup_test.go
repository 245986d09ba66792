package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCreateLive makes a real group on this machine (cgroup v1 or v2 as
// root), puts a process in it, and removes it with the process still
// there: Remove kills it first.
func TestCreateLive(t *testing.T) {
	h := System()
	g, err := h.Create("test-"+strconv.Itoa(os.Getpid()), Limits{Pids: 64, Memory: 64 << 20, CPUQuota: 50000})
	if !h.Privileged {
		if err == nil {
			defer func() { _ = g.Remove() }()
		}
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("unprivileged: %v", err)
		}
		return // a delegated v2 subtree may or may not be there
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Remove() })
	dirs := g.Dirs()
	if got := readFile(t, filepath.Join(dirs[0], "pids.max")); got != "64" {
		t.Errorf("pids.max %q", got)
	}
	memFile := filepath.Join(dirs[0], "memory.max")
	if g.Mechanism() == V1 {
		memFile = filepath.Join(dirs[1], "memory.limit_in_bytes")
	}
	if got := readFile(t, memFile); got != strconv.Itoa(64<<20) {
		t.Errorf("%s %q", memFile, got)
	}
	// Half a CPU, in the default period, where the cpu controller can be
	// had; this machine's, if it has none, says why.
	switch cpuFile, why := g.CPU(); {
	case cpuFile == "" && why == "":
		t.Error("no CPU quota and no reason")
	case cpuFile == "":
		t.Logf("no CPU quota here: %s", why)
	case g.Mechanism() == V1:
		if got := readFile(t, cpuFile); got != "50000" {
			t.Errorf("%s %q", cpuFile, got)
		}
		if got := readFile(t, filepath.Join(filepath.Dir(cpuFile), "cpu.cfs_period_us")); got != "100000" {
			t.Errorf("cpu.cfs_period_us %q", got)
		}
	default:
		if got := readFile(t, cpuFile); got != "50000 100000" {
			t.Errorf("%s %q", cpuFile, got)
		}
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	if err := g.Add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	if n, err := g.PidsCurrent(); err != nil || n < 1 {
		t.Errorf("pids.current %d, %v", n, err)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		if err == nil {
			t.Error("the group's process exited cleanly; Remove should have killed it")
		}
	case <-time.After(5 * time.Second):
		t.Error("the group's process survived Remove")
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there (%v)", d, err)
		}
	}
	if err := g.Remove(); err != nil {
		t.Errorf("a second Remove: %v", err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestV2Parent finds the nearest delegated ancestor with both controllers
// in a hierarchy laid out like a systemd user session's.
func TestV2Parent(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.controllers", "cpu memory pids")
	write("user.slice/cgroup.subtree_control", "memory pids")
	write("user.slice/cgroup.procs", "")
	write("user.slice/app.slice/cgroup.subtree_control", "cpu memory pids")
	write("user.slice/app.slice/cgroup.procs", "")
	write("user.slice/app.slice/term.scope/cgroup.subtree_control", "memory pids") // has processes: skipped
	write("user.slice/app.slice/term.scope/cgroup.procs", "42")
	h := Hierarchy{Root: root, SelfCgroup: "12:pids:/x\n0::/user.slice/app.slice/term.scope\n"}
	dir, why := h.v2Parent()
	if dir != filepath.Join(root, "user.slice/app.slice") {
		t.Errorf("got %q (%s)", dir, why)
	}
	// Without the controllers there, the next ancestor serves.
	write("user.slice/app.slice/cgroup.subtree_control", "cpu")
	if dir, _ := h.v2Parent(); dir != filepath.Join(root, "user.slice") {
		t.Errorf("got %q", dir)
	}
	// No unified hierarchy at all.
	if dir, why := (Hierarchy{Root: t.TempDir()}).v2Parent(); dir != "" || why == "" {
		t.Errorf("got %q, %q", dir, why)
	}
}

func TestBadName(t *testing.T) {
	for _, n := range []string{"", ".", "..", "a/b"} {
		if _, err := System().Create(n, Limits{}); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
}
