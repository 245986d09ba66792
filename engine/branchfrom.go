package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	runsRoot, err := transcript.RunsRoot()
	if err != nil {
		return refuse("", "%v", err)
	}
	dir, err := transcript.FindRunDir(runsRoot, slug)
	if err != nil {
		return refuse("see 'dirtywork runs list'", "unknown run '%s': %v", slug, err)
	}
	rec, err := transcript.ReadRecord(dir)
	if err != nil {
		return refuse("", "cannot branch from run '%s': %v", slug, err)
	}
	branch, _ := rec.String("branch")
	if branch == "" {
		return refuse("", "run '%s' records no branch to branch from", slug)
	}
	if wt, _ := rec.String("worktree"); wt != "" {
		repo, _ := rec.String("repo")
		if err := r.snapshotRun(ctx, dir, slug, repo, wt, branch); err != nil {
			return err
		}
	}
	p.baseRef, p.branchFrom, p.fromRun = branch, &branch, &slug
	return nil
}

// snapshotRun commits a prior run's uncommitted work onto its branch, so
// the new run starts from everything it did. A live run is refused.
func (r *Runner) snapshotRun(ctx context.Context, runDir, slug, repoPath, worktree, branch string) error {
	if _, err := os.Stat(worktree); errors.Is(err, fs.ErrNotExist) {
		return nil // the worktree is gone; its branch is all there is
	}
	alive, err := transcript.IsAlive(runDir)
	if err != nil {
		return refuse("", "cannot tell whether run '%s' is alive: %v", slug, err)
	}
	if alive {
		return refuse("wait for it to end, or stop it", "run '%s' is still in progress; it must end before snapshotting its work", slug)
	}
	// The worktree's git dir comes from the lane manifest, never from the
	// worktree's .git file, which the worker could have redirected.
	gitDir, err := laneGitDir(ctx, repoPath, slug, worktree, branch)
	if err != nil {
		return refuse("", "run '%s': %v", slug, err)
	}
	snap, err := gitops.New().SnapshotWorktree(ctx, worktree, gitDir, "dirtywork: snapshot of run "+slug)
	if err != nil {
		return refuse("", "%v", err)
	}
	if snap.Changed {
		fmt.Fprintf(r.Stderr, "snapshot %s on %s (from @%s)\n", snap.Commit, branch, slug)
	}
	return nil
}

// laneGitDir finds the run's lane in its repository's manifest and checks
// it is the worktree and branch run.json names.
func laneGitDir(ctx context.Context, repoPath, slug, worktree, branch string) (string, error) {
	repo, err := gitops.ResolveRepo(ctx, repoPath)
	if err != nil {
		return "", err
	}
	lanes, err := gitops.NewManager(nil, repo).List(ctx)
	if err != nil {
		return "", err
	}
	for _, l := range lanes {
		if l.ID != slug {
			continue
		}
		if !samePath(l.Worktree, worktree) || l.Branch != branch {
			return "", fmt.Errorf("its lane (%s on %s) does not match run.json (%s on %s)", l.Worktree, l.Branch, worktree, branch)
		}
		return l.GitDir, nil
	}
	return "", fmt.Errorf("no lane of that run in %s", repo.Root)
}

func samePath(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}
