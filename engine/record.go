package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/pause"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/transcript"
)

// record is a run's run.json; reserve holds space on its file system
// for the run's end (nil when there was none to take).
type record struct {
	dir     string
	reserve *transcript.Reserve
}

// startRecord is run.json as the run starts (E-13).
func (r *Runner) startRecord(p *prepared, slug string, lane gitops.Lane) transcript.RunStartFields {
	spec := p.spec
	var verifyCommand *string
	if spec.VerifyCommand != "" {
		verifyCommand = &spec.VerifyCommand
	}
	// The image as given; the container's names and the image's digest
	// are merged in once the container exists.
	var image *string
	if spec.Sandbox == "docker" {
		image = &spec.Docker.Image
	}
	return transcript.RunStartFields{
		SchemaVersion: transcript.SchemaVersion, Status: transcript.StatusRunning, Slug: slug,
		Repo: p.repo.Root, Worktree: lane.Worktree, Branch: lane.Branch, BaseCommit: lane.BaseCommit,
		BaseRef: p.baseRefName(), Task: spec.Task, Model: spec.Model, Provider: spec.Provider,
		ContextWindow: p.window, ContextWindowSource: p.windowSource,
		BranchFromRun: p.fromRun, Feedback: spec.Feedback, ResumedFrom: spec.ResumedFrom,
		VerifyCommand: verifyCommand, VerifyRounds: spec.VerifyRounds, VerifyTimeout: spec.VerifyTimeout,
		Image: image, HostPID: os.Getpid(), Started: transcript.FormatTime(r.now()),
		Sandbox: spec.Sandbox, AllowCommit: spec.AllowCommit,
	}
}

// failure ends a run whose runner never returned (E-18): run.json and, when
// the transcript exists, a failure run_end; the payload carries defaults.
// fin is the docker finalize that ran on the way out, nil when none did:
// its export_status joins run.json and the payload (E-14, E-18).
func (rec *record) failure(p *prepared, slug string, lane gitops.Lane, tw *transcript.Writer, status transcript.Status, msg string,
	fin *sandbox.Finalization,
) *Payload {
	var lost []string
	rec.reserve.Release() // the end fits where the transcript filled the disk
	if tw != nil {
		_ = tw.Write(transcript.RunEndFailure{Status: status, Error: msg, ContextWindowSource: p.windowSource})
		lost = addLost(lost, "transcript", tw.Err())
	}
	fields := transcript.FailureFields{
		Status: status, Error: msg, ContextWindowSource: p.windowSource, Ended: transcript.FormatTime(time.Now()),
	}
	var exportStatus *string
	if fin != nil {
		exportStatus = &fin.ExportStatus
		fields.ExportStatus = exportStatus
	}
	if len(lost) > 0 {
		s := describeErrors(nil, lost)
		fields.FinalizeError = &s
	}
	pause.At(pause.RunJSON)
	if _, err := transcript.Patch(rec.dir, fields); err != nil {
		lost = addLost(lost, "run.json", err)
	}
	transcriptPath := ""
	if tw != nil {
		transcriptPath = tw.Path()
	}
	payload := &Payload{
		SchemaVersion: transcript.SchemaVersion, Status: status, Worktree: lane.Worktree, Branch: lane.Branch,
		Transcript: transcriptPath, Usage: struct{}{}, FinalMessage: msg, Provider: p.spec.Provider,
		RunDir: rec.dir, FilesChanged: []string{}, ContextWindowSource: p.windowSource,
		BaseCommit: lane.BaseCommit, ResumedFrom: p.spec.ResumedFrom, ExportStatus: exportStatus,
	}
	if len(lost) > 0 {
		// finalize_error is absent on a failure path, unless evidence was
		// lost: then it says what.
		p.stderrEvidence(lost)
		s := describeErrors(nil, lost)
		payload.FinalizeError = present(&s)
	}
	return payload
}

// finish records a run the loop ended: the status mapping of E-21,
// run_end, run.json's end fields, and the payload. setup is the docker
// --setup result, nil when none ran.
func (rec *record) finish(r *Runner, p *prepared, lane gitops.Lane, tw *transcript.Writer,
	out Outcome, fin *sandbox.Finalization, finErr error, setup *transcript.Setup,
) *Payload {
	status := mapStatus(out.Status, fin, finErr)
	if status != out.Status && fin != nil && fin.WatchdogViolation != nil {
		out.FinalMessage = *fin.WatchdogViolation // the budget reason, as for a breach seen by a tool
	}
	var artifacts *transcript.Artifacts
	// What the run could not record so far (a full disk) is reported with
	// the finalize error: in run_end, run.json, the result and on stderr.
	lost := addLost(nil, "transcript", tw.Err())
	finalizeError := finalizeErrorOf(finErr, lost)
	if fin != nil {
		a := *fin
		artifacts = &a
	}
	prefixReuse := out.PrefixReuse
	end := transcript.RunEnd{
		Status: status, Turns: out.Turns, DurationS: transcript.Float(out.Duration.Seconds()), Usage: out.Usage,
		StuckOn: out.StuckOn, LastToolResult: out.LastToolResult, LastAssistantText: out.LastAssistantText,
		Verify: out.Verify, TrimmedTurns: out.TrimmedTurns, Timeouts: out.Timeouts,
		ContextWindowSource: p.windowSource, Artifacts: artifacts, PrefixReuse: &prefixReuse, Setup: setup,
		ModelFailure: out.ModelFailure,
	}
	if finalizeError != nil {
		end.FinalizeError = *finalizeError
	}
	rec.reserve.Release() // the end fits where the transcript filled the disk
	_ = tw.Write(end)
	if len(lost) == 0 {
		if lost = addLost(lost, "transcript", tw.Err()); len(lost) > 0 {
			finalizeError = finalizeErrorOf(finErr, lost)
		}
	}

	filesChanged := []string{}
	truncated := false
	var watchdog, watchdogKind *string
	var files any = transcript.NoExportFields{FilesChanged: []string{}}
	if fin != nil {
		filesChanged, truncated = fin.FilesChanged, fin.FilesChangedTruncated
		watchdog, watchdogKind = fin.WatchdogViolation, fin.WatchdogViolationKind
		files = transcript.ExportFieldsOf(fin)
	}
	fields := transcript.EndFields{
		Status: status, FinalizeError: finalizeError, StuckOn: out.StuckOn,
		LastToolResult: out.LastToolResult, LastAssistantText: out.LastAssistantText,
		Verify: out.Verify, Turns: out.Turns, TrimmedTurns: out.TrimmedTurns, Timeouts: out.Timeouts,
		ContextWindowSource: p.windowSource, Ended: transcript.FormatTime(time.Now()), Usage: out.Usage,
		WatchdogViolation: watchdog, WatchdogViolationKind: watchdogKind,
	}
	pause.At(pause.RunJSON)
	if _, err := transcript.Patch(rec.dir, fields, files); err != nil {
		lost = addLost(lost, "run.json", err)
		finalizeError = finalizeErrorOf(finErr, lost)
	}
	if len(lost) > 0 {
		p.stderrEvidence(lost)
	}

	turns := out.Turns
	return &Payload{
		SchemaVersion: transcript.SchemaVersion, Status: status, Worktree: lane.Worktree, Branch: lane.Branch,
		Transcript: tw.Path(), Turns: &turns, Usage: out.Usage, FinalMessage: out.FinalMessage,
		Provider: p.spec.Provider, RunDir: rec.dir, StuckOn: out.StuckOn,
		FilesChanged: nonNil(filesChanged), FilesChangedTruncated: truncated,
		LastToolResult: out.LastToolResult, LastAssistantText: out.LastAssistantText, Verify: out.Verify,
		TrimmedTurns: out.TrimmedTurns, Timeouts: out.Timeouts, ContextWindowSource: p.windowSource,
		BaseCommit: lane.BaseCommit, ResumedFrom: p.spec.ResumedFrom,
		FinalizeError: present(finalizeError), WatchdogViolation: present(watchdog),
		WatchdogViolationKind: present(watchdogKind),
	}
}

// EvidenceError says which of a run's records could not be written (a
// full disk, say). The run itself went on: what it did is in its worktree,
// but the transcript, run.json or the kept result lack what is listed.
type EvidenceError struct {
	// Lost are "<record>: <error>" entries, in the order they failed.
	Lost []string
}

func (e *EvidenceError) Error() string { return "evidence lost: " + strings.Join(e.Lost, "; ") }

// addLost appends what failed writing record to lost; a nil err adds
// nothing.
func addLost(lost []string, record string, err error) []string {
	if err == nil {
		return lost
	}
	return append(lost, record+": "+err.Error())
}

// describeErrors renders finalize_error: "<ErrorType>: <msg>" of the
// finalize error and of the evidence lost ("EvidenceError: evidence lost:
// <record>: <error>; ..."), joined by "; ".
func describeErrors(finErr error, lost []string) string {
	var parts []string
	if finErr != nil {
		parts = append(parts, finalizeErrorText(finErr))
	}
	if len(lost) > 0 {
		parts = append(parts, "EvidenceError: "+(&EvidenceError{Lost: lost}).Error())
	}
	return strings.Join(parts, "; ")
}

// finalizeErrorOf is finalize_error's value: nil when nothing failed.
func finalizeErrorOf(finErr error, lost []string) *string {
	if finErr == nil && len(lost) == 0 {
		return nil
	}
	s := describeErrors(finErr, lost)
	return &s
}

// stderrEvidence tells the operator what the run could not record.
func (p *prepared) stderrEvidence(lost []string) {
	if p.stderr != nil {
		fmt.Fprintf(p.stderr, "warning: %s\n", (&EvidenceError{Lost: lost}).Error())
	}
}

// evidenceLost reports lost on stderr and adds it to the result's
// finalize_error.
func (r *Runner) evidenceLost(payload *Payload, lost []string) {
	fmt.Fprintf(r.Stderr, "warning: %s\n", (&EvidenceError{Lost: lost}).Error())
	var prev *string
	if payload.FinalizeError != nil {
		prev = payload.FinalizeError.v
	}
	s := describeErrors(nil, lost)
	if prev != nil && *prev != "" {
		s = *prev + "; " + s
	}
	payload.FinalizeError = present(&s)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// finalizeErrorText is run.json's finalize_error for err: the contract's
// "<ErrorType>: <msg>", where the type is one of a few fixed words (the
// original's exception class names were no more specific) and never a Go
// type such as *fmt.wrapError.
func finalizeErrorText(err error) string {
	kind := "FinalizeError"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind = "TimeoutError"
	case sandbox.IsSandbox(err):
		kind = "SandboxError"
	}
	return kind + ": " + err.Error()
}

// sealBaseline records the seal's baseline in run.json, so that the tree
// of a run that dies before its finalize can be sealed as the finalize
// would have (QuarantineCrashedTree). A record that cannot be written
// only costs that.
func (r *record) sealBaseline(since time.Time) {
	_, _ = transcript.Patch(r.dir, transcript.SealBaselineFields{SealBaseline: since.UTC().Format(time.RFC3339Nano)})
}
