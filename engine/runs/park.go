package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dirtywork/dirtywork/gitops"
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
// plumbing, on a temporary index) on top of onto ("": the branch tip, or
// the base commit when the branch is gone), or returns onto when there is
// nothing uncommitted. Uncommitted means different from the branch tip's
// tree. A lane holding nothing but its .git file has nothing uncommitted:
// no tree ever reached it (a run killed before its checkout or export),
// and an empty tree parked over the tip would read as the deletion of
// every file, as snapshot refuses.
func (s *Store) snapshotForPark(ctx context.Context, run *Run, l *lane, onto string) (commit string, dirty bool, err error) {
	from := l.tip
	if from == "" {
		from = run.Record.BaseCommit
	}
	if onto == "" {
		onto = from
	}
	if onlyGitFile(l.worktree) {
		return onto, false, nil
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
		return onto, false, nil
	}
	msg := fmt.Sprintf("dirtywork: uncommitted work of run %s, parked by cleanup\n\nDirtywork-Run: %s\nDirtywork-Model: %s\n",
		run.Slug, run.Slug, orUnknown(run.Record.Model))
	id := s.identity(ctx, l.repo.Root)
	commit, err = s.git.CommitTree(ctx, l.repo.Root, t.Tree, msg, id.Name, id.Email, onto)
	return commit, true, err
}

// stashChain writes the pre-resume stashes beside a run's worktree
// (<worktree>.pre-resume-<slug>: the worktree's files a docker resume set
// aside around its export, which an interrupted resume leaves there, maybe
// the only copy of that work) as commits, each on top of the one before,
// the first on from (the branch tip, or the base commit). A stash whose
// files are what the commit below it holds, or that holds nothing, adds
// no commit. It returns the chain's head (from when no stash added one)
// and the stashes that did add one.
func (s *Store) stashChain(ctx context.Context, run *Run, repo gitops.Repo, from string, stashes []string) (head string, withWork []string, err error) {
	head = from
	if len(stashes) == 0 {
		return head, nil, nil
	}
	headTree, err := s.git.TreeOf(ctx, repo.Root, head)
	if err != nil {
		return "", nil, err
	}
	for _, st := range stashes {
		if emptyDir(st) {
			continue
		}
		t, err := s.git.WriteWorktreeTree(ctx, gitops.TreeSource{CommonDir: repo.CommonDir, Worktree: st, From: from})
		if err != nil {
			return "", nil, fmt.Errorf("read the pre-resume stash %s: %w", st, err)
		}
		if t.Tree == headTree {
			continue
		}
		msg := fmt.Sprintf("dirtywork: pre-resume stash %s of run %s, parked by cleanup\n\n"+
			"The worktree's files as a resume set them aside before its export.\n\nDirtywork-Run: %s\nDirtywork-Model: %s\n",
			filepath.Base(st), run.Slug, run.Slug, orUnknown(run.Record.Model))
		id := s.identity(ctx, repo.Root)
		if head, err = s.git.CommitTree(ctx, repo.Root, t.Tree, msg, id.Name, id.Email, head); err != nil {
			return "", nil, fmt.Errorf("park the pre-resume stash %s: %w", st, err)
		}
		headTree = t.Tree
		withWork = append(withWork, st)
	}
	return head, withWork, nil
}

// emptyDir reports a directory with no entries.
func emptyDir(dir string) bool {
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer func() { _ = d.Close() }()
	names, err := d.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}
