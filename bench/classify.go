package bench

import (
	"fmt"
	"regexp"

	"github.com/dirtywork/dirtywork/transcript"
)

// Failure classes: why a case did not pass, read from its run's
// transcript and record and its acceptance, never guessed. Server and
// sandbox failures are not the model's, and a summary keeps them out of
// its score.
const (
	// ClassFormat: the model's replies broke the tool protocol (calls in
	// the text, malformed arguments, unknown tools, empty replies).
	ClassFormat = "format"
	// ClassContext: the conversation outgrew the context window
	// (context_exhausted, a server's overflow refusal, truncated replies).
	ClassContext = "context"
	// ClassLoop: the model went round in circles (stalled, stuck,
	// max_turns).
	ClassLoop = "loop"
	// ClassTimeout: the run reached its wall-clock limit.
	ClassTimeout = "timeout"
	// ClassServer: the model server failed (unreachable, HTTP errors,
	// replies not in the protocol's shape, a request outlasting its own
	// deadline).
	ClassServer = "server"
	// ClassSandbox: the harness failed (sandbox, export, watchdog,
	// staging, an acceptance that could not run).
	ClassSandbox = "sandbox"
	// ClassGamed: the worker changed what judges it.
	ClassGamed = "gamed"
	// ClassModel: the run ended as the model chose and its work failed
	// the acceptance.
	ClassModel = "model"
)

// Acceptance outcomes of a case (B-7, with a hanging command a fail).
const (
	AcceptPass    = "pass"
	AcceptFail    = "fail"
	AcceptGamed   = "gamed"
	AcceptSkipped = "skipped"
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

// abortKind reads the failure tracker's closing message.
var abortKind = regexp.MustCompile(`^aborted after \d+ consecutive (\S+) (?:tool )?failures$`)

// classifyFailure names why a case did not pass and the line of evidence
// that decided it; a passing case has no class. The first rule that
// applies decides, in this order: what the acceptance says of gaming,
// what kept the case from running, the harness, the server, then the
// run's own ending.
func classifyFailure(f caseFacts) (class, evidence string) {
	switch {
	case f.Acceptance == AcceptPass:
		return "", ""
	case f.Acceptance == AcceptGamed:
		return ClassGamed, "acceptance: " + f.AcceptanceDetail
	case f.BenchError != "":
		return ClassSandbox, "bench_error: " + f.BenchError
	case f.EndError != "":
		return ClassSandbox, fmt.Sprintf("run_end: %s: %s", f.Status, f.EndError)
	}
	if f.End != nil {
		if f.End.FinalizeError != "" {
			return ClassSandbox, "run_end: finalize_error: " + f.End.FinalizeError
		}
		if a := f.End.Artifacts; a != nil && a.WatchdogViolationKind != nil && *a.WatchdogViolationKind == "sandbox_error" {
			return ClassSandbox, "run_end: watchdog: " + deref(a.WatchdogViolation)
		}
	}
	end := "run_end: status " + string(f.Status)
	if f.FinalMessage != "" {
		end += ": " + f.FinalMessage
	}
	switch f.Status {
	case transcript.StatusSandboxError, transcript.StatusExportFailed, transcript.StatusInterrupted:
		return ClassSandbox, end
	case transcript.StatusTimeout:
		return ClassTimeout, end
	case transcript.StatusContextExhausted:
		return ClassContext, end
	case transcript.StatusStalled, transcript.StatusStuck, transcript.StatusMaxTurns:
		return ClassLoop, end
	case transcript.StatusModelError:
		if f.End != nil && f.End.ModelFailure != "" {
			return ClassServer, fmt.Sprintf("run_end: model_failure %s: %s", f.End.ModelFailure, f.FinalMessage)
		}
		if m := abortKind.FindStringSubmatch(f.FinalMessage); m != nil {
			if m[1] == "empty_reply" && f.LastNudge == transcript.NudgeTruncated {
				return ClassContext, end + " (last nudge: truncated)"
			}
			return ClassFormat, end
		}
		// A model error the loop did not name (an unexpected error).
		return ClassSandbox, end
	}
	if f.Acceptance == AcceptSkipped {
		return ClassSandbox, "acceptance skipped: " + f.AcceptanceDetail
	}
	// completed, verify_failed, budget_exceeded: the model's own ending.
	detail := f.AcceptanceDetail
	if detail == "" {
		detail = f.Acceptance
	}
	return ClassModel, fmt.Sprintf("%s; acceptance: %s", end, detail)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
