package engine

import (
	"strings"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/transcript"
)

// Payload is the one JSON object `dirtywork run` prints on stdout (E-16,
// E-18). Its keys are the machine contract; docs/machine-contract.md
// describes each.
type Payload struct {
	SchemaVersion         int                        `json:"schema_version"`
	Status                transcript.Status          `json:"status"`
	Worktree              string                     `json:"worktree"`
	Branch                string                     `json:"branch"`
	Transcript            string                     `json:"transcript"`
	Turns                 *int                       `json:"turns"`
	Usage                 any                        `json:"usage"`
	FinalMessage          string                     `json:"final_message"`
	Provider              string                     `json:"provider"`
	RunDir                string                     `json:"run_dir"`
	StuckOn               *transcript.StuckOn        `json:"stuck_on"`
	FilesChanged          []string                   `json:"files_changed"`
	FilesChangedTruncated bool                       `json:"files_changed_truncated"`
	LastToolResult        *transcript.LastToolResult `json:"last_tool_result"`
	LastAssistantText     *string                    `json:"last_assistant_text"`
	Verify                *transcript.VerifyResult   `json:"verify"`
	TrimmedTurns          int                        `json:"trimmed_turns"`
	Timeouts              int                        `json:"timeouts"`
	ContextWindowSource   string                     `json:"context_window_source"`
	BaseCommit            string                     `json:"base_commit"`
	ResumedFrom           *string                    `json:"resumed_from"`

	// The finalize keys are present on the normal path only (E-18), hence
	// pointers with omitempty on the failure paths.
	FinalizeError         *nullableString `json:"finalize_error,omitempty"`
	WatchdogViolation     *nullableString `json:"watchdog_violation,omitempty"`
	WatchdogViolationKind *nullableString `json:"watchdog_violation_kind,omitempty"`
	// ExportStatus appears only when a docker finalize ran.
	ExportStatus *string `json:"export_status,omitempty"`
}

// nullableString is a key that is present with a string or null value.
type nullableString struct{ v *string }

func (n nullableString) MarshalJSON() ([]byte, error) {
	if n.v == nil {
		return []byte("null"), nil
	}
	return marshalNoEscape(*n.v)
}

func present(s *string) *nullableString { return &nullableString{v: s} }

// mapStatus applies E-21: only a completed run is remapped, by what
// finalize found.
func mapStatus(status transcript.Status, fin *sandbox.Finalization, finalizeErr error) transcript.Status {
	if status != transcript.StatusCompleted {
		return status
	}
	if finalizeErr != nil {
		return transcript.StatusExportFailed
	}
	if fin == nil {
		return status
	}
	if fin.WatchdogViolation != nil {
		if fin.WatchdogViolationKind != nil && *fin.WatchdogViolationKind == string(transcript.StatusSandboxError) {
			return transcript.StatusSandboxError
		}
		return transcript.StatusBudgetExceeded
	}
	if strings.HasPrefix(fin.ExportStatus, string(transcript.StatusExportFailed)) {
		return transcript.StatusExportFailed
	}
	return status
}
