package egress

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

func TestForward(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ul, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ul.Close() }()
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				b, _ := io.ReadAll(c) // until the client half-closes
				_, _ = c.Write(bytes.ToUpper(b))
			}()
		}
	}()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Forward(tl, sock) }()
	for i := range 3 {
		c, err := net.Dial("tcp", tl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "hello %d", i)
		_ = c.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(c)
		_ = c.Close()
		if err != nil || string(got) != fmt.Sprintf("HELLO %d", i) {
			t.Fatalf("through the forwarder: %q, %v", got, err)
		}
	}
	_ = tl.Close()
	if err := <-done; err != nil {
		t.Fatalf("Forward after its listener closed: %v", err)
	}
}

func TestEnv(t *testing.T) {
	env := strings.Join(Env(ListenAddr), "\n")
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "ALL_PROXY=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1,::1"} {
		if !strings.Contains(env, want) {
			t.Errorf("Env lacks %s:\n%s", want, env)
		}
	}
}

func TestMainProxy(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "p.sock")
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Main(t.Context(), []string{"proxy", "-socket", sock, "-allow", "registry.test", "-deny-addr", "198.51.100.2"}, stdinR, stdoutW, &stderr)
		_ = stdoutW.Close()
	}()
	// Decisions are written as they happen: the client reads them all
	// the while, as the docker sandbox reads the sidecar's stream.
	lines := make(chan string, 16)
	go func() {
		out := bufio.NewScanner(stdoutR)
		for out.Scan() {
			lines <- out.Text()
		}
		close(lines)
	}()
	if first := <-lines; first != Ready {
		t.Fatalf("first line %q, want %s (stderr %s)", first, Ready, stderr.String())
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(c, "CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n")
	status, _ := bufio.NewReader(c).ReadString('\n')
	_ = c.Close()
	if !strings.Contains(status, "403") {
		t.Fatalf("CONNECT to loopback: %q", status)
	}
	if line := <-lines; !strings.Contains(line, `"decision":"refused"`) {
		t.Fatalf("decision line %q", line)
	}
	_ = stdinW.Close() // the client is gone: the proxy ends
	if got := <-code; got != 0 {
		t.Fatalf("exit %d: %s", got, stderr.String())
	}
}

func TestMainRun(t *testing.T) {
	var stderr bytes.Buffer
	ctx := context.WithoutCancel(t.Context())
	if code := Main(ctx, []string{"run", "-socket", "/nonexistent.sock", "-listen", "127.0.0.1:0", "--", "/bin/sh", "-c", "exit 7"}, nil, io.Discard, &stderr); code != 7 {
		t.Fatalf("exit %d, want 7 (%s)", code, stderr.String())
	}
	if code := Main(ctx, []string{"bogus"}, nil, io.Discard, &stderr); code != 2 {
		t.Fatalf("an unknown command exits %d", code)
	}
}
