//go:build linux

package jail

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// toolServer is the tool server running in a jail, and its client.
type toolServer struct {
	j    *Jail
	cl   *toolbox.Client
	info toolbox.ServerInfo
}

// startToolServer starts the tool server in a jail on a writable tree at
// /work, and greets it.
func startToolServer(tb testing.TB, ctx context.Context, work string) *toolServer {
	tb.Helper()
	exe := helperBinary(tb)
	cfg := Config{
		Path: helperPath, Args: []string{"toolbox", "-root", "/work", "-bash", "/bin/bash"},
		Env:    []string{helperEnv + "=toolbox", "PATH=/usr/bin:/bin", "HOME=/work", "TMPDIR=/tmp", "LANG=C"},
		Dir:    "/work",
		Mounts: []Mount{{Source: work, Target: "/work"}, {Source: exe, Target: helperPath, ReadOnly: true}},
	}
	j, err := Start(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	go func() {
		b := make([]byte, 4096)
		for {
			if _, err := j.Stderr.Read(b); err != nil {
				return
			}
		}
	}()
	s := &toolServer{j: j, cl: toolbox.NewClient(j.Stdout, j.Stdin)}
	if s.info, err = s.cl.Hello(ctx, sandbox.Limits{}); err != nil {
		s.stop()
		tb.Fatalf("hello: %v", err)
	}
	return s
}

func (s *toolServer) stop() {
	_ = s.cl.Close()
	_ = s.j.Stdin.Close()
	_ = s.j.Kill()
	_ = s.j.Wait()
	_ = s.j.Stdout.Close()
	_ = s.j.Stderr.Close()
}

// helperBinary is the test binary, bound into jails as the helper.
func helperBinary(tb testing.TB) string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return exe
}

// TestToolServerInJail: the tool server runs as the jail's pid 1 as the
// operator's uid, and the commands it runs have no capability.
func TestToolServerInJail(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s := startToolServer(t, ctx, t.TempDir())
	defer s.stop()
	if s.info.PID != 1 || s.info.UID != s.j.Info().UserNS.UID.Inside || s.info.Dumpable {
		t.Errorf("server info %+v", s.info)
	}
	res, err := s.cl.Bash(ctx, "echo hi > made && grep CapEff /proc/self/status && stat -c %u made", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := "CapEff:\t0000000000000000\n" + strconv.Itoa(s.j.Info().UserNS.UID.Inside)
	if res.ExitCode != 0 || strings.TrimSpace(res.Output) != want {
		t.Errorf("bash: %+v", res)
	}
}
