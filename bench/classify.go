package bench

import (
	"fmt"

	"github.com/dirtywork/dirtywork/transcript"
)

// caseFacts is what classifyFailure reads: the run's end as its
// transcript and result give it, and the acceptance.
type caseFacts struct {
	// BenchError is set when the case never got a run (staging, the
	// run's refusal).
	BenchError string
	// Status and FinalMessage are the run's result.
	Status       transcript.Status
	FinalMessage string
	// End is the transcript's run_end (nil when the run ended on a
	// failure path, or the transcript has none); EndError is the
	// failure path's error.
	End      *transcript.RunEnd
	EndError string
	// LastNudge is the kind of the transcript's last nudge, "" if none.
	LastNudge string
	// Acceptance is the outcome, AcceptanceDetail what decided it.
	Acceptance, AcceptanceDetail string
}

// classifyFailure names why a case did not pass and the line of evidence
// that decided it; a passing case has no class. The first rule that
// applies decides, in this order: what the acceptance says of gaming,
// what kept the case from running, the harness, the server, then the
// run's own ending.
func classifyFailure(f caseFacts) (class, evidence string) {
	switch {
	case f.Acceptance == AcceptancePass:
		return "", ""
	case f.Acceptance == AcceptanceGamed:
		return FailureGamed, "acceptance: " + f.AcceptanceDetail
	case f.BenchError != "":
		return FailureSandbox, "bench_error: " + f.BenchError
	case f.EndError != "":
		return FailureSandbox, fmt.Sprintf("run_end: %s: %s", f.Status, f.EndError)
	}
	if f.End != nil {
		if f.End.FinalizeError != "" {
			return FailureSandbox, "run_end: finalize_error: " + f.End.FinalizeError
		}
		if a := f.End.Artifacts; a != nil && a.WatchdogViolationKind != nil && *a.WatchdogViolationKind == "sandbox_error" {
			return FailureSandbox, "run_end: watchdog: " + deref(a.WatchdogViolation)
		}
	}
	end := "run_end: status " + string(f.Status)
	if f.FinalMessage != "" {
		end += ": " + f.FinalMessage
	}
	switch f.Status {
	case transcript.StatusSandboxError, transcript.StatusExportFailed, transcript.StatusInterrupted:
		return FailureSandbox, end
	case transcript.StatusTimeout:
		return FailureTimeout, end
	case transcript.StatusContextExhausted:
		return FailureContext, end
	case transcript.StatusStalled, transcript.StatusStuck, transcript.StatusMaxTurns:
		return FailureLoop, end
	case transcript.StatusModelError:
		if f.End != nil && f.End.ModelFailure != "" {
			return FailureServer, fmt.Sprintf("run_end: model_failure %s: %s", f.End.ModelFailure, f.FinalMessage)
		}
		if m := abortMessage.FindStringSubmatch(f.FinalMessage); m != nil {
			if m[1] == "empty_reply" && f.LastNudge == transcript.NudgeTruncated {
				return FailureContext, end + " (last nudge: truncated)"
			}
			return FailureFormat, end
		}
		// A model error the loop did not name (an unexpected error).
		return FailureSandbox, end
	}
	if f.Acceptance == AcceptanceSkipped {
		return FailureSandbox, "acceptance skipped: " + f.AcceptanceDetail
	}
	// completed, verify_failed, budget_exceeded: the model's own ending.
	detail := f.AcceptanceDetail
	if detail == "" {
		detail = f.Acceptance
	}
	return FailureModel, fmt.Sprintf("%s; acceptance: %s", end, detail)
}
