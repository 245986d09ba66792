package toolbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// budgetOf asks c for its budget's verdict and fails on an error.
func budgetOf(t *testing.T, c *Client) Measurement {
	t.Helper()
	m, err := c.Budget(t.Context())
	if err != nil {
		t.Fatalf("Budget: %v", err)
	}
	return m
}

// TestBudgetAccountsWritesAndWalksAfterCommands: the server's budget
// starts from a walk at hello, adds what writing file tools change, is
// walked again after every command, and trips on the entry past the cap,
// for good.
func TestBudgetAccountsWritesAndWalksAfterCommands(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range []string{"a.txt", "b.txt"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := tr.connect(t, dir)
			if _, err := c.Hello(t.Context(), sandbox.Limits{MaxEntries: 6}); err != nil {
				t.Fatal(err)
			}
			if m := budgetOf(t, c); m.Entries != 2 || m.Violation != "" {
				t.Fatalf("baseline: %+v, want 2 entries", m)
			}
			// A write that creates a file and its parent: two entries.
			if out, err := c.WriteFile(t.Context(), "sub/c.txt", strings.Repeat("y", 5000)); err != nil || strings.HasPrefix(out, "ERROR") {
				t.Fatalf("write: %q %v", out, err)
			}
			m := budgetOf(t, c)
			if m.Entries != 4 || m.Violation != "" || m.Bytes < 5000 {
				t.Fatalf("after the write: %+v, want 4 entries and the file's bytes", m)
			}
			// A command changes the tree behind the budget's back; the
			// walk after it sees the truth.
			mustBash(t, c, "rm a.txt; touch d.txt e.txt")
			if m := budgetOf(t, c); m.Entries != 5 || m.Violation != "" {
				t.Fatalf("after the command: %+v, want 5 entries", m)
			}
			if _, err := c.WriteFile(t.Context(), "f.txt", "z"); err != nil {
				t.Fatal(err)
			}
			if m := budgetOf(t, c); m.Entries != 6 || m.Violation != "" {
				t.Fatalf("at the cap: %+v, want 6 entries and no breach", m)
			}
			if _, err := c.WriteFile(t.Context(), "g.txt", "z"); err != nil {
				t.Fatal(err)
			}
			m = budgetOf(t, c)
			if m.Violation != "worktree exceeds 6 entries" {
				t.Fatalf("past the cap: %+v, want the entry breach", m)
			}
			// The breach stays, even once the tree is back under the cap.
			mustBash(t, c, "rm -f f.txt g.txt")
			if m := budgetOf(t, c); m.Violation == "" {
				t.Fatalf("after cleaning up: %+v, want the breach kept", m)
			}
		})
	}
}

// TestBudgetBytesBreachAfterCommand: a command that writes past the byte
// cap is found by the walk after it, which the next budget request waits
// for.
func TestBudgetBytesBreachAfterCommand(t *testing.T) {
	c := connectPipe(t, ServerConfig{Root: t.TempDir(), Env: testEnv()})
	if _, err := c.Hello(t.Context(), sandbox.Limits{MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	mustBash(t, c, "head -c 2000000 /dev/zero > blob")
	if m := budgetOf(t, c); m.Violation != "worktree exceeds 1 MB" {
		t.Fatalf("budget: %+v, want the byte breach", m)
	}
}

// TestNothingBeforeHello: the hello must come first (it brings the key);
// a server asked anything else first ends, having run nothing.
func TestNothingBeforeHello(t *testing.T) {
	dir := t.TempDir()
	reqR, reqW := io.Pipe()
	repR, repW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(t.Context(), reqR, repW, ServerConfig{Root: dir, Env: testEnv()})
		_ = repW.Close()
	}()
	c := NewClient(repR, reqW)
	defer func() { _ = c.Close() }()
	if _, err := c.WriteFile(t.Context(), "a.txt", "x"); !errors.Is(err, ErrServerGone) {
		t.Fatalf("write before hello: %v, want ErrServerGone", err)
	}
	if err := <-served; !errors.Is(err, errUnauthenticated) {
		t.Errorf("Serve: %v, want errUnauthenticated", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the write before hello ran: %v", err)
	}
}

// TestBashReportsNoLeftoverAfterKillingAdoptedJobs: a job that left the
// command's group is killed by the subreaping server, and the reply says
// nothing was left.
func TestBashReportsNoLeftoverAfterKillingAdoptedJobs(t *testing.T) {
	c, _ := startProcess(t, []string{"-root", t.TempDir()})
	// The job outlasts mustBash's timeout: had it been waited for, the
	// command would have timed out.
	res := mustBash(t, c, "setsid sleep 600 & echo started")
	if res.Output != "started\n" || res.Leftover != 0 {
		t.Fatalf("reply %+v, want the output and no leftover", res)
	}
}

// TestMeasureOnlyServerRefusesTools: a measuring server measures and does
// nothing else.
func TestMeasureOnlyServerRefusesTools(t *testing.T) {
	dir := t.TempDir()
	c := startPipe(t, ServerConfig{Root: dir, Env: testEnv(), MeasureOnly: true})
	if _, err := c.WriteFile(t.Context(), "a.txt", "x"); !errors.Is(err, ErrBadRequest) {
		t.Errorf("write_file: %v, want a refusal", err)
	}
	if _, err := c.Bash(t.Context(), "touch b", time.Second); !errors.Is(err, ErrBadRequest) {
		t.Errorf("bash: %v, want a refusal", err)
	}
	if m, err := c.Measure(t.Context(), limitsNone); err != nil || m.Entries != 0 {
		t.Errorf("measure: %+v, %v", m, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the tree changed: %v", entries)
	}
}
