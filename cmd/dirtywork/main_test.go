package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// Environment variables that turn the test binary into the CLI.
const (
	// testMainEnv=1 makes the test binary run Main with its arguments and
	// exit with its code, so tests can run dirtywork as a real process
	// without building it separately.
	testMainEnv = "DIRTYWORK_TEST_MAIN"
	// testHoldEnv=1 additionally keeps the process alive after Main
	// returned (its output flushed) until it is killed: an owner that
	// opened something and then crashed without cleaning up.
	testHoldEnv = "DIRTYWORK_TEST_HOLD"
)

// TestMain either runs the CLI (see testMainEnv) or runs the tests with
// every git they start isolated from the machine's configuration: a
// throw-away HOME and global config, no system config, a fixed identity
// and fixed dates. Child processes inherit the isolation.
func TestMain(m *testing.M) {
	// The test binary is also the launcher that confines host-mode bash.
	jail.MaybeRun()
	host.MaybeServe()
	if os.Getenv(testMainEnv) == "1" {
		code := Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		if os.Getenv(testHoldEnv) == "1" {
			time.Sleep(time.Hour) // killed by the test long before
		}
		os.Exit(code)
	}
	home, err := os.MkdirTemp("", "dirtywork-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	isolated := map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_GLOBAL":   cfg,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "Test Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_AUTHOR_DATE":     "2026-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME":  "Test Committer",
		"GIT_COMMITTER_EMAIL": "committer@example.com",
		"GIT_COMMITTER_DATE":  "2026-01-02T03:04:05Z",
		// No test of this package reaches a real Docker daemon by accident;
		// the ones that need a daemon bring their own.
		"DOCKER_HOST": "unix://" + filepath.Join(home, "no-docker.sock"),
	}
	for k, v := range isolated {
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", sessionEnv} {
		if err := os.Unsetenv(k); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if err := os.RemoveAll(home); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// runCLI runs dirtywork in this process through Main, as if started in dir
// (the current directory when "") with env ("KEY=value" entries) added to
// the environment, and returns what it printed and its exit code. It uses
// t.Chdir and t.Setenv, so tests calling it cannot be parallel; use
// runCLIProcess for those, and for anything that must survive or be killed.
func runCLI(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if dir != "" {
		t.Chdir(dir)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	var out, errOut bytes.Buffer
	code = Main(args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

// cliCommand prepares (does not start) dirtywork as a real child process:
// the test binary re-executed as the CLI, in dir (inherited when ""), with
// env added to this process's (isolated) environment.
func cliCommand(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), testMainEnv+"=1"), env...)
	// A killed child's output copiers must not hold Wait forever.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// startCLI starts dirtywork as a real child process (see cliCommand) with
// its stdout and stderr going to the given writers (nil discards). The
// process is killed and reaped when the test ends, unless the test waited
// for it already.
func startCLI(t *testing.T, dir string, env []string, stdout, stderr io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := cliCommand(t, dir, env, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dirtywork %s: %v", strings.Join(args, " "), err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			// Best effort: the test is over, only the process must go.
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// runCLIProcess runs dirtywork as a real child process to completion and
// returns what it printed and its exit code. Safe in parallel tests and
// goroutines: it never fails the test itself.
func runCLIProcess(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int, err error) {
	cmd := cliCommand(t, dir, env, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return out.String(), errOut.String(), ee.ExitCode(), nil
	}
	if err != nil {
		return out.String(), errOut.String(), -1, fmt.Errorf("run dirtywork %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), 0, nil
}
