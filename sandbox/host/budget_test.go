package host

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// TestFillIsStoppedDuringTheCommand: a command writing 200 MB against a
// 50 MB cap is killed while it runs, not judged after it; the run ends
// budget_exceeded and what it wrote stays for review.
func TestFillIsStoppedDuringTheCommand(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	cfg.Limits.MaxBytes = 50 << 20
	w := open(t, cfg)
	// The command's own end is what "finished" marks: stopped during the
	// command, it never appears (no time is asserted).
	_, err := w.Bash(t.Context(), "for i in $(seq 200); do head -c 1048576 /dev/urandom > fill$i; sleep 0.02; done; echo done > finished", 10*time.Minute)
	if !sandbox.IsBudget(err) || !strings.Contains(err.Error(), "worktree exceeds 50 MB") {
		t.Fatalf("Bash: %v, want the budget breach", err)
	}
	if exists(filepath.Join(r.worktree, "finished")) || exists(filepath.Join(r.worktree, "fill200")) {
		t.Error("the command ran to its end")
	}
	// Every later call ends the run the same way.
	if _, err := w.ListDir(t.Context(), "."); !sandbox.IsBudget(err) {
		t.Errorf("list_dir after the breach: %v", err)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.WatchdogViolation == nil || *fin.WatchdogViolationKind != "budget" || !exists(filepath.Join(r.worktree, "fill1")) {
		t.Errorf("finalization %+v", fin)
	}
	if fin.WorktreeBytes < 50<<20 || fin.WorktreeBytes > 150<<20 {
		t.Errorf("worktree_bytes %d", fin.WorktreeBytes)
	}
}

func TestBudgetAfterBashAndWrites(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	cfg.Limits.MaxEntries = 30
	w := open(t, cfg)
	// The command itself is fine; the walk after it finds the breach and
	// the next call ends the run.
	res, err := w.Bash(t.Context(), "mkdir many && cd many && touch $(seq 40)", 30*time.Second)
	if sandbox.IsBudget(err) {
		return // the watch caught it while the command ran: as good
	}
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d: %s, %v", res.ExitCode, res.Output, err)
	}
	if _, err := w.WriteFile(t.Context(), "x.txt", "x"); !sandbox.IsBudget(err) || !strings.Contains(err.Error(), "entries") {
		t.Fatalf("write after the breach: %v", err)
	}
}
