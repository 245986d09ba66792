package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrEmptyTree: the worktree holds no files while its branch does. A
// snapshot would commit the deletion of every file; a worktree emptied
// that way (an export that never filled it, a cleaned lane) is no work
// to keep.
var ErrEmptyTree = errors.New("empty tree")

// emptyTrees are the ids of the empty tree in SHA-1 and SHA-256
// repositories.
var emptyTrees = map[string]bool{
	"4b825dc642cb6eb9a060e54bf8d69288fbee4904":                         true,
	"6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321": true,
}

// Snapshot is the outcome of snapshotting a worktree.
type Snapshot struct {
	// Commit is the new commit, or the branch's unchanged head when there
	// was nothing to snapshot.
	Commit string
	// Changed is false when the worktree matched its HEAD already.
	Changed bool
}

// SnapshotWorktree commits everything in worktree (tracked changes and
// untracked files, ignored ones excepted) onto its checked-out branch
// with plumbing only: a temporary index, write-tree, commit-tree and a
// compare-and-swap update-ref. Hooks, filters and the operator's config
// play no part (neutral mode), the worker's own index is only re-read
// from the new commit, and no file in the worktree is touched. gitDir is
// the worktree's own git dir, which pins every command to it. A worktree
// with no files over a HEAD with some is refused with ErrEmptyTree.
func (g *Git) SnapshotWorktree(ctx context.Context, worktree, gitDir, message string) (Snapshot, error) {
	call := func(index string, args ...string) (string, error) {
		out, err := g.Run(ctx, Call{Dir: worktree, Args: args, Neutral: true, GitDir: gitDir, WorkTree: worktree, IndexFile: index})
		return strings.TrimSpace(string(out)), err
	}
	ref, err := call("", "symbolic-ref", "-q", "HEAD")
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: HEAD is not on a branch: %w", worktree, err)
	}
	head, err := call("", "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: resolve HEAD: %w", worktree, err)
	}
	tmp, err := os.MkdirTemp("", "dirtywork-snapshot-")
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", worktree, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	index := filepath.Join(tmp, "index")
	if _, err := call(index, "read-tree", head); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", worktree, err)
	}
	if _, err := call(index, "add", "-A", "--", "."); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: stage the worktree: %w", worktree, err)
	}
	tree, err := call(index, "write-tree")
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", worktree, err)
	}
	headTree, err := call("", "rev-parse", head+"^{tree}")
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", worktree, err)
	}
	if tree == headTree {
		return Snapshot{Commit: head}, nil
	}
	if emptyTrees[tree] {
		return Snapshot{}, fmt.Errorf("snapshot %s: the worktree holds no files but %s does; refusing to commit the deletion of every file (%w)",
			worktree, strings.TrimPrefix(ref, "refs/heads/"), ErrEmptyTree)
	}
	commit, err := call("", "-c", "user.name=dirtywork", "-c", "user.email=dirtywork@localhost",
		"commit-tree", tree, "-p", head, "-m", message)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: commit: %w", worktree, err)
	}
	if _, err := call("", "update-ref", "-m", "dirtywork snapshot", ref, commit, head); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: move %s: %w", worktree, ref, err)
	}
	// The worktree's index now lags its HEAD; re-read it so status shows
	// a clean tree, as it is (the files already are the new commit).
	if _, err := call("", "read-tree", commit); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: refresh the index: %w", worktree, err)
	}
	return Snapshot{Commit: commit, Changed: true}, nil
}
