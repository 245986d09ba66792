package toolbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// serverEnv, when set, makes the test binary run Main with the JSON
// array of arguments it holds, on its stdin and stdout: a real server
// process for the tests to talk to.
const serverEnv = "DW_TOOLBOX_TEST_SERVER"

func TestMain(m *testing.M) {
	if raw, ok := os.LookupEnv(serverEnv); ok {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			os.Exit(2)
		}
		//nolint:forbidigo // the re-executed server has no test, so no t.Context; it ends with its stdin
		os.Exit(Main(context.Background(), args, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// transport starts a server on root (display path = root) and returns a
// client talking to it: start after its hello, without caps; connect
// before any.
type transport struct {
	name    string
	start   func(t testing.TB, root string, opts ...Option) *Client
	connect func(t testing.TB, root string, opts ...Option) *Client
}

// transports are the two ways the tests reach a server: in-process over
// io.Pipe pairs, and a re-executed test binary over its stdin and stdout.
var transports = []transport{
	{"pipe", func(t testing.TB, root string, opts ...Option) *Client {
		return startPipe(t, ServerConfig{Root: root, Env: testEnv()}, opts...)
	}, func(t testing.TB, root string, opts ...Option) *Client {
		return connectPipe(t, ServerConfig{Root: root, Env: testEnv()}, opts...)
	}},
	{"process", func(t testing.TB, root string, opts ...Option) *Client {
		c, _ := startProcess(t, []string{"-root", root}, opts...)
		return c
	}, func(t testing.TB, root string, opts ...Option) *Client {
		c, _ := connectProcess(t, []string{"-root", root}, opts...)
		return c
	}},
}

// testEnv is the in-process server's command environment.
func testEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TOOLBOX_TEST_VAR=from-config"}
}

// startPipe is connectPipe with the hello said, without caps.
func startPipe(t testing.TB, cfg ServerConfig, opts ...Option) *Client {
	t.Helper()
	return greet(t, connectPipe(t, cfg, opts...))
}

// greet says c's hello, without caps, and returns c.
func greet(t testing.TB, c *Client) *Client {
	t.Helper()
	if _, err := c.Hello(t.Context(), sandbox.Limits{}); err != nil {
		t.Fatalf("hello: %v", err)
	}
	return c
}

// connectPipe runs Serve in-process with cfg over two io.Pipe pairs, and
// says no hello. The cleanup closes the client and checks Serve ended
// cleanly.
func connectPipe(t testing.TB, cfg ServerConfig, opts ...Option) *Client {
	t.Helper()
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := Serve(t.Context(), reqR, repW, cfg)
		// The client reads to the end; closing tells it the server left.
		_ = repW.CloseWithError(io.EOF)
		served <- err
	}()
	c := NewClient(repR, reqW, opts...)
	t.Cleanup(func() {
		_ = c.Close()
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return within 10s of Close")
		}
	})
	return c
}

// syncBuffer is a bytes.Buffer safe to write from one goroutine and read
// from another.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startProcess is connectProcess with the hello said, without caps.
func startProcess(t testing.TB, args []string, opts ...Option) (*Client, *exec.Cmd) {
	t.Helper()
	c, cmd := connectProcess(t, args, opts...)
	return greet(t, c), cmd
}

// connectProcess runs the test binary as a server with args (Main's
// flags) and returns a client on its stdin and stdout that said no hello.
// The cleanup closes the client and waits for the process, which must
// exit 0.
func connectProcess(t testing.TB, args []string, opts ...Option) (*Client, *exec.Cmd) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serverEnv+"="+string(raw), "TOOLBOX_TEST_VAR=from-process")
	cmd.Stdin = reqR
	cmd.Stdout = repW
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child holds its own ends.
	_ = reqR.Close()
	_ = repW.Close()
	c := NewClient(repR, reqW, opts...)
	t.Cleanup(func() {
		_ = c.Close()
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("server process: %v; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("server process did not exit within 10s of Close; stderr:\n%s", stderr.String())
		}
	})
	return c, cmd
}
