package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/host"
)

// TestDoctorReportsSeatbelt: where host mode is confined by Seatbelt
// (macOS), doctor reports the layer with the sandbox-exec it found, or
// fails naming the missing one and the fix.
func TestDoctorReportsSeatbelt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "sandbox-exec")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := hostSandboxCheck(host.SeatbeltReport(exe))
	if c.Status != checkOK || c.Detail != "seatbelt ("+exe+")" || c.Problem != "" {
		t.Errorf("found: %+v", c)
	}
	c = hostSandboxCheck(host.SeatbeltReport(filepath.Join(dir, "missing")))
	if c.Status != checkFail || !strings.HasPrefix(c.Problem, "seatbelt: no sandbox-exec at ") ||
		!strings.Contains(c.Fix, "/usr/bin/sandbox-exec") {
		t.Errorf("missing: %+v", c)
	}
}
