//go:build docker

package docker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// A worker that stops the tool server and then fills the work volume is
// still stopped: the server, stopped (SIGSTOP) rather than killed, neither
// measures nor ends its stream, so no reset replaces the container and the
// command's own measurement never comes; the daemon's measurement of the
// volume finds the breach within a few periods, the container is killed,
// the command ends with the budget error and Finalize reports it.
func TestLiveVolumeCheckWithoutServer(t *testing.T) {
	defer func(every time.Duration) { volumeCheckEvery = every }(volumeCheckEvery)
	volumeCheckEvery = time.Second
	slug := newSlug(t)
	r := newLiveRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.Limits = sandbox.Limits{MaxBytes: 8 << 20, MaxEntries: 5000}
	var rs resets
	cfg.OnReset = rs.add
	w := openLive(t, cfg)

	// $PPID is the tool server (see TestLiveTimeoutAndReset). The tool
	// server's in-flight measurement would come after 5 s and hang on the
	// stopped server for its 30 s call timeout before anything reset.
	start := time.Now()
	res, err := w.Bash(t.Context(),
		`kill -STOP "$PPID" && dd if=/dev/zero of=fill bs=1M count=32 2>/dev/null && sleep 120`, 150*time.Second)
	took := time.Since(start)
	var be *sandbox.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("bash filling the volume behind a stopped server: %+v, %v after %v; want the budget error", res, err, took)
	}
	t.Logf("stopped %v after the command began: %s", took.Round(time.Millisecond), be.Reason)
	if !strings.HasPrefix(be.Reason, "worktree exceeds 8 MB (the docker daemon measured the work volume at ") {
		t.Errorf("reason %q, want the daemon's measurement", be.Reason)
	}
	if took > 15*time.Second {
		t.Errorf("the breach was caught after %v, want within a few 1 s periods", took)
	}
	if got := rs.list(); len(got) != 0 {
		t.Errorf("resets %q, want none: the daemon's check, not a reset, must stop the run", got)
	}
	info, err := w.cl.inspectContainer(t.Context(), w.names.Container)
	if err != nil || info.State == nil || info.State.Running {
		t.Errorf("container after the breach: %+v, %v; want it killed", info.State, err)
	}
	if _, err := w.ReadFile(t.Context(), "a.txt", 0, 0); !sandbox.IsBudget(err) {
		t.Errorf("a call after the breach: %v, want the budget error again", err)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.WatchdogViolation == nil || *fin.WatchdogViolation != be.Reason ||
		fin.WatchdogViolationKind == nil || *fin.WatchdogViolationKind != kindBudget {
		t.Errorf("watchdog_violation %v kind %v, want %q kind %s", fin.WatchdogViolation, fin.WatchdogViolationKind, be.Reason, kindBudget)
	}
	if !strings.HasPrefix(fin.ExportStatus, "export_failed: ") {
		t.Errorf("export_status %q, want the byte cap's refusal", fin.ExportStatus)
	}
}

// A worker that makes the tree unmeasurable to the daemon (a path longer
// than PATH_MAX makes its walk fail, and it answers with no size) is
// stopped: after the daemon had measured the volume, answers without a
// size in a row end the run rather than let it go on unmeasured.
func TestLiveVolumeCheckUnmeasurable(t *testing.T) {
	defer func(every time.Duration) { volumeCheckEvery = every }(volumeCheckEvery)
	volumeCheckEvery = 500 * time.Millisecond
	slug := newSlug(t)
	r := newLiveRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.Limits = sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: 5000}
	w := openLive(t, cfg)
	// The first check measures the volume; let one period pass.
	if got := bash(t, w, "cat a.txt"); got != "a" {
		t.Fatalf("a.txt: %q", got)
	}
	time.Sleep(time.Second)
	// 25 directories of 200-character names: a path of over 5,000 bytes.
	start := time.Now()
	_, err := w.Bash(t.Context(), `n=$(printf 'd%.0s' $(seq 200)); for i in $(seq 25); do mkdir "$n" && cd "$n" || exit 1; done; sleep 60`, 90*time.Second)
	took := time.Since(start)
	var be *sandbox.BudgetError
	if !errors.As(err, &be) || !strings.Contains(be.Reason, "can no longer measure the work volume") {
		t.Fatalf("after hiding the tree from the daemon: %v after %v; want the run stopped", err, took)
	}
	if took > 20*time.Second {
		t.Errorf("stopped after %v, want within a few 0.5 s periods", took)
	}
}
