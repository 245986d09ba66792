package gitops

import (
	"context"
	"errors"
	"fmt"
)

// RecoveredLane is a lane Recover acted on or left alone.
type RecoveredLane struct {
	ID       string `json:"id"`
	Worktree string `json:"worktree"`
	Branch   string `json:"branch"`
	// CommitsAhead counts the branch's commits beyond the lane's base.
	CommitsAhead int `json:"commits_ahead"`
}

// RecoverReport says what Recover did. Every list is empty, never nil.
type RecoverReport struct {
	// Pruned lanes had lost their worktree: entry dropped, branch deleted
	// (or already gone).
	Pruned []RecoveredLane `json:"pruned"`
	// KeptBranches lanes had lost their worktree but their branch has
	// commits beyond the base: entry dropped, branch kept.
	KeptBranches []RecoveredLane `json:"kept_branches"`
	// Live lanes have a worktree git still knows: untouched.
	Live []RecoveredLane `json:"live"`
	// Orphaned lanes have something at their worktree path that git does
	// not list as a worktree: untouched, for a person to look at.
	Orphaned []RecoveredLane `json:"orphaned"`
}

// Recover cleans up after lanes whose owners crashed and whose worktrees
// were deleted by hand: git worktree prune, then every manifest entry whose
// worktree git no longer knows is dropped, and its branch deleted only if
// it has no commits beyond the base (otherwise kept and reported). A lane
// whose worktree git still knows is never touched.
func (m *Manager) Recover(ctx context.Context) (RecoverReport, error) {
	rep := RecoverReport{Pruned: []RecoveredLane{}, KeptBranches: []RecoveredLane{}, Live: []RecoveredLane{}, Orphaned: []RecoveredLane{}}
	err := m.locked(ctx, func(mf *manifest) error {
		if err := m.prune(ctx); err != nil {
			return err
		}
		known, err := m.knownWorktrees(ctx)
		if err != nil {
			return err
		}
		changed := false
		var errs []error
		for _, l := range append([]Lane(nil), mf.Lanes...) {
			c, err := m.recoverLane(ctx, mf, l, known, &rep)
			changed = changed || c
			if err != nil {
				errs = append(errs, fmt.Errorf("recover lane %q: %w", l.ID, err))
			}
		}
		// What was done before a failure is saved all the same, so the
		// manifest never names a branch this call already deleted.
		if changed {
			errs = append(errs, m.save(mf))
		}
		return errors.Join(errs...)
	})
	return rep, err
}

// recoverLane handles one lane for Recover and reports whether it changed
// the manifest.
func (m *Manager) recoverLane(ctx context.Context, mf *manifest, l Lane, known map[string]worktreeEntry, rep *RecoverReport) (bool, error) {
	r := RecoveredLane{ID: l.ID, Worktree: l.Worktree, Branch: l.Branch}
	if _, ok := known[l.Worktree]; ok {
		rep.Live = append(rep.Live, r)
		return false, nil
	}
	if pathPresent(l.Worktree) {
		rep.Orphaned = append(rep.Orphaned, r)
		return false, nil
	}
	tip, exists, err := m.branchTip(ctx, l.Branch)
	if err != nil {
		return false, err
	}
	if r.CommitsAhead, err = m.commitsAhead(ctx, l.BaseCommit, tip); err != nil {
		return false, err
	}
	if r.CommitsAhead > 0 {
		mf.drop(l, "")
		rep.KeptBranches = append(rep.KeptBranches, r)
		return true, nil
	}
	if exists {
		if err := m.deleteBranch(ctx, l.Branch, tip); err != nil {
			return false, err
		}
	}
	mf.drop(l, m.timestamp())
	rep.Pruned = append(rep.Pruned, r)
	return true, nil
}
