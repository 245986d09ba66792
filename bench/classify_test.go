package bench

import (
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

func TestClassifyFailure(t *testing.T) {
	t.Parallel()
	sandboxKind, budgetKind, breach := "sandbox_error", "budget", "worktree exceeds 2048 MB"
	tests := []struct {
		name      string
		facts     caseFacts
		class     string
		evidences string
	}{
		{"pass", caseFacts{Status: transcript.StatusCompleted, Acceptance: AcceptPass}, "", ""},
		{
			"gamed beats everything",
			caseFacts{Status: transcript.StatusTimeout, Acceptance: AcceptGamed, AcceptanceDetail: "acceptance/check.py changed"},
			ClassGamed, "acceptance: acceptance/check.py changed",
		},
		{"staging", caseFacts{BenchError: "git init failed", Acceptance: AcceptSkipped}, ClassSandbox, "bench_error: git init failed"},
		{
			"failure path",
			caseFacts{Status: transcript.StatusModelError, EndError: "unexpected error: boom", Acceptance: AcceptSkipped},
			ClassSandbox, "run_end: model_error: unexpected error: boom",
		},
		{
			"finalize error",
			caseFacts{Status: transcript.StatusCompleted, End: &transcript.RunEnd{FinalizeError: "SandboxError: gone"}, Acceptance: AcceptFail},
			ClassSandbox, "finalize_error: SandboxError: gone",
		},
		{
			"watchdog infra",
			caseFacts{Status: transcript.StatusSandboxError, End: &transcript.RunEnd{Artifacts: &transcript.Artifacts{WatchdogViolationKind: &sandboxKind, WatchdogViolation: &breach}}, Acceptance: AcceptFail},
			ClassSandbox, "watchdog: worktree exceeds",
		},
		{
			"worker filled the disk",
			caseFacts{Status: transcript.StatusBudgetExceeded, FinalMessage: breach, End: &transcript.RunEnd{Artifacts: &transcript.Artifacts{WatchdogViolationKind: &budgetKind}}, Acceptance: AcceptFail},
			ClassModel, "status budget_exceeded",
		},
		{"sandbox error", caseFacts{Status: transcript.StatusSandboxError, FinalMessage: "container gone", End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassSandbox, "container gone"},
		{"export failed", caseFacts{Status: transcript.StatusExportFailed, End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassSandbox, "export_failed"},
		{
			"server",
			caseFacts{Status: transcript.StatusModelError, FinalMessage: "HTTP 503 on x", End: &transcript.RunEnd{ModelFailure: "server"}, Acceptance: AcceptFail},
			ClassServer, "model_failure server: HTTP 503",
		},
		{"request timeout", caseFacts{Status: transcript.StatusModelError, End: &transcript.RunEnd{ModelFailure: "request_timeout"}, Acceptance: AcceptFail}, ClassServer, "request_timeout"},
		{"timeout", caseFacts{Status: transcript.StatusTimeout, End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassTimeout, "status timeout"},
		{"context", caseFacts{Status: transcript.StatusContextExhausted, End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassContext, "context_exhausted"},
		{
			"truncated replies",
			caseFacts{Status: transcript.StatusModelError, FinalMessage: "aborted after 3 consecutive empty_reply failures", LastNudge: transcript.NudgeTruncated, End: &transcript.RunEnd{}, Acceptance: AcceptFail},
			ClassContext, "last nudge: truncated",
		},
		{
			"text tool calls",
			caseFacts{Status: transcript.StatusModelError, FinalMessage: "aborted after 3 consecutive empty_reply failures", LastNudge: transcript.NudgeTextToolCall, End: &transcript.RunEnd{}, Acceptance: AcceptFail},
			ClassFormat, "empty_reply",
		},
		{"malformed args", caseFacts{Status: transcript.StatusModelError, FinalMessage: "aborted after 3 consecutive malformed_args failures", End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassFormat, "malformed_args"},
		{"mixed", caseFacts{Status: transcript.StatusModelError, FinalMessage: "aborted after 6 consecutive tool failures", End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassFormat, "6 consecutive"},
		{"stalled", caseFacts{Status: transcript.StatusStalled, End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassLoop, "stalled"},
		{"stuck", caseFacts{Status: transcript.StatusStuck, End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassLoop, "stuck"},
		{"max turns", caseFacts{Status: transcript.StatusMaxTurns, End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassLoop, "max_turns"},
		{"acceptance could not run", caseFacts{Status: transcript.StatusCompleted, End: &transcript.RunEnd{}, Acceptance: AcceptSkipped, AcceptanceDetail: "image missing"}, ClassSandbox, "image missing"},
		{"the model's work fails", caseFacts{Status: transcript.StatusCompleted, End: &transcript.RunEnd{}, Acceptance: AcceptFail, AcceptanceDetail: "exit 1"}, ClassModel, "acceptance: exit 1"},
		{"verify failed", caseFacts{Status: transcript.StatusVerifyFailed, End: &transcript.RunEnd{}, Acceptance: AcceptFail}, ClassModel, "verify_failed"},
	}
	for _, tt := range tests {
		class, evidence := classifyFailure(tt.facts)
		if class != tt.class || !strings.Contains(evidence, tt.evidences) {
			t.Errorf("%s: %q %q, want %q containing %q", tt.name, class, evidence, tt.class, tt.evidences)
		}
	}
}
