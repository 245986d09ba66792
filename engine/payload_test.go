package engine

import (
	"errors"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/transcript"
)

// TestMapStatus ports T-13: only a completed run is remapped by what
// finalize found.
func TestMapStatus(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		status transcript.Status
		fin    *sandbox.Finalization
		err    error
		want   transcript.Status
	}{
		{"plain completed", transcript.StatusCompleted, &sandbox.Finalization{ExportStatus: "ok"}, nil, transcript.StatusCompleted},
		{"finalize raised", transcript.StatusCompleted, nil, errors.New("boom"), transcript.StatusExportFailed},
		{"budget watchdog", transcript.StatusCompleted, &sandbox.Finalization{WatchdogViolation: str("worktree exceeds 1 MB"), WatchdogViolationKind: str("budget_exceeded")}, nil, transcript.StatusBudgetExceeded},
		{"sandbox watchdog", transcript.StatusCompleted, &sandbox.Finalization{WatchdogViolation: str("container died"), WatchdogViolationKind: str("sandbox_error")}, nil, transcript.StatusSandboxError},
		{"export failed", transcript.StatusCompleted, &sandbox.Finalization{ExportStatus: "export_failed: worktree not empty"}, nil, transcript.StatusExportFailed},
		{"budget survives an export failure", transcript.StatusBudgetExceeded, &sandbox.Finalization{ExportStatus: "export_failed: x"}, errors.New("x"), transcript.StatusBudgetExceeded},
		{"other statuses stay", transcript.StatusMaxTurns, &sandbox.Finalization{WatchdogViolation: str("x")}, nil, transcript.StatusMaxTurns},
	}
	for _, tt := range tests {
		if got := mapStatus(tt.status, tt.fin, tt.err); got != tt.want {
			t.Errorf("%s: mapStatus = %s, want %s", tt.name, got, tt.want)
		}
	}
}
