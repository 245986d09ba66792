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
		{"pass", caseFacts{Status: transcript.StatusCompleted, Acceptance: AcceptancePass}, "", ""},
		{
			"gamed beats everything",
			caseFacts{Status: transcript.StatusTimeout, Acceptance: AcceptanceGamed, AcceptanceDetail: "acceptance/check.py changed"},
			FailureGamed, "acceptance: acceptance/check.py changed",
		},
		{"staging", caseFacts{BenchError: "git init failed", Acceptance: AcceptanceSkipped}, FailureSandbox, "bench_error: git init failed"},
		{
			"failure path",
			caseFacts{Status: transcript.StatusModelError, EndError: "unexpected error: boom", Acceptance: AcceptanceSkipped},
			FailureSandbox, "run_end: model_error: unexpected error: boom",
		},
		{
			"finalize error",
			caseFacts{Status: transcript.StatusCompleted, End: &transcript.RunEnd{FinalizeError: "SandboxError: gone"}, Acceptance: AcceptanceFail},
			FailureSandbox, "finalize_error: SandboxError: gone",
		},
		{
			"watchdog infra",
			caseFacts{Status: transcript.StatusSandboxError, End: &transcript.RunEnd{Artifacts: &transcript.Artifacts{WatchdogViolationKind: &sandboxKind, WatchdogViolation: &breach}}, Acceptance: AcceptanceFail},
			FailureSandbox, "watchdog: worktree exceeds",
		},
		{
			"worker filled the disk",
			caseFacts{Status: transcript.StatusBudgetExceeded, FinalMessage: breach, End: &transcript.RunEnd{Artifacts: &transcript.Artifacts{WatchdogViolationKind: &budgetKind}}, Acceptance: AcceptanceFail},
			FailureModel, "status budget_exceeded",
		},
		{"sandbox error", caseFacts{Status: transcript.StatusSandboxError, FinalMessage: "container gone", End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureSandbox, "container gone"},
		{"export failed", caseFacts{Status: transcript.StatusExportFailed, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureSandbox, "export_failed"},
		{
			"server",
			caseFacts{Status: transcript.StatusModelError, FinalMessage: "HTTP 503 on x", End: &transcript.RunEnd{ModelFailure: "server"}, Acceptance: AcceptanceFail},
			FailureServer, "model_failure server: HTTP 503",
		},
		{"request timeout", caseFacts{Status: transcript.StatusModelError, End: &transcript.RunEnd{ModelFailure: "request_timeout"}, Acceptance: AcceptanceFail}, FailureServer, "request_timeout"},
		{"timeout", caseFacts{Status: transcript.StatusTimeout, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureTimeout, "status timeout"},
		{"context", caseFacts{Status: transcript.StatusContextExhausted, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureContext, "context_exhausted"},
		{
			"truncated replies",
			caseFacts{Status: transcript.StatusModelError, FinalMessage: "aborted after 3 consecutive empty_reply failures", LastNudge: transcript.NudgeTruncated, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail},
			FailureContext, "last nudge: truncated",
		},
		{
			"text tool calls",
			caseFacts{Status: transcript.StatusModelError, FinalMessage: "aborted after 3 consecutive empty_reply failures", LastNudge: transcript.NudgeTextToolCall, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail},
			FailureFormat, "empty_reply",
		},
		{"malformed args", caseFacts{Status: transcript.StatusModelError, FinalMessage: "aborted after 3 consecutive malformed_args failures", End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureFormat, "malformed_args"},
		{"mixed", caseFacts{Status: transcript.StatusModelError, FinalMessage: "aborted after 6 consecutive tool failures", End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureFormat, "6 consecutive"},
		{"stalled", caseFacts{Status: transcript.StatusStalled, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureLoop, "stalled"},
		{"stuck", caseFacts{Status: transcript.StatusStuck, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureLoop, "stuck"},
		{"max turns", caseFacts{Status: transcript.StatusMaxTurns, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureLoop, "max_turns"},
		{"acceptance could not run", caseFacts{Status: transcript.StatusCompleted, End: &transcript.RunEnd{}, Acceptance: AcceptanceSkipped, AcceptanceDetail: "image missing"}, FailureSandbox, "image missing"},
		{"the model's work fails", caseFacts{Status: transcript.StatusCompleted, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail, AcceptanceDetail: "exit 1"}, FailureModel, "acceptance: exit 1"},
		{"verify failed", caseFacts{Status: transcript.StatusVerifyFailed, End: &transcript.RunEnd{}, Acceptance: AcceptanceFail}, FailureModel, "verify_failed"},
	}
	for _, tt := range tests {
		class, evidence := classifyFailure(tt.facts)
		if class != tt.class || !strings.Contains(evidence, tt.evidences) {
			t.Errorf("%s: %q %q, want %q containing %q", tt.name, class, evidence, tt.class, tt.evidences)
		}
	}
}
