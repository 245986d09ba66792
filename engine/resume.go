package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/transcript"
)

// MaxFeedbackChars bounds a resume's reviewer feedback (RE-3).
const MaxFeedbackChars = 64000

// Task markers of a resumed run (RE-7): the prior task is cut at the first
// of them, so resuming a resumed run does not stack instructions.
const (
	resumedMarker  = "\n\n--- RESUMED RUN ---\n"
	feedbackMarker = "\n\n--- RESUMED RUN: REVIEW FEEDBACK ---\n"
)

// ResumeRequest is a `dirtywork resume` as the command line gives it.
type ResumeRequest struct {
	// Target is a run slug, or a run directory when it contains a path
	// separator (RE-1).
	Target string
	// Run, when set, is the run Target names, already found in a store
	// (runs.Store.Find); otherwise Target is found in the environment's
	// runs root.
	Run *runs.Run
	// Feedback is the reviewer's text (--feedback), when HasFeedback.
	Feedback    string
	HasFeedback bool
	// FeedbackFile is --feedback-file, "" when not given.
	FeedbackFile string
	// Spec holds what the flags say for everything a resume does not carry
	// over from the prior run (limits, model server, docker resources).
	// Model, Image and Provider count only when given.
	Spec                                  Spec
	ModelGiven, ImageGiven, ProviderGiven bool
	// Given says which of the settings a resume inherits the command line
	// gave: those are Spec's, the others the resumed run's.
	Given ResumeOverrides
}

// ResumeOverrides are the inherited settings the command line gave a
// resume (RE-5 with 0.9.1's precedence: the flag, then what the resumed
// run recorded, then the built-in default).
type ResumeOverrides struct {
	AllowCommit, Verify, VerifyRounds, VerifyTimeout bool
}

// resumePlan is what a resume carries into execute.
type resumePlan struct {
	prior *runs.PriorRun
	// base is the prior run's base commit: the new run's too.
	base string
	// slugTask is the prior task without markers: the new slug's words.
	slugTask string
	// priorLive keeps the prior run alive while it is resumed: its
	// worktree is in use, so nothing (another resume, a snapshot, a
	// clean, a reconcile) may act on it meanwhile.
	priorLive *transcript.LivenessLock
	// resumedBy is what the prior's run.json held under resumed_by
	// before (nil: nothing), to put back if the new run is refused.
	resumedBy *string
}

// Resume continues an ended run in its worktree with a new run (RE-*): the
// prior run's record and worktree are checked, the new task is built from
// its task, status and transcript tail (and the feedback), and the run
// goes through preflight and execute like any other, working in the prior
// worktree on the prior branch. Refusals are *PreflightError (exit 2)
// with nothing created and nothing of the prior run changed.
func (r *Runner) Resume(ctx context.Context, req ResumeRequest) (*Payload, error) {
	p, err := r.prepareResume(ctx, req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.resume.priorLive.Release() }()
	return r.execute(ctx, p)
}

func (r *Runner) prepareResume(ctx context.Context, req ResumeRequest) (*prepared, error) {
	run := req.Run
	if run == nil {
		store, err := runs.OpenDefault()
		if err != nil {
			return nil, refuse("", "%v", err)
		}
		if run, err = store.Find(req.Target); err != nil {
			return nil, err
		}
	}
	prior, err := runs.ReadPrior(run)
	if err != nil {
		return nil, err
	}
	dir := prior.Dir
	guarded, err := runs.GuardPriorRun(ctx, dir, prior.Record, runs.UseResume)
	if err != nil {
		return nil, err
	}
	if req.ProviderGiven && req.Spec.Provider != prior.Provider {
		return nil, refuse("leave --provider out to keep the run's own",
			"run '%s' used the %s provider; a resume cannot switch to %s", prior.Slug, prior.Provider, req.Spec.Provider)
	}
	if req.HasFeedback && req.FeedbackFile != "" {
		return nil, refuse("", "give --feedback or --feedback-file, not both")
	}
	feedback, hasFeedback := req.Feedback, req.HasFeedback
	if req.FeedbackFile != "" {
		data, err := os.ReadFile(req.FeedbackFile)
		if err != nil {
			return nil, refuse("", "cannot read the feedback file: %v", err)
		}
		if !utf8.Valid(data) {
			return nil, refuse("", "the feedback file %s is not UTF-8 text", req.FeedbackFile)
		}
		feedback, hasFeedback = string(data), true
	}
	if hasFeedback && strings.TrimSpace(feedback) == "" {
		return nil, refuse("", "the feedback is empty")
	}
	if n := utf8.RuneCountInString(feedback); n > MaxFeedbackChars {
		return nil, refuse("put the details in a file in the repository and refer to it",
			"the feedback is %d characters; at most %d are allowed", n, MaxFeedbackChars)
	}
	if prior.Status == transcript.StatusCompleted && !hasFeedback {
		return nil, refuse("give --feedback (or --feedback-file) saying what to change",
			"run '%s' completed; resuming it needs reviewer feedback", prior.Slug)
	}
	if _, err := gitops.New().Run(ctx, gitops.Call{
		Dir: guarded.Repo.Root, Args: []string{"cat-file", "-e", prior.BaseCommit + "^{commit}"},
	}); err != nil {
		return nil, refuse("", "run '%s': its base commit %s is not a commit of %s", prior.Slug, prior.BaseCommit, guarded.Repo.Root)
	}

	spec := resumeSpec(req, prior)
	var fb *string
	if hasFeedback {
		fb = &feedback
	}
	spec.Feedback = fb
	spec.ResumedFrom = &prior.Slug
	tail := transcriptTail(filepath.Join(dir, transcript.TranscriptName), resumeTailChars)
	spec.Task = ResumeTask(prior.Task, prior.Status, prior.Turns, fb, tail)

	p, err := r.preflight(ctx, spec)
	var pe *PreflightError
	if errors.As(err, &pe) && spec.AllowCommit && spec.Sandbox == "docker" && strings.HasPrefix(pe.Msg, "--allow-commit") {
		pe.Hint = fmt.Sprintf("run '%s' is a docker run, and a resume keeps its sandbox: leave --allow-commit out", prior.Slug)
	}
	if errors.As(err, &pe) && strings.Contains(pe.Hint, hostModeHint) {
		// The sandbox mode is the resumed run's: host mode is no way out.
		hint := strings.TrimRight(strings.ReplaceAll(pe.Hint, hostModeHint, ""), " ,;")
		hint = strings.TrimRight(strings.TrimSuffix(hint, " or"), " ,;")
		pe.Hint = hint + " (a docker run is resumed in the docker sandbox)"
	}
	if err != nil {
		return nil, err
	}
	if p.repo.CommonDir != guarded.Repo.CommonDir {
		return nil, refuse("", "run '%s': its repository moved (%s is now another repository)", prior.Slug, spec.Repo)
	}
	live, err := transcript.AcquireLiveness(dir)
	if err != nil {
		if errors.Is(err, transcript.ErrRunAlive) {
			return nil, refuse("wait for it to end", "run '%s' is being resumed or used by another process", prior.Slug)
		}
		return nil, refuse("", "%v", err)
	}
	p.resume = &resumePlan{prior: guarded, base: prior.BaseCommit, slugTask: cutTask(prior.Task), priorLive: live}
	return p, nil
}

// resumeSpec is the new run's Spec (RE-5): repository, worktree, branch,
// base, sandbox mode and provider carried over; model, image, the commit
// rule and the verify settings too unless given (a setting the resumed run
// did not record keeps req.Spec's value, the built-in default);
// everything else as the flags say.
func resumeSpec(req ResumeRequest, prior *runs.Prior) Spec {
	s := req.Spec
	s.Repo, s.Sandbox, s.Provider = prior.Repo, prior.Sandbox, prior.Provider
	s.BranchFrom = ""
	if !req.ModelGiven {
		s.Model = prior.Model
	}
	if !req.ImageGiven && prior.Image != "" {
		s.Docker.Image = prior.Image
	}
	if !req.Given.AllowCommit {
		s.AllowCommit = prior.AllowCommit
	}
	if !req.Given.Verify {
		s.VerifyCommand = prior.VerifyCommand
	}
	if !req.Given.VerifyRounds && prior.VerifyRounds != nil {
		s.VerifyRounds = *prior.VerifyRounds
	}
	if !req.Given.VerifyTimeout && prior.VerifyTimeout != nil {
		s.VerifyTimeout = *prior.VerifyTimeout
	}
	return s
}

// cutTask is the prior task before the first resume marker.
func cutTask(task string) string {
	cut := len(task)
	for _, m := range []string{resumedMarker, feedbackMarker} {
		if i := strings.Index(task, m); i >= 0 && i < cut {
			cut = i
		}
	}
	return task[:cut]
}

// ResumeTask is the task a resumed run is given (RE-7): the prior task
// (cut before any earlier resume marker), the marker for this shape, what
// became of the prior run, the instructions (with the reviewer's feedback
// verbatim when there is some), the newest lines of the prior transcript,
// and the closing line.
func ResumeTask(priorTask string, status transcript.Status, turns *int, feedback *string, tail string) string {
	var b strings.Builder
	b.WriteString(cutTask(priorTask))
	n := "unknown"
	if turns != nil {
		n = fmt.Sprint(*turns)
	}
	statusLine := fmt.Sprintf("The previous run on this task ended with status '%s' after %s turns.", status, n)
	if feedback == nil {
		b.WriteString(resumedMarker)
		b.WriteString(statusLine + "\n")
		b.WriteString("Its work is in the worktree as uncommitted changes. Inspect it with `git status` and " +
			"`git diff` and continue from where it stopped; do not start over.\n")
	} else {
		b.WriteString(feedbackMarker)
		b.WriteString(statusLine + "\n")
		b.WriteString("A reviewer looked at its work and wrote:\n\n")
		b.WriteString(*feedback)
		if !strings.HasSuffix(*feedback, "\n") {
			b.WriteString("\n")
		}
		b.WriteString("\nIts work is in the worktree as uncommitted changes. Inspect it with `git status` and " +
			"`git diff`, then apply only what the feedback asks for.\n")
	}
	if tail != "" {
		b.WriteString("\nThe end of the previous run:\n")
		b.WriteString(tail)
		if !strings.HasSuffix(tail, "\n") {
			b.WriteString("\n")
		}
	}
	if feedback == nil {
		b.WriteString("\nWhen the task is done, call finish(summary=...).")
	} else {
		b.WriteString("\nWhen the feedback is addressed, call finish(summary=...).")
	}
	return b.String()
}

// resumeTailChars bounds the transcript tail of a resumed task (RE-7).
const resumeTailChars = 12000

// transcriptTail renders the newest lines of a transcript that fit in max
// chars, oldest first: assistant texts (≤1000 chars, with the tools they
// called), tool results (≤500 chars), nudges and run_end statuses; other
// events are skipped. No transcript gives "".
func transcriptTail(path string, max int) string {
	lines, _, err := transcript.ReadFile(path)
	if err != nil && len(lines) == 0 {
		return ""
	}
	var rendered []string
	for _, l := range lines {
		ev, err := l.Decode()
		if err != nil {
			continue
		}
		switch e := ev.(type) {
		case transcript.Assistant:
			s := "assistant: " + capRunes(e.Text, 1000)
			if len(e.ToolCalls) > 0 {
				names := make([]string, len(e.ToolCalls))
				for i, c := range e.ToolCalls {
					names[i] = c.Name
				}
				s += " [tools: " + strings.Join(names, ",") + "]"
			}
			rendered = append(rendered, s)
		case transcript.ToolResult:
			rendered = append(rendered, "tool_result "+e.Tool+": "+capRunes(e.Result, 500))
		case transcript.Nudge:
			rendered = append(rendered, "nudge: "+e.Kind)
		case transcript.RunEnd:
			rendered = append(rendered, "run_end: "+string(e.Status))
		case transcript.RunEndFailure:
			rendered = append(rendered, "run_end: "+string(e.Status))
		}
	}
	total, first := 0, len(rendered)
	for i := len(rendered) - 1; i >= 0; i-- {
		n := utf8.RuneCountInString(rendered[i]) + 1 // its newline
		if total+n > max {
			break
		}
		total += n
		first = i
	}
	if first == len(rendered) {
		return ""
	}
	return strings.Join(rendered[first:], "\n") + "\n"
}

// capRunes cuts s to at most n runes.
func capRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
