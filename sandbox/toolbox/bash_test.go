package toolbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// mustBash runs command with a generous timeout and fails on an error, a
// launch failure or a timeout.
func mustBash(t *testing.T, c *Client, command string) BashReply {
	t.Helper()
	res, err := c.Bash(t.Context(), command, 20*time.Second)
	if err != nil {
		t.Fatalf("Bash(%q): %v", command, err)
	}
	if res.LaunchError != "" || res.TimedOut {
		t.Fatalf("Bash(%q): launch error %q, timed out %v", command, res.LaunchError, res.TimedOut)
	}
	return res
}

func TestBashExitCodeOutputAndPlace(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tr.start(t, dir)
			res := mustBash(t, c, "echo to-stdout; echo to-stderr >&2; exit 3")
			if res.ExitCode != 3 || res.Output != "to-stdout\nto-stderr\n" || res.Capped || res.Timeout != 20*time.Second {
				t.Errorf("got %+v, want exit 3 with both streams merged in order", res)
			}
			if res := mustBash(t, c, "pwd; echo $TOOLBOX_TEST_VAR; cat; echo stdin-done"); res.Output != dir+"\nfrom-"+map[string]string{"pipe": "config", "process": "process"}[tr.name]+"\nstdin-done\n" {
				t.Errorf("output %q, want the root, the configured environment and an empty stdin", res.Output)
			}
			if res := mustBash(t, c, `printf 'a\377b'`); res.Output != "a\uFFFDb" {
				t.Errorf("output %q, want invalid UTF-8 replaced", res.Output)
			}
			if res := mustBash(t, c, "kill -9 $$"); res.ExitCode != -1 {
				t.Errorf("a shell killed by a signal: exit %d, want -1", res.ExitCode)
			}
		})
	}
}

func TestBashCapsOutputAtOneMiB(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.start(t, t.TempDir())
			res := mustBash(t, c, `head -c 2000000 /dev/zero | tr '\0' a; echo done >&2`)
			if res.ExitCode != 0 || !res.Capped || len(res.Output) != 1<<20 || strings.Trim(res.Output, "a") != "" {
				t.Errorf("exit %d, capped %v, %d bytes: want exit 0, capped, exactly 1 MiB of the output", res.ExitCode, res.Capped, len(res.Output))
			}
		})
	}
}

func TestBashTimeoutKillsAndServerStaysUsable(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			c := tr.start(t, t.TempDir())
			// The command would run ten minutes: returning within a
			// minute is the timeout's kill (a liveness bound, not speed).
			start := time.Now()
			res, err := c.Bash(t.Context(), "echo partial; sleep 600", time.Second)
			if elapsed := time.Since(start); elapsed >= time.Minute {
				t.Errorf("took %v, want the command killed at its 1 s timeout", elapsed)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.TimedOut || res.ExitCode != -1 || res.Output != "" || res.Timeout != time.Second {
				t.Errorf("got %+v, want TimedOut, exit -1, no output, timeout 1s", res)
			}
			if res := mustBash(t, c, "echo still-here"); res.Output != "still-here\n" {
				t.Errorf("next command: %q", res.Output)
			}
		})
	}
}

// waitDead waits until the process pid is gone or a zombie.
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 && strings.HasPrefix(string(data[i+1:]), " Z") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still alive 30 s after its command ended", pid)
}

// readPID reads the pid a job wrote to file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestBashBackgroundJobDiesWithBash(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tr.start(t, dir)
			// The job records its pid before bash goes on, so the test
			// knows which process must die. It outlasts mustBash's
			// timeout: a bash that waited for it would time out.
			res := mustBash(t, c, `(echo $BASHPID > job.pid; sleep 600; echo late > late.txt) & while [ ! -s job.pid ]; do :; done; echo hi`)
			if res.Output != "hi\n" || res.ExitCode != 0 {
				t.Errorf("got %+v, want exit 0 and hi", res)
			}
			waitDead(t, readPID(t, filepath.Join(dir, "job.pid")))
			if _, err := os.Stat(filepath.Join(dir, "late.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the killed job wrote its file: %v", err)
			}
		})
	}
}

// TestBashKillsJobsThatLeftTheGroup proves a server process (Main, a
// subreaper) kills a job that started a session of its own, which the
// group kill cannot reach.
func TestBashKillsJobsThatLeftTheGroup(t *testing.T) {
	dir := t.TempDir()
	c, _ := startProcess(t, []string{"-root", dir})
	res := mustBash(t, c, `setsid sh -c 'echo $$ > job.pid; exec sleep 30' & while [ ! -s job.pid ]; do :; done; echo hi`)
	if res.Output != "hi\n" {
		t.Fatalf("got %+v", res)
	}
	waitDead(t, readPID(t, filepath.Join(dir, "job.pid")))
}

func TestBashFileSizeCap(t *testing.T) {
	dir := t.TempDir()
	cfg := ServerConfig{Root: dir, Env: testEnv(), MaxFileBytes: 64 << 10}
	c := startPipe(t, cfg)
	res := mustBash(t, c, `head -c 100000 /dev/zero > big; echo rc=$?; echo $0`)
	if !strings.HasSuffix(res.Output, "rc=153\nbash\n") {
		t.Errorf("output %q, want the writer killed by SIGXFSZ (153) and $0 the shell", res.Output)
	}
	if fi, err := os.Stat(filepath.Join(dir, "big")); err != nil || fi.Size() != 64<<10 {
		t.Errorf("big: %v, want 64 KiB", fi)
	}
	// Without a cap the same write goes through.
	c = startPipe(t, ServerConfig{Root: dir, Env: testEnv()})
	if res := mustBash(t, c, `head -c 100000 /dev/zero > big; echo rc=$?; echo $0`); res.Output != "rc=0\nbash\n" {
		t.Errorf("uncapped: %q", res.Output)
	}
}

func TestBashLaunchError(t *testing.T) {
	c := startPipe(t, ServerConfig{Root: t.TempDir(), Bash: "/nonexistent/bash"})
	res, err := c.Bash(t.Context(), "true", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.LaunchError == "" || res.ExitCode != -1 || res.TimedOut {
		t.Errorf("got %+v, want a launch error and exit -1", res)
	}
}

// TestBashCancel proves a cancelled call kills the command, returns the
// context's error at once and leaves the client usable.
func TestBashCancel(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tr.start(t, dir)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := c.Bash(ctx, "echo $$ > sh.tmp && mv sh.tmp sh.pid; sleep 600", time.Minute)
				errc <- err
			}()
			waitFile(t, filepath.Join(dir, "sh.pid"))
			cancel()
			// The command would run ten minutes, its timeout is one:
			// returning within 30 s is the cancel's doing.
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v, want context.Canceled", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("cancelled Bash did not return within 30 s")
			}
			waitDead(t, readPID(t, filepath.Join(dir, "sh.pid")))
			if c.Err() != nil {
				t.Fatalf("client broken after a cancel: %v", c.Err())
			}
			if res := mustBash(t, c, "echo again"); res.Output != "again\n" {
				t.Errorf("next command: %q", res.Output)
			}
		})
	}
}

// TestMeasureWhileBashRuns proves a second request is served while a
// command runs (the watchdog's case), and a second command is refused.
func TestMeasureWhileBashRuns(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := t.TempDir()
			c := tr.start(t, dir)
			type outcome struct {
				res BashReply
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := c.Bash(t.Context(), "head -c 100000 /dev/zero > blob; touch started; while [ ! -e go ]; do sleep 0.01; done; echo finished", 30*time.Second)
				done <- outcome{res, err}
			}()
			waitFile(t, filepath.Join(dir, "started"))
			m, err := c.Measure(t.Context(), sandbox.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Entries != 2 || m.Bytes < 100000 {
				t.Errorf("measure during the command: %+v, want 2 entries and the blob's bytes", m)
			}
			_, err = c.Bash(t.Context(), "true", 5*time.Second)
			var re *RemoteError
			if !errors.Is(err, ErrBusy) || !errors.As(err, &re) {
				t.Errorf("a second command: %v, want a busy RemoteError", err)
			}
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			select {
			case o := <-done:
				if o.err != nil || o.res.Output != "finished\n" {
					t.Errorf("first command: %+v, %v", o.res, o.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the command did not finish")
			}
		})
	}
}

// waitFile waits until file exists.
func waitFile(t *testing.T, file string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(file); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within a minute", file)
}

// A command during which the server's cgroup counted an OOM kill says so
// in its reply, whatever the daemon's event does: the count is read
// before and after the command (the command here plays the kernel).
func TestBashReportsAnOOMKillItsCgroupCounted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	events := filepath.Join(dir, "memory.events")
	if err := os.WriteFile(events, []byte("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	c := startPipe(t, ServerConfig{Root: root, Env: testEnv(), OOMEvents: []string{filepath.Join(dir, "absent"), events}})
	if res := mustBash(t, c, "true"); res.OOMKilled {
		t.Error("a command without a kill reported one")
	}
	if res := mustBash(t, c, "printf 'oom 3\\noom_kill 3\\n' >"+events); !res.OOMKilled {
		t.Error("a kill counted while the command ran was not reported")
	}
	if res := mustBash(t, c, "true"); res.OOMKilled {
		t.Error("the earlier kill was reported again")
	}
	// Without a count to read, nothing is claimed.
	bare := startPipe(t, ServerConfig{Root: root, Env: testEnv(), OOMEvents: []string{filepath.Join(dir, "absent")}})
	if res := mustBash(t, bare, "true"); res.OOMKilled {
		t.Error("a server without a count reported a kill")
	}
}

// The flag a container's server is started with reads the cgroup files.
func TestCgroupOOMFlag(t *testing.T) {
	t.Parallel()
	c, _ := startProcess(t, []string{"-root", t.TempDir(), "-cgroup-oom"})
	if res := mustBash(t, c, "echo ok"); res.Output != "ok\n" || res.OOMKilled {
		t.Errorf("with -cgroup-oom: %+v", res)
	}
}
