package runs

import (
	"context"
	"fmt"

	"github.com/dirtywork/dirtywork/sandbox/pause"
)

// ParkedPrefix is where work that cleanup would otherwise delete is kept.
const ParkedPrefix = "refs/dirtywork/parked/"

// ParkedRef is the ref slug's work is parked under.
func ParkedRef(slug string) string { return ParkedPrefix + slug }

// park points refs/dirtywork/parked/<slug> at commit in repo (moving it
// if it exists already: it only ever grows with the run's newest work)
// and returns how to get the work back.
func (s *Store) park(ctx context.Context, repo, slug, commit string) (string, error) {
	ref := ParkedRef(slug)
	old, _, err := s.git.RefTip(ctx, repo, ref)
	if err != nil {
		return "", err
	}
	if err := s.git.UpdateRef(ctx, repo, ref, commit, old, "dirtywork park "+slug); err != nil {
		return "", fmt.Errorf("park the work of '%s': %w", slug, err)
	}
	pause.At(pause.Park) // parked, nothing removed yet
	return fmt.Sprintf("%s (get it back: git -C %s branch restored/%s %s)", ref, repo, slug, ref), nil
}

// snapshotForPark commits the lane's uncommitted files (config-neutral
// plumbing, on a temporary index) on top of its branch tip, or returns
// the tip when there is nothing uncommitted. A lane holding nothing but
// its .git file has nothing uncommitted: no tree ever reached it (a run
// killed before its checkout or export), and an empty tree parked over
// the tip would read as the deletion of every file, as snapshot refuses.
func (s *Store) snapshotForPark(ctx context.Context, run *Run, l *lane) (commit string, dirty bool, err error) {
	from := l.tip
	if from == "" {
		from = run.Record.BaseCommit
	}
	if onlyGitFile(l.worktree) {
		return from, false, nil
	}
	t, err := s.tree(ctx, l, from)
	if err != nil {
		return "", false, err
	}
	fromTree, err := s.git.TreeOf(ctx, l.repo.Root, from)
	if err != nil {
		return "", false, err
	}
	if t.Tree == fromTree {
		return from, false, nil
	}
	msg := fmt.Sprintf("dirtywork: uncommitted work of run %s, parked by cleanup\n\nDirtywork-Run: %s\nDirtywork-Model: %s\n",
		run.Slug, run.Slug, orUnknown(run.Record.Model))
	id := s.identity(ctx, l.repo.Root)
	commit, err = s.git.CommitTree(ctx, l.repo.Root, t.Tree, msg, id.Name, id.Email, from)
	return commit, true, err
}
