package host

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
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
	for _, command := range []string{"echo partial; sleep 5", "cat /dev/zero"} {
		start := time.Now()
		res, err := w.Bash(t.Context(), command, time.Second)
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("%q: %v", command, err)
		}
		if !res.TimedOut || res.ExitCode != -1 || res.Output != "" || res.Timeout != time.Second {
			t.Errorf("%q: got %+v, want TimedOut, exit -1, no output, timeout 1s", command, res)
		}
		if elapsed >= 3*time.Second {
			t.Errorf("%q took %v, want < 3s", command, elapsed)
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

	start := time.Now()
	out, code := run(t, w, "sleep 30 & echo hi")
	if elapsed := time.Since(start); elapsed >= 3*time.Second {
		t.Errorf("sleep 30 & echo hi took %v, want < 3s", elapsed)
	}
	if out != "hi\n" || code != 0 {
		t.Errorf("got %q exit %d", out, code)
	}

	// A plain background job, one that starts its own session (setsid
	// forks when it leads its group) and a double-forked one: each would
	// write a file after a second if it survived bash.
	run(t, w, "(sleep 1; echo x > bg-fired) & "+
		"setsid -f sh -c 'sleep 1; echo x > setsid-fired'; "+
		"(setsid sh -c 'sleep 1; echo x > double-fired' &) ; echo started")
	// Control: the same write done in the foreground lands, so the
	// absence below is the jobs' death, not a write Landlock refused.
	run(t, w, "sleep 1; echo x > fg-fired")
	if !exists(filepath.Join(root, "fg-fired")) {
		t.Fatal("the control write did not land")
	}
	time.Sleep(2 * time.Second) // the jobs' deadline plus a margin
	for _, name := range []string{"bg-fired", "setsid-fired", "double-fired"} {
		if exists(filepath.Join(root, name)) {
			t.Errorf("%s exists: a job outlived bash", name)
		}
	}
}

func TestBashCancelKillsCommand(t *testing.T) {
	w := open(t, newTestRepo(t).config())
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := w.Bash(ctx, "sleep 1.5; echo x > after-cancel", 20*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed >= 3*time.Second {
		t.Errorf("cancel took %v to take effect", elapsed)
	}
	time.Sleep(2 * time.Second)
	if exists(filepath.Join(w.DisplayRoot(), "after-cancel")) {
		t.Error("the cancelled command ran on")
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
	if strings.Contains(out, "sk-test-secret-value") {
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
