package gitops

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// CloseResult reports what Close did with a lane.
type CloseResult struct {
	// ID is the lane's owner id.
	ID string `json:"id"`
	// Status is StatusRemoved or StatusRetainedDirty.
	Status LaneStatus `json:"status"`
	// Worktree and Branch are the lane's (possibly now removed) names.
	Worktree string `json:"worktree"`
	Branch   string `json:"branch"`
	// Changed holds the porcelain status lines that made a lane dirty;
	// empty, never nil, when there are none.
	Changed []string `json:"changed"`
	// CommitsAhead counts commits beyond the base that made a lane dirty.
	CommitsAhead int `json:"commits_ahead"`
}

// Close ends a lane without ever losing work. A clean lane (no uncommitted
// changes, ignored files aside, and no commits beyond its base, on its
// branch or its worktree's HEAD) has its worktree and branch removed and
// its manifest entry dropped: StatusRemoved. Otherwise worktree and branch
// are kept and the lane is recorded and reported as StatusRetainedDirty
// with what is in it.
//
// Close is idempotent: a lane closed and removed before is reported
// removed again; a retained lane is judged afresh. An id never opened is
// ErrNoLane. If the worktree directory vanished, git's record of it is
// pruned and the branch decides: commits beyond the base keep it (and the
// lane, retained). Something at the worktree path that git does not know as
// a worktree is never touched: the lane is retained.
func (m *Manager) Close(ctx context.Context, id string) (CloseResult, error) {
	var res CloseResult
	err := m.locked(ctx, func(mf *manifest) error {
		var err error
		res, err = m.close(ctx, mf, id)
		return err
	})
	return res, err
}

// close does Close's work with the lock held.
func (m *Manager) close(ctx context.Context, mf *manifest, id string) (CloseResult, error) {
	i := mf.find(id)
	if i < 0 {
		if j := mf.findRemoved(id); j >= 0 {
			r := mf.Removed[j]
			return CloseResult{ID: id, Status: StatusRemoved, Worktree: r.Worktree, Branch: r.Branch, Changed: []string{}}, nil
		}
		return CloseResult{}, fmt.Errorf("%w %q in %s", ErrNoLane, id, m.repo.Root)
	}
	l := mf.Lanes[i]
	res := CloseResult{ID: id, Worktree: l.Worktree, Branch: l.Branch, Changed: []string{}}
	known, err := m.knownWorktrees(ctx)
	if err != nil {
		return res, err
	}
	_, isKnown := known[l.Worktree]
	if !pathPresent(l.Worktree) && isKnown {
		if err := m.prune(ctx); err != nil {
			return res, err
		}
		delete(known, l.Worktree)
	}
	c, err := m.check(ctx, l, known)
	if err != nil {
		return res, err
	}
	// A lane made without a checkout that nothing was ever written into
	// holds only its .git file and an empty index: git reports every base
	// file as a staged deletion, but there is nothing to lose. (A worker
	// that deleted files in a checked-out lane leaves unstaged deletions,
	// which keep it.)
	empty := l.NoCheckout && c.inspectable() && c.ahead == 0 && onlyGitFile(l.Worktree) && allStagedDeletions(c.changed)
	if empty {
		c.changed = []string{}
	}
	res.Changed, res.CommitsAhead = c.changed, c.ahead
	if c.dirty() || (c.present && !c.inspectable()) {
		return m.retain(mf, l, res)
	}
	if c.present {
		// Neutral, because worktree remove runs status on the worker's
		// content itself; without --force git refuses a worktree that
		// became dirty since we looked (an empty lane needs it for its
		// "deleted" base files).
		args := NewArgs("worktree", "remove").ArgIf(empty, "--force").Arg("--", l.Worktree).Strings()
		if _, err := m.git.Run(ctx, Call{Dir: m.repo.Root, Args: args, Neutral: true}); err != nil {
			return res, fmt.Errorf("remove the worktree of lane %q at %s: %w", id, l.Worktree, err)
		}
	}
	if c.branchExists {
		if err := m.deleteBranch(ctx, l.Branch, c.branchTip); err != nil {
			return res, err
		}
	}
	mf.drop(l, m.timestamp())
	if err := m.save(mf); err != nil {
		return res, err
	}
	res.Status = StatusRemoved
	return res, nil
}

// retain records a lane as retained-dirty and reports it so.
func (m *Manager) retain(mf *manifest, l Lane, res CloseResult) (CloseResult, error) {
	res.Status = StatusRetainedDirty
	if l.Status == StatusRetainedDirty {
		return res, nil
	}
	l.Status = StatusRetainedDirty
	mf.put(l)
	if err := m.save(mf); err != nil {
		return res, err
	}
	return res, nil
}

// onlyGitFile reports whether dir holds nothing but a regular .git file.
func onlyGitFile(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 1 && entries[0].Name() == ".git" && entries[0].Type().IsRegular()
}

// allStagedDeletions reports whether every porcelain line is a deletion
// staged in the index and nothing else.
func allStagedDeletions(lines []string) bool {
	for _, l := range lines {
		if !strings.HasPrefix(l, "D  ") {
			return false
		}
	}
	return true
}
