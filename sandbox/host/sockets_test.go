package host

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// connectScript tries to connect to a unix socket and prints the outcome.
const connectScript = `import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print("refused:", e)
`

// listen serves a unix socket at path for the test's life.
func listen(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close() // only reachability is tested; nothing was exchanged
		}
	}()
}

// connects reports whether connectScript, run by the tests themselves
// (unconfined), reaches path: the control for the checks from bash.
func connects(t *testing.T, path string) bool {
	t.Helper()
	out, err := exec.Command("python3", "-c", connectScript, path).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out)) == "connected"
}

func TestHostSocketsUnreachable(t *testing.T) {
	requireJail(t)
	// Sockets where host daemons put theirs: under /run (only root may
	// plant one there), in the operator's runtime dir, and a unix
	// DOCKER_HOST elsewhere, in a directory bash may read.
	var socks []string
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
		runSock := filepath.Join(runDir, "s")
		socks = append(socks, runSock, "/var/run/"+filepath.Base(runDir)+"/s")
		listen(t, runSock)
	}
	runtimeDir := t.TempDir()
	runtimeSock := filepath.Join(runtimeDir, "bus")
	listen(t, runtimeSock)
	dockerSock := filepath.Join(t.TempDir(), "docker.sock")
	listen(t, dockerSock)
	socks = append(socks, runtimeSock, dockerSock)
	for _, sock := range socks {
		if !connects(t, sock) {
			t.Fatalf("the control connection to %s failed; the test proves nothing", sock)
		}
	}

	r := newTestRepo(t)
	cfg := r.config()
	cfg.Env = append(cfg.Env, "DOCKER_HOST=unix://"+dockerSock, "XDG_RUNTIME_DIR="+runtimeDir)
	w := open(t, cfg)
	for _, sock := range socks {
		if out, _ := run(t, w, "python3 -c '"+connectScript+"' "+sock); !strings.HasPrefix(out, "refused:") {
			t.Errorf("connect to %s from bash: %q, want refused", sock, out)
		}
	}
	if out, _ := run(t, w, "test -e "+runtimeSock+" && echo visible || echo hidden"); out != "hidden\n" {
		t.Errorf("socket in the runtime dir: %q, want hidden", out)
	}
	// The host's view is untouched.
	for _, sock := range socks {
		if !connects(t, sock) {
			t.Errorf("%s became unreachable on the host", sock)
		}
	}
	// Name resolution still works with /run covered.
	if out, code := run(t, w, "cat /etc/resolv.conf >/dev/null && getent hosts localhost"); code != 0 {
		t.Errorf("name resolution in bash: exit %d: %s", code, out)
	}
}
