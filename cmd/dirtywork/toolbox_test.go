package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// TestToolboxCommandServesOverStdio runs `dirtywork toolbox` as a real
// process and talks to it over its stdin and stdout, as the docker
// sandbox does over the container's attached stream.
func TestToolboxCommandServesOverStdio(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := cliCommand(t, "", nil, "toolbox", "-root", root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	c := toolbox.NewClient(stdout, stdin)
	info, err := c.Hello(t.Context(), sandbox.Limits{})
	if err != nil || info.PID != cmd.Process.Pid || info.Dumpable {
		t.Fatalf("hello: %+v %v", info, err)
	}
	got, err := c.ReadFile(t.Context(), "a.txt", 0, 10)
	if err != nil || !strings.Contains(got, "hello") {
		t.Fatalf("read_file: %q %v", got, err)
	}
}
