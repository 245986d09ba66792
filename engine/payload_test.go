package engine

import (
	"errors"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox"
)

// TestMapStatus ports T-13: only a completed run is remapped by what
// finalize found.
func TestMapStatus(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		status string
		fin    *sandbox.Finalization
		err    error
		want   string
	}{
		{"plain completed", StatusCompleted, &sandbox.Finalization{ExportStatus: "ok"}, nil, StatusCompleted},
		{"finalize raised", StatusCompleted, nil, errors.New("boom"), StatusExportFailed},
		{"budget watchdog", StatusCompleted, &sandbox.Finalization{WatchdogViolation: str("worktree exceeds 1 MB"), WatchdogViolationKind: str("budget_exceeded")}, nil, StatusBudgetExceeded},
		{"sandbox watchdog", StatusCompleted, &sandbox.Finalization{WatchdogViolation: str("container died"), WatchdogViolationKind: str("sandbox_error")}, nil, StatusSandboxError},
		{"export failed", StatusCompleted, &sandbox.Finalization{ExportStatus: "export_failed: worktree not empty"}, nil, StatusExportFailed},
		{"budget survives an export failure", StatusBudgetExceeded, &sandbox.Finalization{ExportStatus: "export_failed: x"}, errors.New("x"), StatusBudgetExceeded},
		{"other statuses stay", StatusMaxTurns, &sandbox.Finalization{WatchdogViolation: str("x")}, nil, StatusMaxTurns},
	}
	for _, tt := range tests {
		if got := mapStatus(tt.status, tt.fin, tt.err); got != tt.want {
			t.Errorf("%s: mapStatus = %s, want %s", tt.name, got, tt.want)
		}
	}
}
