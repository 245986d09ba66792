package pause

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a process that passes two points.
const helperEnv = "PAUSE_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		At("first")
		_, _ = os.Stdout.WriteString("between\n")
		At("second")
		_, _ = os.Stdout.WriteString("done\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"lane", []string{"lane"}},
		{" lane , mid-bash,,", []string{"lane", "mid-bash"}},
	} {
		got := parse(tc.in)
		if len(got) != len(tc.want) {
			t.Errorf("parse(%q) = %v, want %v", tc.in, got, tc.want)
		}
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("parse(%q) lacks %q", tc.in, w)
			}
		}
	}
}

func TestInertWithoutTheVariable(t *testing.T) {
	done := make(chan struct{})
	go func() {
		At(Lane)
		At("anything")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("At blocked although no point was asked for")
	}
}

// start runs the helper pausing at points and returns it with its stdout
// and stderr lines.
func start(t *testing.T, points, file string) (*exec.Cmd, *bufio.Scanner, *bufio.Scanner) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", Env+"="+points, FileEnv+"="+file)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(stdout), bufio.NewScanner(stderr)
}

func TestPausesAnnouncesAndContinuesOnSIGUSR1(t *testing.T) {
	file := filepath.Join(t.TempDir(), "points")
	cmd, out, errs := start(t, "second,other", file)
	if !out.Scan() || out.Text() != "between" {
		t.Fatalf("stdout: %q, want the helper past the first point", out.Text())
	}
	if !errs.Scan() {
		t.Fatal("no announcement on stderr")
	}
	want := "dirtywork: paused at second (pid " + strconv.Itoa(cmd.Process.Pid) + ")"
	if errs.Text() != want {
		t.Fatalf("announcement %q, want %q", errs.Text(), want)
	}
	data, err := os.ReadFile(file)
	if err != nil || strings.TrimSpace(string(data)) != want {
		t.Fatalf("pause file holds %q (%v), want %q", data, err, want)
	}
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if !out.Scan() || out.Text() != "done" {
		t.Fatalf("stdout after SIGUSR1: %q, want done", out.Text())
	}
}

func TestSIGKILLWhilePaused(t *testing.T) {
	cmd, _, errs := start(t, "first", "")
	if !errs.Scan() || !strings.HasPrefix(errs.Text(), "dirtywork: paused at first") {
		t.Fatalf("announcement %q", errs.Text())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Fatalf("wait: %v, want a death by signal", err)
	}
}
