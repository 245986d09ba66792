package transcript

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// startFakeOriginal starts a process shaped like a run of dirtywork 0.9.1
// (a `dirtywork` script run by its interpreter, as pipx's is) that lives
// until the test ends or stop is called, and returns its pid.
func startFakeOriginal(t *testing.T) (pid int64, stop func()) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "dirtywork")
	if err := os.WriteFile(script, []byte("read line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "sh", script, "run", "--repo", "/nowhere", "a task")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	stop = func() {
		if done {
			return
		}
		done = true
		_ = in.Close() // read ends, the script exits
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	// Start returns once the exec began; the kernel fills the new
	// program's command line a moment later. Wait for it to be there.
	cmdline := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cmdline")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, err := os.ReadFile(cmdline); err != nil || len(data) > 0 {
			break // no procfs, or the script runs
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake original has no command line 10 s after it started")
		}
		time.Sleep(time.Millisecond)
	}
	return int64(cmd.Process.Pid), stop
}

func TestLegacyAliveChecksMoreThanThePid(t *testing.T) {
	pid, stop := startFakeOriginal(t)
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000+00:00")
	for _, tc := range []struct {
		name    string
		pid     int64
		started string
		want    bool
	}{
		{"a live run of 0.9.1", pid, now, true},
		{"its record's start unreadable: the command line decides", pid, "not a time", true},
		{"a process that started after the run (a reused pid)", pid, "2020-01-02T03:04:05.000000+00:00", false},
		{"a live process that is not dirtywork", int64(os.Getpid()), now, false},
		{"no pid", 0, now, false},
		{"a negative pid", -1, now, false},
		{"past any pid", 1 << 40, now, false},
	} {
		if got := LegacyAlive(tc.pid, tc.started); got != tc.want {
			t.Errorf("%s: LegacyAlive(%d, %q) = %v, want %v", tc.name, tc.pid, tc.started, got, tc.want)
		}
	}
	stop()
	if LegacyAlive(pid, now) {
		t.Error("a run of 0.9.1 whose process ended is alive")
	}
}

func TestNamesDirtywork(t *testing.T) {
	for cmdline, want := range map[string]bool{
		"python3\x00-m\x00dirtywork\x00run\x00--repo\x00.\x00":                                              true,
		"/home/u/.local/pipx/venvs/dirtywork/bin/python\x00/home/u/.local/bin/dirtywork\x00resume\x00x\x00": true,
		"/usr/bin/python3\x00-m\x00dirtywork.__main__\x00bench\x00":                                         true,
		"/usr/bin/DirtyWork\x00run\x00":                                                                     true,
		"/usr/sbin/sshd\x00-D\x00":                                                                          false,
		"python3\x00-m\x00http.server\x00--directory\x00/srv/dirtywork-fork/www\x00":                        false,
	} {
		if got := namesDirtywork([]byte(cmdline)); got != want {
			t.Errorf("namesDirtywork(%q) = %v, want %v", cmdline, got, want)
		}
	}
}
