package engine

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// runs wait on a run dirtywork 0.9.1 started (no liveness lock) waits for
// its recorded process, not for a lock that never was.
func TestWaitRunWaitsForARunOf091(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "legacy")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "dirtywork")
	if err := os.WriteFile(script, []byte("read line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "sh", script, "run", "a task")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	started := time.Now().UTC().Format(time.RFC3339Nano)
	if err := transcript.WriteRecord(dir, transcript.Record{"status": "running", "host_pid": cmd.Process.Pid, "started": started}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	if err := WaitRun(ctx, dir); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("while its process runs: %v, want the wait to go on", err)
	}
	_ = in.Close() // the script reads EOF and ends
	_ = cmd.Wait()
	ctx, cancel = context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := WaitRun(ctx, dir); err != nil {
		t.Fatalf("after its process ended: %v", err)
	}
}
