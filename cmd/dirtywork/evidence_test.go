//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
)

// smallTmpfs mounts a 1 MiB tmpfs for the test (root only) and returns it.
func smallTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root)")
	}
	// Not under /tmp, and unbindable: host-mode jails of other tests bind
	// /tmp recursively, and must neither meet this mount nor race its
	// unmounting.
	dir, err := os.MkdirTemp("/var/tmp", "dirtywork-full-disk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if err := unix.Mount("", dir, "", unix.MS_UNBINDABLE, ""); err != nil {
		t.Fatalf("make %s unbindable: %v", dir, err)
	}
	return dir
}

// fill fills the file system dir is on until it refuses another byte.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "filler"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	for _, size := range []int{64 << 10, 1} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill %s: %v", dir, err)
				}
				break
			}
		}
	}
}

// runPausedThenFull runs a scripted host run with DIRTYWORK_HOME on a small
// tmpfs, pauses it at point, fills the tmpfs, lets it go on and returns
// its stdout object, stderr and exit code.
func runPausedThenFull(t *testing.T, e *e2e, point string) (map[string]any, string, int) {
	t.Helper()
	cmd := cliCommand(t, "", []string{"DIRTYWORK_HOME=" + e.home, pause.Env + "=" + point},
		"run", "--sandbox", "none", "--repo", e.repo, "--base-url", e.base,
		"--model", "scripted/model", "--context-window", "32768", "do the scripted task")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	var stderr strings.Builder
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "dirtywork: paused at "+point) {
			break
		}
	}
	if !strings.Contains(stderr.String(), "paused at "+point) {
		t.Fatalf("the run never reached %s:\n%s", point, stderr.String())
	}
	fill(t, e.home)
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(errPipe)
	stderr.Write(rest)
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &payload); err != nil {
		t.Fatalf("no stdout object on a full disk: %q (%v)\n%s", stdout.String(), err, stderr.String())
	}
	return payload, stderr.String(), code
}

// TestFullDiskLosesNoEvidenceSilently: with the run dir's file system full,
// a run still works, prints its stdout object, and says in finalize_error
// and on stderr which records it could not write.
func TestFullDiskLosesNoEvidenceSilently(t *testing.T) {
	for _, tc := range []struct {
		point string
		lost  []string // records named in finalize_error
		kept  string   // a record that must be whole
		// ended: the space the run held back at its start took its end,
		// so run.json says how it ended and result.json is there.
		ended bool
	}{
		// Full before run_start: the transcript's lines until its end are
		// lost; the reserve given up before the end takes run_end,
		// run.json's end and result.json.
		{pause.Transcript, []string{"transcript: write run_start event to "}, "", true},
		// Full after run_end (the reserve already given up): the
		// transcript is whole, run.json's end and result.json are lost.
		{pause.RunJSON, []string{"run.json: ", "result.json: "}, "transcript", false},
	} {
		t.Run(tc.point, func(t *testing.T) {
			e := newE2E(t, `{"turns":[
				{"tool_calls":[{"name":"write_file","arguments":{"path":"work.txt","content":"kept\n"}}]},
				{"finish":"done on a full disk"}]}`)
			e.home = smallTmpfs(t)
			payload, stderr, code := runPausedThenFull(t, e, tc.point)
			if code != 0 || payload["status"] != "completed" {
				t.Fatalf("exit %d, status %v: a full run dir must not change the run's outcome\n%s", code, payload["status"], stderr)
			}
			fe, _ := payload["finalize_error"].(string)
			if !strings.HasPrefix(fe, "EvidenceError: evidence lost: ") {
				t.Fatalf("finalize_error %q", fe)
			}
			for _, w := range tc.lost {
				if !strings.Contains(fe, w) || !strings.Contains(fe, "no space left on device") {
					t.Errorf("finalize_error %q does not name %q", fe, w)
				}
			}
			if !strings.Contains(stderr, "warning: evidence lost: ") {
				t.Errorf("stderr does not report the loss:\n%s", stderr)
			}
			if data, err := os.ReadFile(filepath.Join(payload["worktree"].(string), "work.txt")); err != nil || string(data) != "kept\n" {
				t.Errorf("the work: %q %v", data, err)
			}
			if tc.kept == "transcript" {
				evs := events(t, payload["transcript"].(string))
				if len(evs) == 0 || evs[len(evs)-1]["event"] != "run_end" {
					t.Errorf("the transcript lost lines written before the disk filled")
				}
			}
			runDir := payload["run_dir"].(string)
			_, resultErr := os.Stat(filepath.Join(runDir, "result.json"))
			if !tc.ended {
				if resultErr == nil {
					t.Error("a result.json exists although it could not be written")
				}
				return
			}
			for _, w := range []string{"run.json: ", "result.json: "} {
				if strings.Contains(fe, w) {
					t.Errorf("finalize_error %q names %q, which the reserve should have taken", fe, w)
				}
			}
			if resultErr != nil {
				t.Errorf("result.json: %v", resultErr)
			}
			rec, err := transcript.ReadRun(runDir)
			if err != nil || rec.Record.Status != transcript.StatusCompleted || rec.Record.FinalizeError == nil || *rec.Record.FinalizeError != fe {
				t.Errorf("run.json does not say how the run ended: %v", err)
			}
		})
	}
}
