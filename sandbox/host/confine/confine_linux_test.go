package confine

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeRun()
	os.Exit(m.Run())
}

// requireLandlock fails the test on a kernel without Landlock: CI must
// run where confinement is enforced, so a missing Landlock is an error,
// never a skip.
func requireLandlock(t *testing.T) int {
	t.Helper()
	abi := KernelABI()
	if abi < 1 {
		t.Fatal("the kernel does not support Landlock; these tests must run where it is enforced")
	}
	return min(abi, MaxABI())
}

// namespaceMode is the mode a process with our privileges can use.
func namespaceMode() Namespace {
	if os.Geteuid() == 0 {
		return PrivateNamespace
	}
	return UserNamespace
}

func bashPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash not found: %v", err)
	}
	return p
}

// basePolicy allows reading the system and writing dir.
func basePolicy(t *testing.T, dir string) Policy {
	t.Helper()
	rules := []Rule{{Path: dir, Access: Write}, {Path: "/dev/null", Access: Device}}
	for _, d := range []string{"/usr", "/bin", "/lib", "/lib64", "/etc", "/proc"} {
		if _, err := os.Stat(d); err == nil {
			rules = append(rules, Rule{Path: d, Access: Read})
		}
	}
	return Policy{
		Bash:      bashPath(t),
		Namespace: namespaceMode(),
		ABI:       requireLandlock(t),
		Rules:     rules,
		Hide:      []string{"/run"},
	}
}

// run runs command under p in dir and returns its merged output and error.
func run(t *testing.T, p Policy, dir, command string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	p.Command = command
	c, err := Command(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Dir = dir
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	c.Stdout = &out
	c.Stderr = &out
	if err := c.Start(); err != nil {
		return "", err
	}
	err = c.Wait()
	return out.String(), err
}

func TestLandlockConfinesWrites(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	p := basePolicy(t, dir)
	if out, err := run(t, p, dir, "echo ok > inside && cat inside"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("write inside the allowed dir: out %q, err %v", out, err)
	}
	out, err := run(t, p, dir, "echo x > "+filepath.Join(outside, "escaped"))
	if err == nil {
		t.Fatalf("write outside succeeded: %q", out)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file outside the allowed dir exists (stat err %v)", err)
	}
	// outside is not even readable: no rule covers it.
	if out, err := run(t, p, dir, "ls "+outside); err == nil {
		t.Fatalf("listing an uncovered dir succeeded: %q", out)
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	if err := Probe(t.Context(), basePolicy(t, dir)); err != nil {
		t.Fatalf("probe: %v", err)
	}
}

func TestSetupFailureIsReported(t *testing.T) {
	dir := t.TempDir()
	p := basePolicy(t, dir)
	p.Rules = append(p.Rules, Rule{Path: filepath.Join(dir, "missing"), Access: Read})
	_, err := run(t, p, dir, "echo should-not-run")
	var se *SetupError
	if !errors.As(err, &se) || se.Stage != StageLandlock || !errors.Is(err, ErrConfine) {
		t.Fatalf("got %v, want a landlock-stage SetupError matching ErrConfine", err)
	}
	// An optional rule for a missing path is skipped.
	p.Rules[len(p.Rules)-1].Optional = true
	if out, err := run(t, p, dir, "echo ran"); err != nil || strings.TrimSpace(out) != "ran" {
		t.Fatalf("optional missing rule: out %q, err %v", out, err)
	}
}

func TestExecFailureIsReported(t *testing.T) {
	dir := t.TempDir()
	p := basePolicy(t, dir)
	p.Bash = filepath.Join(dir, "no-bash")
	_, err := run(t, p, dir, "true")
	if !errors.Is(err, ErrExec) || errors.Is(err, ErrConfine) {
		t.Fatalf("got %v, want ErrExec only", err)
	}
}

func TestHiddenSockets(t *testing.T) {
	// A directory of the test's stands in for /run, which only root may
	// plant a socket in; as root, /run itself is tested too.
	hidden := t.TempDir()
	socks := []string{filepath.Join(hidden, "s")}
	if os.Geteuid() == 0 {
		runDir, err := os.MkdirTemp("/run", "dirtywork-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.RemoveAll(runDir); err != nil {
				t.Error(err)
			}
		})
		socks = append(socks, filepath.Join(runDir, "s"))
	}
	for _, sock := range socks {
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := l.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	dir := t.TempDir()
	p := basePolicy(t, dir)
	p.Hide = append(p.Hide, hidden)
	for _, sock := range socks {
		out, err := run(t, p, dir, "test -e "+sock+" && echo visible || echo hidden")
		if err != nil || strings.TrimSpace(out) != "hidden" {
			t.Errorf("%s: out %q, err %v", sock, out, err)
		}
		// The host still sees it: the tmpfs lives only in bash's namespace.
		if _, err := os.Stat(sock); err != nil {
			t.Errorf("%s gone on the host: %v", sock, err)
		}
	}
}

func TestMountsHideKeepMaskFreshReadOnly(t *testing.T) {
	dir := t.TempDir()
	hidden := t.TempDir()
	writeTestFile(t, filepath.Join(hidden, "secret"), "covered\n")
	kept := filepath.Join(hidden, "kept")
	writeTestFile(t, filepath.Join(kept, "file"), "still here\n")
	masked := filepath.Join(dir, "masked")
	writeTestFile(t, masked, "masked content\n")
	frozen := filepath.Join(dir, "frozen")
	writeTestFile(t, filepath.Join(frozen, "f"), "frozen\n")

	p := basePolicy(t, dir)
	p.Rules = append(p.Rules, Rule{Path: kept, Access: Write})
	p.Hide = append(p.Hide, hidden)
	p.Keep = []string{kept}
	p.Mask = []string{masked}
	p.Fresh = []string{"/dev/shm"}
	p.ReadOnly = []string{frozen}
	out, err := run(t, p, dir, strings.Join([]string{
		"test -e " + filepath.Join(hidden, "secret") + " && echo secret-visible",
		"cat " + filepath.Join(kept, "file"),
		"echo new > " + filepath.Join(kept, "written") + " && echo kept-writable",
		"test -s " + masked + " && echo mask-failed",
		"ls -A /dev/shm | wc -l",
		"echo shm > /dev/shm/x && echo shm-writable",
		"{ echo x > " + filepath.Join(frozen, "f") + "; } 2>/dev/null || echo frozen-read-only",
	}, "; "))
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "still here\nkept-writable\n0\nshm-writable\nfrozen-read-only\n"
	if out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	// On the host, nothing was covered and the kept write landed.
	if readTestFile(t, filepath.Join(hidden, "secret")) != "covered\n" || readTestFile(t, masked) != "masked content\n" {
		t.Error("host files changed")
	}
	if readTestFile(t, filepath.Join(kept, "written")) != "new\n" {
		t.Error("the write through the kept directory did not reach the host")
	}
	if _, err := os.Stat("/dev/shm/x"); err == nil {
		t.Error("bash's /dev/shm is the host's")
	}
}

func TestPIDNamespaceKillsEverything(t *testing.T) {
	dir := t.TempDir()
	p := basePolicy(t, dir)
	start := time.Now()
	out, err := run(t, p, dir, "setsid -f sleep 30; sleep 30 & echo $$")
	if err != nil || out != "1\n" {
		t.Fatalf("bash is not the namespace's init: %q, %v", out, err)
	}
	// Wait returned (the output pipe closed), so nothing holds it open.
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("took %v: a background job held the output open", elapsed)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
