package transcript

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLivenessHelperProcess is not a test: it is the body of the helper
// processes that hold a run's liveness lock or stand in for a run's child.
//
// Modes: "hold" acquires the lock of the run dir in args[0], prints "locked"
// and waits for stdin to close; "hold-with-child" does the same but first
// starts a "wait-stdin" child sharing its stdin and prints "child <pid>";
// "wait-stdin" prints "ready" and waits for stdin to close.
func TestLivenessHelperProcess(t *testing.T) {
	mode := os.Getenv(testHelperEnv)
	switch mode {
	case "hold", "hold-with-child":
		lock, err := AcquireLiveness(helperArgs()[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = lock // held until the process ends, however it ends
		if mode == "hold-with-child" {
			child := spawnTestHelper(t, "TestLivenessHelperProcess", "wait-stdin")
			// The child shares our stdin, so it outlives us until the test
			// closes the pipe.
			child.Stdin = os.Stdin
			out, err := child.StdoutPipe()
			if err == nil {
				err = child.Start()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			// "ready" means the exec has happened and close-on-exec applied.
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Printf("child %d\n", child.Process.Pid)
		}
		fmt.Println("locked")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "wait-stdin":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
}

// startLivenessHelper starts a helper in the given mode on runDir and returns
// the write end of its stdin and a channel of its stdout lines. The helper is
// killed at the end of the test if it is still running.
func startLivenessHelper(t *testing.T, mode, runDir string) (*exec.Cmd, io.WriteCloser, <-chan string) {
	t.Helper()
	cmd := spawnTestHelper(t, "TestLivenessHelperProcess", mode, runDir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close() // a test may have closed it already
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("helper stderr: %s", stderr.String())
		}
	})
	return cmd, stdin, lines
}

// awaitLine waits up to 5 s for a line starting with prefix and returns it.
func awaitLine(t *testing.T, lines <-chan string, prefix string) string {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("helper exited before printing %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("helper did not print %q within 5 s", prefix)
		}
	}
}

func checkAlive(t *testing.T, runDir string, want bool) {
	t.Helper()
	alive, err := IsAlive(runDir)
	if err != nil {
		t.Fatalf("IsAlive: %v", err)
	}
	if alive != want {
		t.Errorf("IsAlive() = %v, want %v", alive, want)
	}
}

func TestLivenessAcquireRelease(t *testing.T) {
	dir := newRunDir(t)
	checkAlive(t, dir, false) // no .alive file yet
	checkAlive(t, filepath.Join(t.TempDir(), "no-such-run"), false)

	lock, err := AcquireLiveness(dir)
	if err != nil {
		t.Fatalf("AcquireLiveness: %v", err)
	}
	checkMode(t, filepath.Join(dir, livenessName), 0o600)
	checkAlive(t, dir, true)

	// flock belongs to the open file description, so a second acquisition in
	// this same process conflicts exactly as another process would.
	_, err = AcquireLiveness(dir)
	if !errors.Is(err, ErrRunAlive) {
		t.Fatalf("second AcquireLiveness() error = %v, want ErrRunAlive", err)
	}
	if !strings.Contains(err.Error(), "run 'run-1' is still alive") {
		t.Errorf("message = %q", err.Error())
	}

	if err := lock.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	checkAlive(t, dir, false)
	if err := lock.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}

	again, err := AcquireLiveness(dir)
	if err != nil {
		t.Fatalf("AcquireLiveness after Release: %v", err)
	}
	if err := again.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestLivenessProbesDoNotLookAlive(t *testing.T) {
	saved := acquireGrace
	acquireGrace = 5 * time.Second
	t.Cleanup(func() { acquireGrace = saved })
	dir := newRunDir(t)
	seedFile(t, filepath.Join(dir, livenessName), "")

	// Stand in for another observer in the middle of its probe.
	probe, err := os.Open(filepath.Join(dir, livenessName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := probe.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := flockFile(probe, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	checkAlive(t, dir, false)

	// A run starting during a probe waits it out instead of failing.
	time.AfterFunc(50*time.Millisecond, func() { _ = flockFile(probe, unix.LOCK_UN) })
	lock, err := AcquireLiveness(dir)
	if err != nil {
		t.Fatalf("AcquireLiveness during a probe: %v", err)
	}
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestLivenessDroppedWhenOwnerIsKilled(t *testing.T) {
	dir := newRunDir(t)
	cmd, _, lines := startLivenessHelper(t, "hold", dir)
	awaitLine(t, lines, "locked")

	checkAlive(t, dir, true)
	if _, err := AcquireLiveness(dir); !errors.Is(err, ErrRunAlive) {
		t.Fatalf("AcquireLiveness() while the helper holds it: %v, want ErrRunAlive", err)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // "signal: killed" is the expected outcome
	checkAlive(t, dir, false)
}

func TestLivenessNotInheritedByChildren(t *testing.T) {
	dir := newRunDir(t)
	owner, stdin, lines := startLivenessHelper(t, "hold-with-child", dir)
	pidLine := awaitLine(t, lines, "child ")
	childPid, err := strconv.Atoi(strings.TrimPrefix(pidLine, "child "))
	if err != nil {
		t.Fatalf("bad child line %q: %v", pidLine, err)
	}
	awaitLine(t, lines, "locked")
	checkAlive(t, dir, true)

	// Kill the owner without letting it unlock: only the kernel's cleanup
	// of its descriptors can release the lock now.
	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Reap through os.Process, not exec.Cmd: Cmd.Wait would also close our
	// end of the shared stdin, and the child could exit before it is checked.
	if _, err := owner.Process.Wait(); err != nil {
		t.Fatal(err)
	}

	if err := unix.Kill(childPid, 0); err != nil {
		t.Fatalf("the owner's child is not running: %v", err)
	}
	checkAlive(t, dir, false)

	// Closing the shared stdin lets the child exit on its own.
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
}
