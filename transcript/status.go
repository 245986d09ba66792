package transcript

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status is a run's status as run.json, run_end and the stdout object
// record it: the machine contract's final statuses, and running.
type Status string

// The statuses a run can have. Running is the only one a live run has; a
// run recorded as running whose process is gone crashed.
const (
	StatusRunning          Status = "running"
	StatusCompleted        Status = "completed"
	StatusMaxTurns         Status = "max_turns"
	StatusTimeout          Status = "timeout"
	StatusContextExhausted Status = "context_exhausted"
	StatusModelError       Status = "model_error"
	StatusInterrupted      Status = "interrupted"
	StatusStalled          Status = "stalled"
	StatusStuck            Status = "stuck"
	StatusVerifyFailed     Status = "verify_failed"
	StatusBudgetExceeded   Status = "budget_exceeded"
	StatusSandboxError     Status = "sandbox_error"
	StatusExportFailed     Status = "export_failed"
)

// Verdict is a reviewer's judgement of a run.
type Verdict string

// The verdicts a reviewer records.
const (
	VerdictAccept  Verdict = "accept"
	VerdictReject  Verdict = "reject"
	VerdictCleanup Verdict = "cleanup"
)

// ParseVerdict checks a verdict given on a command line.
func ParseVerdict(s string) (Verdict, error) {
	switch v := Verdict(s); v {
	case VerdictAccept, VerdictReject, VerdictCleanup:
		return v, nil
	}
	return "", fmt.Errorf("invalid verdict %q (want accept, reject or cleanup)", s)
}

// recordTimeLayout is how run.json records a moment: UTC, microseconds,
// an explicit offset (the original's isoformat()).
const recordTimeLayout = "2006-01-02T15:04:05.000000+00:00"

// FormatTime is t as run.json records it.
func FormatTime(t time.Time) string { return t.UTC().Format(recordTimeLayout) }

// recordTimeLayouts are the forms a run.json moment is read in: ours,
// RFC 3339 from other writers, and the original's naive local forms
// (read as UTC).
var recordTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// ParseTime reads a moment run.json recorded, in any form a writer of it
// used.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("no time recorded")
	}
	for _, layout := range recordTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time run.json records", s)
}
