package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/transcript"
)

// resolveBranchFrom settles where the new lane starts (E-10): the repo's
// HEAD, a ref, or another run's branch after snapshotting that run's
// uncommitted work onto it.
func (r *Runner) resolveBranchFrom(ctx context.Context, p *prepared) error {
	from := p.spec.BranchFrom
	if from == "" {
		return nil
	}
	slug, isRun := strings.CutPrefix(from, "@")
	if !isRun {
		p.baseRef, p.branchFrom = from, &from
		return nil
	}
	store, err := runs.OpenDefault()
	if err != nil {
		return refuse("", "%v", err)
	}
	run, err := store.Get(slug)
	switch {
	case errors.Is(err, runs.ErrNoSuchRun) || errors.Is(err, runs.ErrInvalidSlug):
		return refuse("see 'dirtywork runs list'", "unknown run '%s': %v", slug, err)
	case err != nil:
		return refuse("", "cannot branch from run '%s': %v", slug, err)
	}
	dir, rec := run.Dir, run.Record
	branch := rec.Branch
	if branch == "" {
		return refuse("", "run '%s' records no branch to branch from", slug)
	}
	if rec.Worktree != "" {
		if err := r.snapshotRun(ctx, dir, slug, rec); err != nil {
			return err
		}
	}
	p.baseRef, p.branchFrom, p.fromRun = branch, &branch, &slug
	return nil
}

// snapshotRun commits a prior run's uncommitted work onto its branch, so
// the new run starts from everything it did. The worktree must pass the
// resume guards (a live run, a foreign worktree, a pre-resume stash are
// refused); its git dir comes from git's own worktree records in the
// common dir, checked against the lane manifest where the run has a lane
// (runs of dirtywork 0.9.1 have none), never from the worktree's .git
// file, which the worker could have redirected.
func (r *Runner) snapshotRun(ctx context.Context, runDir, slug string, rec transcript.RunRecord) error {
	if _, err := os.Lstat(rec.Worktree); errors.Is(err, fs.ErrNotExist) {
		return nil // the worktree is gone; its branch is all there is
	}
	prior, err := runs.GuardPriorRun(ctx, runDir, rec, runs.UseBranchFrom)
	if err != nil {
		return err
	}
	if _, err := runs.QuarantineCrashedTree(runDir, rec); err != nil {
		return refuse("", "cannot branch from run '%s': %v", slug, err)
	}
	snap, err := gitops.New().SnapshotWorktree(ctx, prior.Worktree, prior.GitDir, "dirtywork: snapshot of run "+slug)
	if err != nil {
		return refuse("", "%v", err)
	}
	if snap.Changed {
		fmt.Fprintf(r.Stderr, "snapshot %s on %s (from @%s)\n", snap.Commit, prior.Branch, slug)
	}
	return nil
}
