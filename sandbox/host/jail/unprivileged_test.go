//go:build linux

package jail

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unprivilegedUID runs the escape tests again as a normal user: nobody.
const unprivilegedUID = 65534

// TestEscapesUnprivileged runs every TestEscape test again as an
// unprivileged user, from a copy of the test binary that user may execute.
// Run as a normal user already, the tests above were that run.
func TestEscapesUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Logf("running as uid %d: the escape tests ran unprivileged already", os.Geteuid())
		return
	}
	dir, err := os.MkdirTemp("", "dirtywork-jailtest-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "jail.test")
	if err := copyFile(exe, bin); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	tmp := filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, unprivilegedUID, unprivilegedUID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Something mounted beneath the user's TMPDIR, as /tmp often has: the
	// probe of that directory must not trip over it.
	beneath := filepath.Join(tmp, "mounted-beneath")
	if err := os.Mkdir(beneath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", beneath, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=64k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(beneath, syscall.MNT_DETACH) })
	args := []string{"-test.run", "^TestEscape[A-Z]", "-test.count=1", "-test.timeout=5m"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = tmp
	cmd.Env = []string{"HOME=" + home, "TMPDIR=" + tmp, "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "LANG=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID, Groups: []uint32{}}}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the escape tests as uid %d: %v\n%s", unprivilegedUID, err, out)
	}
	t.Logf("as uid %d:\n%s", unprivilegedUID, out)
}

// copyFile copies the test binary to where another user can execute it.
// No process is forked from this one while the copy is open for writing:
// a child forked then would hold the write descriptor until its own exec,
// and executing the copy meanwhile would fail with ETXTBSY. Forks take
// syscall.ForkLock for writing.
func copyFile(src, dst string) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
