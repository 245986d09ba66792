package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
)

// entriesNow walks the worktree for its entry count.
func entriesNow(t *testing.T, w *Workspace) int64 {
	t.Helper()
	m, err := w.fs.Measure(t.Context(), fsops.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return m.Entries
}

func TestBudgetTripsOnTheEntryPastTheLimit(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	probe := open(t, cfg)
	base := entriesNow(t, probe)
	cfg.Limits.MaxEntries = base + 3
	w := open(t, cfg)
	ctx := t.Context()
	for i := 1; i <= 3; i++ {
		if out, err := w.WriteFile(ctx, fmt.Sprintf("f%d.txt", i), "x"); err != nil {
			t.Fatalf("write %d: %q, %v", i, out, err)
		}
	}
	out, err := w.WriteFile(ctx, "f4.txt", "x")
	var be *sandbox.BudgetError
	if !errors.As(err, &be) || be.Reason != fmt.Sprintf("worktree exceeds %d entries", base+3) || out != "" {
		t.Fatalf("4th entry: %q, %v; want a BudgetError and no result", out, err)
	}
}

func TestBudgetAfterBash(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	probe := open(t, cfg)
	cfg.Limits.MaxEntries = entriesNow(t, probe) + 3
	w := open(t, cfg)
	if _, err := w.Bash(t.Context(), "mkdir a b c", 5*time.Second); err != nil {
		t.Fatalf("3 entries: %v", err)
	}
	// The tree is measured in the background while the model reads the
	// result; the breach ends the run at the next operation, whatever it is.
	res, err := w.Bash(t.Context(), "mkdir d", 5*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("4th entry from bash: %+v, %v; want the result", res, err)
	}
	want := fmt.Sprintf("worktree exceeds %d entries", cfg.Limits.MaxEntries)
	_, err = w.WriteFile(t.Context(), "next.txt", "x")
	var be *sandbox.BudgetError
	if !errors.As(err, &be) || be.Reason != want {
		t.Fatalf("next write after the breach: %v; want a BudgetError %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(r.worktree, "next.txt")); err == nil {
		t.Fatal("a write went ahead after the breach")
	}
	// Reads do not wait for a walk, but once one has found a breach they
	// report it too.
	if _, err := w.ListDir(t.Context(), "."); !sandbox.IsBudget(err) {
		t.Fatalf("the breach must stick: %v", err)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.WatchdogViolation == nil || *fin.WatchdogViolation != want || fin.WatchdogViolationKind == nil || *fin.WatchdogViolationKind != "budget" {
		t.Fatalf("finalize: violation %v kind %v", fin.WatchdogViolation, fin.WatchdogViolationKind)
	}
	if len(fin.FilesChanged) != 0 || fin.WorktreeFiles == 0 {
		t.Fatalf("finalize must still measure and diff: %+v", fin)
	}
}

func TestBudgetBytes(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	cfg.Limits.MaxBytes = 1 << 20
	w := open(t, cfg)
	_, err := w.WriteFile(t.Context(), "big.bin", string(make([]byte, 2<<20)))
	var be *sandbox.BudgetError
	if !errors.As(err, &be) || be.Reason != "worktree exceeds 1 MB" {
		t.Fatalf("got %v, want worktree exceeds 1 MB", err)
	}
}

// The totals a file tool keeps by accounting its own change must equal a
// full walk's.
func TestBudgetIncrementalMatchesWalk(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	ctx := t.Context()
	steps := []func() (string, error){
		func() (string, error) { return w.WriteFile(ctx, "a/b/c/deep.txt", "deep\n") },
		func() (string, error) { return w.WriteFile(ctx, "a/b/other.txt", string(make([]byte, 100000))) },
		func() (string, error) { return w.WriteFile(ctx, "a/b/other.txt", "shrunk\n") },
		func() (string, error) { return w.EditFile(ctx, "tracked.txt", "two", "TWO") },
		func() (string, error) { return w.InsertText(ctx, "README.md", "hello", "above", false) },
		func() (string, error) {
			return w.ApplyEdits(ctx, "a/b/c/deep.txt", []sandbox.Edit{{Old: "deep", New: "deeper"}})
		},
		func() (string, error) { return w.WriteFile(ctx, "../outside.txt", "refused") },
		func() (string, error) { return w.EditFile(ctx, "missing.txt", "x", "y") },
	}
	for i, step := range steps {
		if _, err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		m, err := w.fs.Measure(ctx, fsops.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if bytes, files := w.budget.Totals(); bytes != m.Bytes || files != m.Entries {
			t.Fatalf("after step %d: kept %d bytes, %d entries; a walk finds %d, %d", i, bytes, files, m.Bytes, m.Entries)
		}
	}
	if exists(filepath.Join(r.worktree, "..", "outside.txt")) {
		t.Error("a refused write landed")
	}
}

// BenchmarkWriteFileLargeTree measures the harness's time for a mutating
// file tool on a 20,000-file tree: the budget accounts the one file the
// tool changed instead of walking the tree (target: well under 10 ms).
func BenchmarkWriteFileLargeTree(b *testing.B) {
	r := newTestRepo(b)
	for d := range 200 {
		for f := range 100 {
			writeFile(b, filepath.Join(r.worktree, "tree", fmt.Sprintf("d%03d", d), fmt.Sprintf("f%03d.txt", f)), "x\n")
		}
	}
	w := open(b, r.config())
	ctx := b.Context()
	i := 0
	for b.Loop() {
		i++
		if _, err := w.WriteFile(ctx, fmt.Sprintf("tree/d%03d/new.txt", i%200), fmt.Sprintf("%d\n", i)); err != nil {
			b.Fatal(err)
		}
	}
}
