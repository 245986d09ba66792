package seatbelt

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// run runs sh -c script (with arg as $1) under the policy's profile and
// reports whether it succeeded.
func run(t *testing.T, p Policy, script, arg string) bool {
	t.Helper()
	pr, err := p.Profile()
	if err != nil {
		t.Fatal(err)
	}
	argv := pr.Command(DefaultPath, []string{"/bin/sh", "-c", script, "sh", arg})
	cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + p.Writable[len(p.Writable)-1]}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("%s %s: %v: %s", script, arg, err, out)
	}
	return err == nil
}

// TestSeatbeltEnforcesDecide runs real programs under sandbox-exec with a
// run's profile and holds what the kernel allows to Decide, path by path.
func TestSeatbeltEnforcesDecide(t *testing.T) {
	r := newTestRun(t, 0)
	for _, path := range []string{
		filepath.Join(r.worktree, "src", "main.go"),
		filepath.Join(r.worktree, ".git"),
		filepath.Join(r.worktree, "gitlink"),
		filepath.Join(r.worktree, "key"),
		filepath.Join(r.private, "tmp", "f"),
		filepath.Join(r.private, "git", "HEAD"),
		filepath.Join(r.private, "base", "objects", "o"),
		filepath.Join(r.home, ".ssh", "id_ed25519"),
		filepath.Join(r.home, ".cargo", "bin", "cargo"),
		filepath.Join(r.home, ".cargo", "credentials.toml"),
		filepath.Join(r.home, ".volta", "tools", "image", "node", "20", "etc", "npmrc"),
		"/etc/hosts",
		"/usr/bin/true",
		"/tmp/dirtywork-seatbelt-" + strconv.Itoa(os.Getpid()),
	} {
		t.Run(path, func(t *testing.T) {
			want := r.policy.Decide(path)
			if got := run(t, r.policy, `cat "$1" >/dev/null`, path); got != (want >= Read) && exists(path) {
				t.Errorf("read %s: allowed %v, Decide %v", path, got, want)
			}
			if got := run(t, r.policy, `printf x >> "$1"`, path); got != (want == Write) {
				t.Errorf("write %s: allowed %v, Decide %v", path, got, want)
			}
		})
	}
	if !run(t, r.policy, "/bin/ls / >/dev/null && /usr/bin/uname -a >/dev/null && /bin/date >/dev/null", "") {
		t.Error("ordinary programs do not run under the profile")
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestSeatbeltNetwork: without a proxy port nothing connects; with one,
// that port on loopback alone.
func TestSeatbeltNetwork(t *testing.T) {
	listen := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		}()
		return l.Addr().(*net.TCPAddr).Port
	}
	proxy, other := listen(), listen()
	connect := `/usr/bin/nc -z -w 5 127.0.0.1 "$1"`
	closed := newTestRun(t, 0)
	if run(t, closed.policy, connect, strconv.Itoa(proxy)) {
		t.Error("a profile without network connected")
	}
	open := newTestRun(t, proxy)
	if !run(t, open.policy, connect, strconv.Itoa(proxy)) {
		t.Error("the proxy's port cannot be reached")
	}
	if run(t, open.policy, connect, strconv.Itoa(other)) {
		t.Error("another loopback port was reached")
	}
}
