package host

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// run runs command in w with a generous timeout and fails on an error, a
// launch error or a timeout.
func run(t *testing.T, w *Workspace, command string) (out string, code int) {
	t.Helper()
	res := bash(t, w, command)
	if res.LaunchError != "" || res.TimedOut {
		t.Fatalf("Bash(%q): launch error %q, timed out %v", command, res.LaunchError, res.TimedOut)
	}
	return res.Output, res.ExitCode
}

func TestBashExitCodeAndMergedOutput(t *testing.T) {
	w := open(t, newTestRepo(t).config())
	out, code := run(t, w, "echo to-stdout; echo to-stderr >&2; exit 3")
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if out != "to-stdout\nto-stderr\n" {
		t.Errorf("output %q, want both streams merged in order", out)
	}
	if out, code := run(t, w, "pwd"); code != 0 || strings.TrimSpace(out) != w.DisplayRoot() {
		t.Errorf("pwd = %q (exit %d), want the worktree %s", out, code, w.DisplayRoot())
	}
}

func TestBashTimeoutKillsAndDropsOutput(t *testing.T) {
	w := open(t, newTestRepo(t).config())
	// Neither command ends on its own within the test: returning at all
	// is the timeout's kill.
	for _, command := range []string{"echo partial; sleep 600", "cat /dev/zero"} {
		res, err := w.Bash(t.Context(), command, time.Second)
		if err != nil {
			t.Fatalf("%q: %v", command, err)
		}
		if !res.TimedOut || res.ExitCode != -1 || res.Output != "" || res.Timeout != time.Second {
			t.Errorf("%q: got %+v, want TimedOut, exit -1, no output, timeout 1s", command, res)
		}
	}
}

func TestBashCapsOutput(t *testing.T) {
	w := open(t, newTestRepo(t).config())
	res, err := w.Bash(t.Context(), "head -c 2000000 /dev/zero | tr '\\0' a; echo done >&2", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Capped || len(res.Output) != 1<<20 || res.ExitCode != 0 {
		t.Fatalf("got capped=%v len=%d exit=%d, want capped, 1 MiB, exit 0", res.Capped, len(res.Output), res.ExitCode)
	}
	res, err = w.Bash(t.Context(), "head -c 1000 /dev/zero | tr '\\0' a", 20*time.Second)
	if err != nil || res.Capped || len(res.Output) != 1000 {
		t.Fatalf("small output: capped=%v len=%d err=%v", res.Capped, len(res.Output), err)
	}
}

func TestBashBackgroundJobsDieWithBash(t *testing.T) {
	w := open(t, newTestRepo(t).config())
	root := w.DisplayRoot()

	// run's timeout is shorter than the job: a bash that waited for it
	// would time out.
	out, code := run(t, w, "sleep 600 & echo hi")
	if out != "hi\n" || code != 0 {
		t.Errorf("got %q exit %d", out, code)
	}

	// A plain background job, one that starts its own session (setsid
	// forks when it leads its group) and a double-forked one: each would
	// write a file after a second if it survived bash. Their command
	// lines hold tok, so the test sees when none is left.
	tok := "fired-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	run(t, w, "(sleep 1; echo x > bg-"+tok+") & "+
		"setsid -f sh -c 'sleep 1; echo x > setsid-"+tok+"'; "+
		"(setsid sh -c 'sleep 1; echo x > double-"+tok+"' &) ; echo started")
	// Control: the same write done in the foreground lands, so the
	// absence below is the jobs' death, not a write Landlock refused.
	run(t, w, "sleep 1; echo x > fg-fired")
	if !exists(filepath.Join(root, "fg-fired")) {
		t.Fatal("the control write did not land")
	}
	// Killed or done, the jobs are gone; only a survivor wrote its file.
	waitNoProcess(t, tok)
	for _, name := range []string{"bg-", "setsid-", "double-"} {
		if exists(filepath.Join(root, name+tok)) {
			t.Errorf("%s exists: a job outlived bash", name+tok)
		}
	}
}

func TestBashCancelKillsCommand(t *testing.T) {
	w := open(t, newTestRepo(t).config())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tok := "cancel-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	started := filepath.Join(w.DisplayRoot(), "started-"+tok)
	go func() {
		// Cancel once the command runs.
		for !exists(started) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancel()
	}()
	// The command would not end for ten minutes, and a shell that
	// outlived its sleep's kill would write at once.
	done := make(chan error, 1)
	go func() {
		_, err := w.Bash(ctx, "touch started-"+tok+"; sleep 600; echo x > after-"+tok, 20*time.Minute)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancel did not end the command within a minute")
	}
	waitNoProcess(t, tok)
	if exists(filepath.Join(w.DisplayRoot(), "after-"+tok)) {
		t.Error("the cancelled command ran on")
	}
}

// waitNoProcess waits until no process on the machine has a command line
// holding tok.
func waitNoProcess(t *testing.T, tok string) {
	t.Helper()
	waitFor(t, func() bool {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(tok)) {
				return false
			}
		}
		return true
	})
}

// waitFor polls cond until it holds, failing after a minute (a liveness
// bound only).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBashEnvironment(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	out, code := run(t, w, "env")
	if code != 0 {
		t.Fatalf("env exit %d: %s", code, out)
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	// E-38's keys, and those bash itself exports to its children.
	allowed := []string{
		"PATH", "TERM", "LANG", "TMPDIR", "HOME", "PYTHONPATH",
		"VOLTA_HOME", "RUSTUP_HOME", "CARGO_HOME", "NVM_DIR", "PYENV_ROOT", "PWD", "SHLVL", "_",
		// dirtywork's identity for the worker's commits, as in docker mode.
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
		// Only without a jail: the worker's repository by the environment.
		"GIT_DIR", "GIT_WORK_TREE",
	}
	for k := range env {
		if !slices.Contains(allowed, k) {
			t.Errorf("bash sees %s=%q, which E-38 does not pass", k, env[k])
		}
	}
	if strings.Contains(out, "sk-test-secret-value") || strings.Contains(out, "sk-ant-test-secret-value") {
		t.Error("the operator's secret reached bash")
	}
	tmp := "/tmp" // the jail's own
	if _, plain := w.jailer.(childJailer); plain {
		tmp = w.private.tmp
	}
	want := map[string]string{
		"HOME": w.DisplayRoot(), "TMPDIR": tmp, "LANG": "C.UTF-8", "TERM": "dumb",
		"GIT_AUTHOR_NAME": "dirtywork", "GIT_COMMITTER_EMAIL": "dirtywork@localhost",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if out, _ := run(t, w, "echo $HOME"); strings.TrimSpace(out) != w.DisplayRoot() {
		t.Errorf("echo $HOME = %q, want the worktree", out)
	}
	// bash can use its scratch dir.
	if out, code := run(t, w, `f=$(mktemp) && echo ok > "$f" && cat "$f"`); code != 0 || out != "ok\n" {
		t.Errorf("mktemp in TMPDIR: %q exit %d", out, code)
	}
}

func TestCloseIsIdempotentAndRemovesTheWorkerRepository(t *testing.T) {
	w := open(t, newTestRepo(t).config())
	run(t, w, `mkdir -p "$TMPDIR/ro/sub" && chmod 500 "$TMPDIR/ro" && git commit -q --allow-empty -m x`)
	dir := w.private.dir
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if exists(dir) {
		t.Error("the worker's repository survived Close")
	}
	if _, err := w.Bash(t.Context(), "true", time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Bash after Close: %v, want ErrClosed", err)
	}
}
