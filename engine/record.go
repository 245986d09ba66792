package engine

import (
	"context"
	"errors"
	"maps"
	"os"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/transcript"
)

// record is a run's run.json.
type record struct{ dir string }

func isoUTC(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000+00:00") }

// startRecord is run.json as the run starts (E-13).
func (r *Runner) startRecord(p *prepared, slug string, lane gitops.Lane) transcript.Record {
	spec := p.spec
	var verifyCommand any
	if spec.VerifyCommand != "" {
		verifyCommand = spec.VerifyCommand
	}
	// The image as given; the container's names and the image's digest
	// are merged in once the container exists.
	var image any
	if spec.Sandbox == "docker" {
		image = spec.Docker.Image
	}
	return transcript.Record{
		"schema_version": transcript.SchemaVersion, "status": "running", "slug": slug,
		"repo": p.repo.Root, "worktree": lane.Worktree, "branch": lane.Branch, "base_commit": lane.BaseCommit,
		"base_ref": p.baseRefName(), "task": spec.Task, "model": spec.Model, "provider": spec.Provider,
		"context_window": p.window, "context_window_source": p.windowSource,
		"branch_from_run": p.fromRun, "feedback": spec.Feedback, "resumed_from": spec.ResumedFrom,
		"verify_command": verifyCommand, "verify_rounds": spec.VerifyRounds, "verify_timeout": spec.VerifyTimeout,
		"container": nil, "volume": nil, "image": image, "image_digest": nil, "image_pinned": false,
		"host_pid": os.Getpid(), "started": isoUTC(r.now()), "sandbox": spec.Sandbox, "allow_commit": spec.AllowCommit,
	}
}

// failure ends a run whose runner never returned (E-18): run.json and, when
// the transcript exists, a failure run_end; the payload carries defaults.
// fin is the docker finalize that ran on the way out, nil when none did:
// its export_status joins run.json and the payload (E-14, E-18).
func (rec *record) failure(p *prepared, slug string, lane gitops.Lane, tw *transcript.Writer, status, msg string,
	fin *sandbox.Finalization,
) *Payload {
	if tw != nil {
		_ = tw.Write(transcript.RunEndFailure{Status: status, Error: msg, ContextWindowSource: p.windowSource})
	}
	fields := transcript.Record{
		"status": status, "error": msg, "trimmed_turns": 0, "timeouts": 0,
		"context_window_source": p.windowSource, "ended": isoUTC(time.Now()),
	}
	var exportStatus *string
	if fin != nil {
		exportStatus = &fin.ExportStatus
		fields["export_status"] = fin.ExportStatus
	}
	_, _ = transcript.MergeRecord(rec.dir, fields)
	transcriptPath := ""
	if tw != nil {
		transcriptPath = tw.Path()
	}
	return &Payload{
		SchemaVersion: transcript.SchemaVersion, Status: status, Worktree: lane.Worktree, Branch: lane.Branch,
		Transcript: transcriptPath, Usage: struct{}{}, FinalMessage: msg, Provider: p.spec.Provider,
		RunDir: rec.dir, FilesChanged: []string{}, ContextWindowSource: p.windowSource,
		BaseCommit: lane.BaseCommit, ResumedFrom: p.spec.ResumedFrom, ExportStatus: exportStatus,
	}
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
	var finalizeError *string
	if finErr != nil {
		s := finalizeErrorText(finErr)
		finalizeError = &s
	}
	if fin != nil {
		a := *fin
		artifacts = &a
	}
	prefixReuse := out.PrefixReuse
	end := transcript.RunEnd{
		Status: status, Turns: out.Turns, DurationS: out.Duration.Seconds(), Usage: out.Usage,
		StuckOn: out.StuckOn, LastToolResult: out.LastToolResult, LastAssistantText: out.LastAssistantText,
		Verify: out.Verify, TrimmedTurns: out.TrimmedTurns, Timeouts: out.Timeouts,
		ContextWindowSource: p.windowSource, Artifacts: artifacts, PrefixReuse: &prefixReuse, Setup: setup,
	}
	if finalizeError != nil {
		end.FinalizeError = *finalizeError
	}
	_ = tw.Write(end)

	filesChanged := []string{}
	truncated := false
	var watchdog, watchdogKind *string
	fields := transcript.Record{
		"status": status, "finalize_error": finalizeError, "stuck_on": out.StuckOn,
		"last_tool_result": out.LastToolResult, "last_assistant_text": out.LastAssistantText,
		"verify": out.Verify, "turns": out.Turns, "trimmed_turns": out.TrimmedTurns, "timeouts": out.Timeouts,
		"context_window_source": p.windowSource, "ended": isoUTC(time.Now()), "usage": out.Usage,
	}
	if fin != nil {
		filesChanged, truncated = fin.FilesChanged, fin.FilesChangedTruncated
		watchdog, watchdogKind = fin.WatchdogViolation, fin.WatchdogViolationKind
		maps.Copy(fields, exportFields(fin))
	} else {
		fields["files_changed"] = []string{}
		fields["files_changed_truncated"] = false
	}
	fields["watchdog_violation"] = watchdog
	fields["watchdog_violation_kind"] = watchdogKind
	if _, err := transcript.MergeRecord(rec.dir, fields); err != nil {
		r.warnf("cannot record the run's end in run.json: %v", err)
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

// exportFields are the run.json fields a finalize (or `runs export`)
// sets from what it found.
func exportFields(fin *sandbox.Finalization) transcript.Record { return fin.RecordFields() }

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
