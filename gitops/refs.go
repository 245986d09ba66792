package gitops

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Worktree is one worktree of a repository as `git worktree list` reports it.
type Worktree struct {
	// Path is the worktree's absolute path.
	Path string
	// Head is the commit checked out; Branch the full ref ("" when detached).
	Head, Branch string
	// Bare, Locked and Prunable are git's flags; a prunable worktree's
	// directory is gone.
	Bare, Locked, Prunable bool
}

// Worktrees lists the worktrees of the repository at dir, the main one
// first (`git worktree list --porcelain -z`).
func (g *Git) Worktrees(ctx context.Context, dir string) ([]Worktree, error) {
	out, err := g.Run(ctx, Call{Dir: dir, Args: []string{"worktree", "list", "--porcelain", "-z"}})
	if err != nil {
		return nil, fmt.Errorf("list the worktrees of %s: %w", dir, err)
	}
	entries := parseWorktreeListZ(out)
	wts := make([]Worktree, len(entries))
	for i, e := range entries {
		wts[i] = Worktree{Path: e.Path, Head: e.Head, Branch: e.Branch, Bare: e.Bare, Locked: e.Locked, Prunable: e.Prunable}
	}
	return wts, nil
}

// Refs returns the refs under prefix (for example "refs/heads/dirtywork/")
// of the repository at dir, full name → commit.
func (g *Git) Refs(ctx context.Context, dir, prefix string) (map[string]string, error) {
	out, err := g.Run(ctx, Call{Dir: dir, Args: []string{"for-each-ref", "--format=%(objectname) %(refname)", "--", prefix}})
	if err != nil {
		return nil, fmt.Errorf("list %s in %s: %w", prefix, dir, err)
	}
	refs := map[string]string{}
	for line := range bytes.SplitSeq(out, []byte{'\n'}) {
		sha, name, ok := strings.Cut(string(line), " ")
		if ok {
			refs[name] = sha
		}
	}
	return refs, nil
}

// RefTip resolves a full ref name to its commit; ok is false when the ref
// does not exist.
func (g *Git) RefTip(ctx context.Context, dir, ref string) (sha string, ok bool, err error) {
	out, err := g.Run(ctx, Call{Dir: dir, Args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}"}})
	if err != nil {
		if exitCodeOf(err) == 1 {
			return "", false, nil
		}
		return "", false, fmt.Errorf("resolve %s in %s: %w", ref, dir, err)
	}
	return strings.TrimSpace(string(out)), true, nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (g *Git) IsAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := g.Run(ctx, Call{Dir: dir, Args: []string{"merge-base", "--is-ancestor", a, b}})
	if err == nil {
		return true, nil
	}
	if exitCodeOf(err) == 1 {
		return false, nil
	}
	return false, fmt.Errorf("is %s an ancestor of %s in %s: %w", a, b, dir, err)
}

// UpdateRef moves ref from old to new by compare-and-swap (old "" creates
// it only if absent; new "" deletes it only if it still is old).
func (g *Git) UpdateRef(ctx context.Context, dir, ref, newSHA, oldSHA, reason string) error {
	var args []string
	if newSHA == "" {
		args = []string{"update-ref", "-m", reason, "-d", ref, oldSHA}
	} else {
		if oldSHA == "" {
			oldSHA = strings.Repeat("0", 40)
		}
		args = []string{"update-ref", "-m", reason, ref, newSHA, oldSHA}
	}
	// Neutral: update-ref runs the reference-transaction hook otherwise.
	if _, err := g.Run(ctx, Call{Dir: dir, Neutral: true, Args: args}); err != nil {
		return fmt.Errorf("move %s: %w", ref, err)
	}
	return nil
}

// UnmergedCommits counts the commits reachable from tip that no other
// branch, tag, remote-tracking ref or parked ref (refs/dirtywork/parked/)
// reaches: work that deleting branch (its short name) would lose.
func (g *Git) UnmergedCommits(ctx context.Context, dir, branch, tip string) (int, error) {
	out, err := g.Run(ctx, Call{Dir: dir, Args: []string{
		"rev-list", "--count", tip, "--not",
		"--exclude=" + branch, "--branches", "--tags", "--remotes", "--glob=refs/dirtywork/parked/*",
	}})
	if err != nil {
		return 0, fmt.Errorf("count the unmerged commits of %s: %w", branch, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("count the unmerged commits of %s: unexpected output %q", branch, out)
	}
	return n, nil
}
