// Package backend is what mission control needs from the rest of
// dirtywork, as two small interfaces: a Store over the runs root (list,
// watch, review, verdicts, accept, merge, clean, stop) and a Launcher
// that starts runs detached from the TUI. The command wires the real
// implementations in; tests hand the TUI a fake. Nothing here does I/O:
// the TUI calls these only from inside a tea.Cmd.
package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// Run is one run as the runs root records it: its run.json, typed, and
// what the TUI knows of it besides. A key added to run.json is here as
// soon as transcript.RunRecord has it. A Run is about a kilobyte, so its
// methods take a pointer: the runs list calls them on every run.
type Run struct {
	// RunRecord is run.json as the runs store read it (the zero record
	// when Problem is set). Its Slug is the run dir's name when the file
	// names none.
	transcript.RunRecord
	// RunDir is the run's directory.
	RunDir string
	// Transcript is the path of the run's transcript.jsonl.
	Transcript string
	// Alive reports whether the run's process holds its liveness lock.
	Alive bool
	// Problem is set when run.json could not be read.
	Problem string
}

// StartedAt is when the run started; zero when run.json says nothing
// readable.
func (r *Run) StartedAt() time.Time { return recordTime(r.Started) }

// EndedAt is when the run ended; zero while it runs.
func (r *Run) EndedAt() time.Time { return recordTime(r.Ended) }

// TurnCount is how many turns the run took, -1 when unknown.
func (r *Run) TurnCount() int {
	if r.Turns == nil {
		return -1
	}
	return *r.Turns
}

// TokenCount is the prompt plus completion tokens run.json records.
func (r *Run) TokenCount() int {
	if r.Usage == nil {
		return 0
	}
	return r.Usage.PromptTokens + r.Usage.CompletionTokens
}

// LastText is the run's last assistant text, "" when there is none.
func (r *Run) LastText() string {
	if r.LastAssistantText == nil {
		return ""
	}
	return *r.LastAssistantText
}

// recordTime reads a run.json moment; zero when there is none.
func recordTime(s string) time.Time {
	t, _ := transcript.ParseTime(s)
	return t
}

// Phase is where a run stands for the person supervising it.
type Phase int

// Phases, in the order the runs list groups them.
const (
	PhaseReview   Phase = iota // ended, no verdict yet
	PhaseRunning               // running and alive
	PhaseQueued                // waiting in the TUI's launch queue
	PhaseFinished              // ended and judged, or not judgeable
	PhaseDead                  // status running, but nobody holds its lock
)

// String names the phase as the runs list's group headings do.
func (p Phase) String() string {
	switch p {
	case PhaseReview:
		return "needs review"
	case PhaseRunning:
		return "running"
	case PhaseQueued:
		return "queued"
	case PhaseDead:
		return "dead"
	}
	return "finished"
}

// Phase classifies the run. A dead run that was judged since (cleaned,
// most often) is finished: its process is gone and so is the question.
func (r *Run) Phase() Phase {
	switch {
	case r.Status == transcript.StatusRunning && r.Alive:
		return PhaseRunning
	case r.Status == transcript.StatusRunning && r.Verdict == "":
		return PhaseDead
	case r.Problem != "":
		return PhaseFinished
	case r.Verdict == "":
		return PhaseReview
	}
	return PhaseFinished
}

// StateWord is where the run stands in a word, as the runs list, the panes
// and the review header say it: running, dead (its process gone before
// it recorded an end), unreadable, the verdict it was given (accepted,
// merged, rejected, cleaned), or else the status it ended with. Only a
// live run is "running": a run.json that still says running after its
// process is gone never is.
func (r *Run) StateWord() string {
	switch r.Phase() {
	case PhaseRunning:
		return "running"
	case PhaseDead:
		return "dead"
	}
	if r.Problem != "" {
		return "unreadable"
	}
	switch r.Verdict {
	case transcript.VerdictAccept:
		if r.MergedInto != "" {
			return "merged"
		}
		return "accepted"
	case transcript.VerdictReject:
		return "rejected"
	case transcript.VerdictCleanup:
		return "cleaned"
	case "":
	default:
		return string(r.Verdict)
	}
	if r.Status == transcript.StatusRunning {
		return "ended" // judged after its process died; no status recorded
	}
	return strings.ReplaceAll(string(r.Status), "_", " ")
}

// VerdictDetail says what the verdict did, with the commit it made:
// "merged into main · 1a2b3c4", "accepted as 1a2b3c4 on dw/x", "work
// parked at refs/dirtywork/parked/x"; "" when there is nothing to say.
func (r *Run) VerdictDetail() string {
	switch {
	case r.MergedInto != "":
		return joinNonEmpty("merged into "+r.MergedInto, ShortCommit(r.MergeCommit))
	case r.AcceptedCommit != "":
		d := "accepted as " + ShortCommit(r.AcceptedCommit)
		if r.Branch != "" {
			d += " on " + r.Branch
		}
		return d
	case r.ParkedRef != "":
		return "work parked at " + r.ParkedRef
	}
	return ""
}

// ShortCommit is a commit id's first 7 digits, as the TUI shows one.
func ShortCommit(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

func joinNonEmpty(a, b string) string {
	if b == "" {
		return a
	}
	return a + " · " + b
}

// Live reports whether the run's process is still going.
func (r *Run) Live() bool { return r.Status == transcript.StatusRunning && r.Alive }

// Change is one thing the runs root watch saw: a run appeared or
// changed (Run holds its new state), or disappeared (Removed).
type Change struct {
	Run     Run
	Removed bool
}

// Warning is something a reviewer should know before accepting.
type Warning struct {
	Kind string // base_moved, conflict, risky, other
	Text string
}

// Warning kinds.
const (
	WarnBaseMoved = "base_moved"
	WarnConflict  = "conflict"
	WarnRisky     = "risky"
)

// Review is what a run's review screen shows. Review fills the diff's
// part; the merge forecast's part (MergeReady, MergeBlockers and the
// base-moved and conflict warnings) comes from Forecast, later.
type Review struct {
	// Patch is the run's change as a unified diff (git's format).
	Patch string
	// Warnings: the base branch moved, a merge would conflict, the change
	// touches what makes tools run code later.
	Warnings []Warning
	// MergeReady reports whether `runs merge` would go ahead; otherwise
	// MergeBlockers says why not.
	MergeReady    bool
	MergeBlockers []string
	// MergeInto is the branch a merge goes into ("" when the forecast
	// could not tell); MergeCheckedOutAt is the worktree that has it
	// checked out ("" when none does), which a merge updates.
	MergeInto         string
	MergeCheckedOutAt string
	// Verify is the last verify round, nil without one.
	Verify *Verify
	// Summary is the run's final message or last assistant text.
	Summary string
}

// Forecast is what a merge of the run would meet, changing nothing.
type Forecast struct {
	// Warnings: the base branch moved, the merge would conflict.
	Warnings []Warning
	// Ready reports whether `runs merge` would go ahead; otherwise
	// Blockers says why not.
	Ready    bool
	Blockers []string
	// Into is the branch a merge goes into; CheckedOutAt the worktree
	// that has it checked out ("" when none does).
	Into, CheckedOutAt string
}

// Apply adds the forecast to the review.
func (f Forecast) Apply(rv *Review) {
	rv.Warnings = append(rv.Warnings, f.Warnings...)
	rv.MergeReady, rv.MergeBlockers = f.Ready, f.Blockers
	rv.MergeInto, rv.MergeCheckedOutAt = f.Into, f.CheckedOutAt
}

// Verify is a verify result.
type Verify struct {
	Command  string
	ExitCode *int
	Passed   bool
	Output   string
}

// Outcome is what an action reports back for the status bar.
type Outcome struct {
	Message  string
	Warnings []string
}

// CleanPlan is what a clean would do, for the confirmation.
type CleanPlan struct {
	// Actions are the steps, one a line ("remove worktree …").
	Actions []string
	// Parked are the refs under refs/dirtywork/parked/ work would be
	// kept under.
	Parked []string
}

// AcceptOptions are the inputs of an accept.
type AcceptOptions struct {
	// Files limits the commit to these paths (nil: every changed file).
	Files []string
	// ReviewSeconds is the time from the diff being shown to the key.
	ReviewSeconds float64
}

// Store is the runs root and every action on a run. Every method may block
// on disk, git or docker: the TUI calls them only from a tea.Cmd.
type Store interface {
	// List returns every run under the root.
	List(ctx context.Context) ([]Run, error)
	// Watch reports runs appearing, changing and disappearing until ctx
	// ends; the channel is closed then.
	Watch(ctx context.Context) (<-chan []Change, error)
	// Review gathers a finished run's diff, its warnings and what the
	// worker said; quickly, so the diff is on screen at once.
	Review(ctx context.Context, slug string) (Review, error)
	// Forecast says what merging the run would meet (it tries the merge,
	// which takes longer than the rest of a review).
	Forecast(ctx context.Context, slug string) (Forecast, error)
	// Accept records verdict accept and commits the run's changes (all,
	// or opts.Files) onto its branch.
	Accept(ctx context.Context, slug string, opts AcceptOptions) (Outcome, error)
	// Merge accepts if needed and merges the run's branch into the branch
	// it started from, only when that is conflict-free and clean.
	Merge(ctx context.Context, slug string, reviewSeconds float64) (Outcome, error)
	// Verdict records a verdict; nothing else changes.
	Verdict(ctx context.Context, slug string, verdict transcript.Verdict, note string, reviewSeconds float64) error
	// PlanClean says what Clean would do and what it would park.
	PlanClean(ctx context.Context, slug string) (CleanPlan, error)
	// Clean records verdict cleanup, then cleans losslessly (parking
	// unmerged work under refs/dirtywork/parked/).
	Clean(ctx context.Context, slug string, reviewSeconds float64) (Outcome, error)
	// Stop interrupts a live run; it ends interrupted with its evidence.
	Stop(ctx context.Context, slug string) error
}

// Previewer is a Store that can read the most recently active runs alone,
// quickly: the first frame shows them while the whole root is read.
type Previewer interface {
	// Recent returns up to n runs, most recently active first, and how
	// many runs the root holds.
	Recent(ctx context.Context, n int) (runs []Run, total int, err error)
}

// LaunchSpec is one run to start.
type LaunchSpec struct {
	Repo      string
	Task      string
	Model     string
	BaseURL   string
	Sandbox   string // docker or none
	MaxTurns  int
	Verify    string
	ExtraArgs []string // more `dirtywork run` flags (the demo's)
}

// Launched is a run that started.
type Launched struct {
	Slug       string
	RunDir     string
	Transcript string
	PID        int
}

// Launcher starts runs so they outlive the TUI.
type Launcher interface {
	// Launch starts a run detached (`dirtywork run --detach`).
	Launch(ctx context.Context, spec LaunchSpec) (Launched, error)
	// Resume starts a run that continues run with the reviewer's
	// feedback (`dirtywork resume --feedback`), detached, against the
	// model server the run used.
	Resume(ctx context.Context, run Run, feedback string) (Launched, error)
	// Models lists the model ids the server at baseURL serves.
	Models(ctx context.Context, baseURL string) ([]string, error)
}

// RefusedError is a launch that preflight refused (exit 2): nothing was
// created. Msg and Hint are the lines `dirtywork run` printed.
type RefusedError struct {
	Msg  string
	Hint string
}

// Error implements error.
func (e *RefusedError) Error() string {
	if e.Hint == "" {
		return e.Msg
	}
	return fmt.Sprintf("%s (%s)", e.Msg, e.Hint)
}

// ErrNotSupported is returned by a backend that cannot do an action yet.
var ErrNotSupported = errors.New("not supported by this build")
