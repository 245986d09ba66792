package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
)

// lane is a run's worktree checked to be what dirtywork made: a linked
// worktree of the run's repository under <repo>/.worktrees, named dw-*.
type lane struct {
	repo     gitops.Repo
	worktree string // resolved
	branch   string // full ref, refs/heads/<branch>
	tip      string // the branch's commit, "" when the branch is gone
}

// ErrWorktreeGone marks a run whose worktree no longer exists.
var ErrWorktreeGone = errors.New("worktree is gone")

// openLane checks the run's worktree (R-7's rules): resolved parent
// <repo>/.worktrees, name dw-*, a .git file whose gitdir resolves under
// the repository's git dir. It reads that .git file only to compare it;
// every command after is pinned to the repository's common dir.
func (s *Store) openLane(ctx context.Context, run *Run) (*lane, error) {
	rec := &run.Record
	if rec.Repo == "" || rec.Worktree == "" {
		return nil, fmt.Errorf("run '%s' records no repo or worktree", run.Slug)
	}
	repo, err := s.git.ResolveRepo(ctx, rec.Repo)
	if err != nil {
		return nil, fmt.Errorf("repository of '%s': %w", run.Slug, err)
	}
	fi, err := os.Lstat(rec.Worktree)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("worktree %s of '%s': %w", rec.Worktree, run.Slug, ErrWorktreeGone)
	}
	if err != nil {
		return nil, fmt.Errorf("worktree of '%s': %w", run.Slug, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("worktree %s of '%s' is not a directory", rec.Worktree, run.Slug)
	}
	wt := resolved(rec.Worktree)
	if err := checkLinked(repo, wt); err != nil {
		return nil, fmt.Errorf("worktree %s of '%s': %w", rec.Worktree, run.Slug, err)
	}
	l := &lane{repo: repo, worktree: wt}
	if rec.Branch != "" {
		l.branch = "refs/heads/" + rec.Branch
		if l.tip, _, err = s.git.RefTip(ctx, repo.Root, l.branch); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// checkLinked applies the linked-worktree rules to wt (resolved).
func checkLinked(repo gitops.Repo, wt string) error {
	if filepath.Dir(wt) != filepath.Join(repo.Root, ".worktrees") || !strings.HasPrefix(filepath.Base(wt), "dw-") {
		return fmt.Errorf("%w: not %s/.worktrees/dw-*", gitops.ErrNotLinkedWorktree, repo.Root)
	}
	f, err := os.OpenFile(filepath.Join(wt, ".git"), os.O_RDONLY|noFollow, 0)
	if err != nil {
		return fmt.Errorf("%w: no .git file: %w", gitops.ErrNotLinkedWorktree, err)
	}
	defer func() { _ = f.Close() }() // read only
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: .git is not a regular file", gitops.ErrNotLinkedWorktree)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return fmt.Errorf("%w: %w", gitops.ErrNotLinkedWorktree, err)
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return fmt.Errorf("%w: .git names no gitdir", gitops.ErrNotLinkedWorktree)
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(wt, gitdir)
	}
	if !within(resolved(gitdir), resolved(repo.CommonDir)) {
		return fmt.Errorf("%w: its gitdir %s is not under %s", gitops.ErrNotLinkedWorktree, gitdir, repo.CommonDir)
	}
	return nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// onlyGitFile reports a worktree holding nothing but its .git file (a
// docker run whose export never filled it).
func onlyGitFile(dir string) bool {
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer func() { _ = d.Close() }()
	names, err := d.Readdirnames(2)
	return (err == nil || errors.Is(err, io.EOF)) && len(names) == 1 && names[0] == ".git"
}

// tree writes the lane's files as a tree laid over from (the branch tip
// or the base commit).
func (s *Store) tree(ctx context.Context, l *lane, from string) (gitops.WorktreeTree, error) {
	return s.git.WriteWorktreeTree(ctx, gitops.TreeSource{CommonDir: l.repo.CommonDir, Worktree: l.worktree, From: from})
}
