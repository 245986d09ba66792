package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A killed sweep's runs are cleaned on the engine each ran on, the
// acceptance checks removed on every engine it used or is given, and its
// scratch directory removed; a running sweep is never reaped.
func TestReapClearsWhatAKilledSweepLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	scratch := filepath.Join(dir, ScratchPrefix+"123")
	if err := os.MkdirAll(filepath.Join(scratch, "dwbench-t-1", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC) }
	s := openSweepState(out, "st", scratch, now)
	a := s.caseStarted(benchCase{model: ModelSpec{Model: "m"}, task: "t", repeat: 0}, "unix:///b.sock")
	s.staged(a, filepath.Join(scratch, "dwbench-t-1"))
	s.follow(a, "t-slug-a", "")
	s.caseStarted(benchCase{model: ModelSpec{Model: "m"}, task: "t", repeat: 1}, "") // staging when killed

	var cleaned, accepted []string
	r := Reaper{
		CleanRun: func(_ context.Context, host, slug string) error {
			cleaned = append(cleaned, host+" "+slug)
			return nil
		},
		RemoveAcceptance: func(_ context.Context, host string) ([]string, error) {
			accepted = append(accepted, host)
			if host == "" {
				return []string{"acc-1"}, nil
			}
			return nil, nil
		},
	}
	if _, err := r.Reap(t.Context(), out, []string{""}); !errors.Is(err, ErrSweepRunning) {
		t.Fatalf("reap of a running sweep: %v", err)
	}
	if len(cleaned)+len(accepted) != 0 {
		t.Fatal("a running sweep was touched")
	}
	killState(t, s, out)

	done, err := r.Reap(t.Context(), out, []string{""})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cleaned, []string{"unix:///b.sock t-slug-a"}) {
		t.Errorf("cleaned %v", cleaned)
	}
	if !slices.Equal(accepted, []string{"", "unix:///b.sock"}) {
		t.Errorf("acceptance removed on %v", accepted)
	}
	if _, err := os.Stat(scratch); !os.IsNotExist(err) {
		t.Errorf("scratch still there: %v", err)
	}
	want := []string{"cleaned run t-slug-a (m, t, repeat 0)", "removed acceptance object acc-1", "removed " + scratch}
	if !slices.Equal(done, want) {
		t.Errorf("said %q, want %q", done, want)
	}
}

// A state whose scratch directory is not one a sweep makes is left
// alone (the state file is the sweep's, but a planted path is not
// followed), and a failed clean is reported while the reap goes on.
func TestReapRefusesAForeignScratchDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.jsonl")
	foreign := filepath.Join(dir, "precious")
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	s := openSweepState(out, "st", foreign, time.Now)
	f := s.caseStarted(benchCase{model: ModelSpec{Model: "m"}, task: "t"}, "")
	s.follow(f, "t-slug", "")
	killState(t, s, out)
	r := Reaper{CleanRun: func(context.Context, string, string) error { return errors.New("engine down") }}
	_, err := r.Reap(t.Context(), out, nil)
	if err == nil || !strings.Contains(err.Error(), "clean run t-slug: engine down") || !strings.Contains(err.Error(), "left alone") {
		t.Fatalf("reap: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatalf("the foreign directory was removed: %v", err)
	}
}

// Without a state file (an original's results file, a sweep that never
// started) only acceptance checks are looked for.
func TestReapWithoutState(t *testing.T) {
	t.Parallel()
	var hosts []string
	r := Reaper{RemoveAcceptance: func(_ context.Context, h string) ([]string, error) { hosts = append(hosts, h); return nil, nil }}
	done, err := r.Reap(t.Context(), filepath.Join(t.TempDir(), "none.jsonl"), []string{"", "tcp://x:2375"})
	if err != nil || len(done) != 0 || !slices.Equal(hosts, []string{"", "tcp://x:2375"}) {
		t.Fatalf("done %v err %v hosts %v", done, err, hosts)
	}
}
