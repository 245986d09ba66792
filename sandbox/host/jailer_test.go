package host

import (
	"bufio"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestChildPIDs: what childPIDs lists is what Kill ends with the tool
// server, on every system with a way to list it.
func TestChildPIDs(t *testing.T) {
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), "/bin/sh", "-c", "sleep 60 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(child, syscall.SIGKILL)
	})
	if got := childPIDs(cmd.Process.Pid); !slices.Contains(got, child) {
		t.Errorf("childPIDs(%d) = %v, want %d among them", cmd.Process.Pid, got, child)
	}
}
