package review

import (
	"fmt"
	"strings"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/fit"
	"github.com/dirtywork/dirtywork/tui/live"
)

// The confirmation lines say what the action will do, from what is known
// before the key: the run, the merge forecast, the clean's plan.

// StopLine is the question before stopping run (also asked from the runs
// list and the panes).
func StopLine(r backend.Run) string {
	line := "Stop " + termsafe.Line(r.Slug)
	if task := live.FirstLine(r.Task); task != "" {
		line += " (" + clip(termsafe.Line(task), 48) + ")"
	}
	return line + " now? It ends interrupted; its worktree and transcript are kept."
}

// mergeInto is the branch a merge goes into.
func (m Model) mergeInto() string {
	switch {
	case m.review.MergeInto != "":
		return m.review.MergeInto
	case m.run.BaseBranch != "":
		return m.run.BaseBranch
	}
	return "the branch it started from"
}

// mergeLine is the question before a merge the forecast allows: the
// target branch (and where it is checked out), how many files, whether
// the run is accepted first, and the forecast's warnings.
func (m Model) mergeLine() string {
	into := termsafe.Line(m.mergeInto())
	if at := m.review.MergeCheckedOutAt; at != "" {
		into += " (checked out at " + termsafe.Line(at) + ")"
	}
	what := plural(len(m.files), "file")
	if in := len(m.pendFiles); m.pendFiles != nil {
		what = fmt.Sprintf("%d of %s (the rest left out)", in, plural(len(m.files), "file"))
	}
	parts := []string{fmt.Sprintf("Merge %s into %s: %s", termsafe.Line(m.run.Slug), into, what)}
	switch {
	case m.accepted():
		parts[0] = fmt.Sprintf("Merge %s into %s: its accepted commit %s", termsafe.Line(m.run.Slug), into, termsafe.Line(backend.ShortCommit(m.run.AcceptedCommit)))
	case m.pendFiles != nil:
		parts = append(parts, "records verdict accept and commits those files first")
	default:
		parts = append(parts, "records verdict accept and commits the run's changes first")
	}
	for _, w := range m.review.Warnings {
		switch w.Kind {
		case backend.WarnBaseMoved:
			parts = append(parts, termsafe.Line(w.Text))
		case backend.WarnConflict:
			parts = append(parts, "conflicts "+termsafe.Line(w.Text))
		}
	}
	return strings.Join(parts, "; ") + "."
}

// cleanLine is the question before a clean: the verdict, then each step
// of the plan (computed with the options the clean itself uses), and
// where unmerged work is kept.
func (m Model) cleanLine() string {
	steps := []string{"records verdict cleanup"}
	for _, a := range m.plan.Actions {
		steps = append(steps, termsafe.Line(a))
	}
	if len(m.plan.Actions) == 0 {
		steps = append(steps, "nothing to remove")
	}
	if len(m.plan.Parked) > 0 {
		parked := make([]string, len(m.plan.Parked))
		for i, p := range m.plan.Parked {
			parked[i] = termsafe.Line(p)
		}
		steps = append(steps, "its work is kept under "+strings.Join(parked, ", "))
	} else {
		steps = append(steps, "nothing needs parking under refs/dirtywork/parked/")
	}
	return "Clean " + termsafe.Line(m.run.Slug) + ": " + strings.Join(steps, "; ") + "."
}

// resumeLine is the question before a reject with feedback: the verdict
// and the new run that takes the feedback.
func (m Model) resumeLine(feedback string) string {
	return "Reject " + termsafe.Line(m.run.Slug) + " and resume it as a new run with your feedback: “" +
		clip(termsafe.Line(live.FirstLine(feedback)), 60) + "”."
}

// continueLine is the question before resuming a run that stopped short
// (no verdict is recorded).
func (m Model) continueLine(feedback string) string {
	return "Resume " + termsafe.Line(m.run.Slug) + " (" + termsafe.Line(m.run.StateWord()) + ") as a new run with your feedback: “" +
		clip(termsafe.Line(live.FirstLine(feedback)), 60) + "”; no verdict is recorded."
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// clip cuts s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + fit.Ellipsis
}
