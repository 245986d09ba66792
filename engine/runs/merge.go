package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
)

// MergeForecast says whether Merge would bring a run's work into the
// branch it started from, and why not. Mission control shows it before
// the reviewer asks.
type MergeForecast struct {
	Slug string `json:"slug"`
	// Into is the branch merged into (short name); IntoTip its commit.
	Into    string `json:"into"`
	IntoTip string `json:"into_tip"`
	// Tip is the commit merged: the branch tip, or a commit of the
	// worktree's uncommitted files laid on it (Pending) that Merge would
	// make by accepting first.
	Tip     string `json:"tip"`
	Pending bool   `json:"pending_changes"`
	// BaseMoved: Into has moved on since the run began.
	BaseMoved bool `json:"base_moved"`
	// AlreadyMerged: Into contains the run's work already.
	AlreadyMerged bool `json:"already_merged"`
	// FastForward: Into has not moved, so it would simply advance.
	FastForward bool `json:"fast_forward"`
	// Conflicts are the paths git could not merge.
	Conflicts []string `json:"conflicts"`
	// CheckedOutAt is the worktree that has Into checked out ("" when
	// none); DirtyCheckout lists its uncommitted tracked changes.
	CheckedOutAt  string   `json:"checked_out_at"`
	DirtyCheckout []string `json:"dirty_checkout"`
	// Reasons say why Merge would refuse; none means it would merge.
	Reasons []string `json:"reasons"`
	// tree is the merged tree.
	tree string
	lane *lane
}

// OK reports a forecast with nothing in the way.
func (f *MergeForecast) OK() bool { return len(f.Reasons) == 0 }

// MergeOptions tune Merge.
type MergeOptions struct {
	// Into overrides the branch the run started from.
	Into string
	// Files limit the accept that Merge does first (see AcceptOptions).
	Files []string
	// Note, ReviewSeconds and Reviewer go into the accept verdict.
	Note          *string
	ReviewSeconds *float64
	Reviewer      string
}

// MergeResult is what Merge did.
type MergeResult struct {
	Slug string `json:"slug"`
	Into string `json:"into"`
	// Commit is Into's new tip: the run's tip for a fast-forward, else a
	// merge commit.
	Commit      string `json:"commit"`
	FastForward bool   `json:"fast_forward"`
	// AlreadyMerged: nothing moved; Into had the work.
	AlreadyMerged bool `json:"already_merged"`
	// UpdatedCheckout is the checkout of Into that was updated.
	UpdatedCheckout string        `json:"updated_checkout"`
	Accept          *AcceptResult `json:"accept"`
	// Warnings are the changes the merge brought into Into that make
	// tools run code later or lead out of the repository (see Risks),
	// whether or not this merge accepted them.
	Warnings []Risk `json:"warnings"`
}

// RefusedError is an operation refused for reasons the reviewer can fix.
type RefusedError struct {
	Op, Slug string
	Reasons  []string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("cannot %s '%s': %s", e.Op, e.Slug, strings.Join(e.Reasons, "; "))
}

// Forecast says what Merge would do, changing nothing (a commit object of
// uncommitted work may be written, referenced by nothing).
func (s *Store) Forecast(ctx context.Context, slug, into string) (*MergeForecast, error) {
	run, err := s.Get(slug)
	if err != nil {
		return nil, err
	}
	return s.forecast(ctx, run, into, needsAccept(run))
}

// needsAccept reports a run that Merge accepts first: one never accepted
// with a commit (a verdict recorded by `runs verdict` alone counts as not
// accepted). An accepted run's uncommitted files are what the reviewer
// left out: they are never merged.
func needsAccept(run *Run) bool {
	return run.Record.Verdict != transcript.VerdictAccept || run.Record.AcceptedCommit == ""
}

// forecast is Forecast for run; withPending counts the worktree's
// uncommitted files as the commit Merge's accept would make.
func (s *Store) forecast(ctx context.Context, run *Run, into string, withPending bool) (*MergeForecast, error) {
	f := &MergeForecast{Slug: run.Slug, Conflicts: []string{}, DirtyCheckout: []string{}, Reasons: []string{}}
	if run.Alive {
		f.Reasons = append(f.Reasons, "the run is still running")
		return f, nil
	}
	l, err := s.openLane(ctx, run)
	if err != nil {
		f.Reasons = append(f.Reasons, err.Error())
		return f, nil
	}
	f.lane = l
	if l.tip == "" {
		f.Reasons = append(f.Reasons, "its branch "+run.Record.Branch+" is gone")
		return f, nil
	}
	if f.Into, err = s.mergeTarget(ctx, run, l, into); err != nil {
		f.Reasons = append(f.Reasons, err.Error())
		return f, nil
	}
	intoRef := "refs/heads/" + f.Into
	tip, ok, err := s.git.RefTip(ctx, l.repo.Root, intoRef)
	if err != nil {
		return nil, err
	}
	if !ok {
		f.Reasons = append(f.Reasons, "branch "+f.Into+" does not exist")
		return f, nil
	}
	f.IntoTip, f.Tip = tip, l.tip
	f.BaseMoved = tip != run.Record.BaseCommit
	// Uncommitted work counts when Merge accepts it first.
	if withPending && !onlyGitFile(l.worktree) {
		t, err := s.tree(ctx, l, l.tip)
		if err != nil {
			return nil, err
		}
		tipTree, err := s.git.TreeOf(ctx, l.repo.Root, l.tip)
		if err != nil {
			return nil, err
		}
		if t.Tree != tipTree {
			id := s.identity(ctx, l.repo.Root)
			if f.Tip, err = s.git.CommitTree(ctx, l.repo.Root, t.Tree, commitMessage(run), id.Name, id.Email, l.tip); err != nil {
				return nil, err
			}
			f.Pending = true
		}
	}
	if f.AlreadyMerged, err = s.git.IsAncestor(ctx, l.repo.Root, f.Tip, tip); err != nil {
		return nil, err
	}
	if f.AlreadyMerged {
		return f, nil
	}
	if f.FastForward, err = s.git.IsAncestor(ctx, l.repo.Root, tip, f.Tip); err != nil {
		return nil, err
	}
	if !f.FastForward {
		mt, err := s.git.ForecastMerge(ctx, l.repo.Root, tip, f.Tip)
		if err != nil {
			return nil, err
		}
		f.tree, f.Conflicts = mt.Tree, mt.Conflicts
		if len(mt.Conflicts) > 0 {
			f.Reasons = append(f.Reasons, fmt.Sprintf("merging into %s conflicts in %s", f.Into, strings.Join(mt.Conflicts, ", ")))
		}
	}
	wts, err := s.git.Worktrees(ctx, l.repo.Root)
	if err != nil {
		return nil, err
	}
	for _, wt := range wts {
		if wt.Branch == intoRef && !wt.Bare {
			f.CheckedOutAt = wt.Path
			dirty, err := s.git.CheckoutChanges(ctx, wt.Path)
			if err != nil {
				f.Reasons = append(f.Reasons, fmt.Sprintf("cannot tell whether the checkout of %s at %s is clean: %v", f.Into, wt.Path, err))
				break
			}
			f.DirtyCheckout = dirty
			if len(dirty) > 0 {
				f.Reasons = append(f.Reasons, fmt.Sprintf("%s is checked out at %s with uncommitted changes (%d paths); commit or stash them first", f.Into, wt.Path, len(dirty)))
			}
			break
		}
	}
	return f, nil
}

// mergeTarget is the branch the run started from: given, recorded
// (base_branch, or base_ref when it names a branch), or the branch the
// repository's main checkout has out when it contains the base commit.
func (s *Store) mergeTarget(ctx context.Context, run *Run, l *lane, into string) (string, error) {
	if into != "" {
		return strings.TrimPrefix(into, "refs/heads/"), nil
	}
	rec := &run.Record
	for _, cand := range []string{rec.BaseBranch, rec.BaseRef} {
		name := strings.TrimPrefix(cand, "refs/heads/")
		if name == "" || name == "HEAD" || strings.HasPrefix(name, "dirtywork/") {
			continue
		}
		if _, ok, err := s.git.RefTip(ctx, l.repo.Root, "refs/heads/"+name); err == nil && ok {
			return name, nil
		}
	}
	head, err := s.git.SymbolicHead(ctx, l.repo.Root)
	if err != nil || head == "" || strings.HasPrefix(head, "refs/heads/dirtywork/") {
		return "", errors.New("cannot tell which branch the run started from (give the branch to merge into)")
	}
	contains, err := s.git.IsAncestor(ctx, l.repo.Root, rec.BaseCommit, head)
	if err != nil || !contains {
		return "", fmt.Errorf("the repository's checked-out %s does not contain the run's base commit; give the branch to merge into", strings.TrimPrefix(head, "refs/heads/"))
	}
	return strings.TrimPrefix(head, "refs/heads/"), nil
}

// Merge brings a run's branch into the branch it started from, accepting
// it first when its verdict is not accept yet or its worktree has
// uncommitted work. It merges only when `git merge-tree --write-tree`
// says the merge is conflict-free; refs move by plumbing and
// compare-and-swap, under the repository's lane lock. When the target is
// checked out, that checkout must be clean and is updated with a two-way
// read-tree, config-neutral: no hook, filter or attribute driver runs.
// Otherwise it refuses with a *RefusedError naming every reason.
func (s *Store) Merge(ctx context.Context, slug string, opts MergeOptions) (*MergeResult, error) {
	run, err := s.Get(slug)
	if err != nil {
		return nil, err
	}
	accept := needsAccept(run)
	f, err := s.forecast(ctx, run, opts.Into, accept && len(opts.Files) == 0)
	if err != nil {
		return nil, err
	}
	if !f.OK() {
		return nil, &RefusedError{Op: "merge", Slug: slug, Reasons: f.Reasons}
	}
	res := &MergeResult{Slug: slug, Into: f.Into, Warnings: []Risk{}}
	if accept {
		acc, err := s.Accept(ctx, slug, AcceptOptions{Files: opts.Files, Note: opts.Note, ReviewSeconds: opts.ReviewSeconds, Reviewer: opts.Reviewer})
		if err != nil {
			return nil, err
		}
		res.Accept = acc
		if acc.Committed {
			// Forecast again for the commit that exists now (only some
			// files may have been accepted).
			if run, err = s.Get(slug); err != nil {
				return nil, err
			}
			if f, err = s.forecast(ctx, run, opts.Into, false); err != nil {
				return nil, err
			}
			if !f.OK() {
				return res, &RefusedError{Op: "merge", Slug: slug, Reasons: f.Reasons}
			}
		}
	}
	if f.AlreadyMerged {
		res.AlreadyMerged, res.Commit = true, f.IntoTip
		return res, s.recordMerge(run, res)
	}
	lock, err := gitops.LockRepo(ctx, f.lane.repo)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lock.Unlock() }()
	newTip := f.Tip
	if !f.FastForward {
		id := s.identity(ctx, f.lane.repo.Root)
		msg := fmt.Sprintf("Merge dirtywork run %s into %s\n\nDirtywork-Run: %s\nDirtywork-Model: %s\n", slug, f.Into, slug, orUnknown(run.Record.Model))
		if newTip, err = s.git.CommitTree(ctx, f.lane.repo.Root, f.tree, msg, id.Name, id.Email, f.IntoTip, f.Tip); err != nil {
			return nil, err
		}
	}
	ref := "refs/heads/" + f.Into
	root := f.lane.repo.Root
	if f.CheckedOutAt != "" {
		// Files first, then the ref: a ref moved under an unchanged
		// checkout would show the merge reversed as local changes.
		if err := s.git.SwitchCheckout(ctx, f.CheckedOutAt, f.IntoTip, newTip); err != nil {
			return nil, &RefusedError{Op: "merge", Slug: slug, Reasons: []string{err.Error()}}
		}
	}
	pause.At(pause.Merge) // the checkout is switched, the branch not yet moved
	if err := s.git.UpdateRef(ctx, root, ref, newTip, f.IntoTip, "dirtywork merge "+slug); err != nil {
		if f.CheckedOutAt != "" {
			_ = s.git.SwitchCheckout(ctx, f.CheckedOutAt, newTip, f.IntoTip)
		}
		return nil, fmt.Errorf("merge '%s': %s moved meanwhile: %w", slug, f.Into, err)
	}
	res.Commit, res.FastForward, res.UpdatedCheckout = newTip, f.FastForward, f.CheckedOutAt
	res.Warnings = s.broughtRisks(ctx, root, f.IntoTip, newTip)
	return res, s.recordMerge(run, res)
}

// broughtRisks are the risks among the changes from into to merged; a
// diff that cannot be read is said as one.
func (s *Store) broughtRisks(ctx context.Context, repo, into, merged string) []Risk {
	changes, err := s.git.DiffTrees(ctx, repo, into, merged)
	if err != nil {
		return []Risk{{Kind: RiskUnread, Detail: "the merged changes could not be read for risks: " + err.Error()}}
	}
	risks := Risks(changes, s.blobReader(ctx, repo))
	if risks == nil {
		return []Risk{}
	}
	return risks
}

func (s *Store) recordMerge(run *Run, res *MergeResult) error {
	_, err := transcript.Patch(run.Dir, transcript.MergeFields{
		MergedInto: res.Into, MergeCommit: res.Commit, MergedAt: transcript.FormatTime(s.now()),
	})
	if err != nil {
		return fmt.Errorf("merged '%s' as %s, but: %w", run.Slug, res.Commit, err)
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
