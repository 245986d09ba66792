package gitops

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
)

// MergeTree is what `git merge-tree --write-tree` says of merging two
// commits.
type MergeTree struct {
	// Tree is the merged tree (with conflict markers when Conflicts).
	Tree string
	// Conflicts are the paths git could not merge; none means clean.
	Conflicts []string
}

// ForecastMerge asks git what merging theirs into ours would give,
// without touching any ref, index or worktree (config-neutral; git 2.38 or
// later).
func (g *Git) ForecastMerge(ctx context.Context, dir, ours, theirs string) (MergeTree, error) {
	out, err := g.Run(ctx, Call{
		Dir: dir, Neutral: true,
		Args: []string{"merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs},
	})
	if err != nil && exitCodeOf(err) != 1 {
		return MergeTree{}, fmt.Errorf("forecast merging %s into %s: %w", theirs, ours, err)
	}
	fields := bytes.Split(out, []byte{0})
	if len(fields) == 0 || len(fields[0]) == 0 {
		return MergeTree{}, fmt.Errorf("forecast merging %s into %s: no tree in the answer", theirs, ours)
	}
	res := MergeTree{Tree: strings.TrimSpace(string(fields[0]))}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		if len(f) == 0 {
			break
		}
		if !seen[string(f)] {
			seen[string(f)] = true
			res.Conflicts = append(res.Conflicts, string(f))
		}
	}
	if err != nil && len(res.Conflicts) == 0 {
		return MergeTree{}, fmt.Errorf("forecast merging %s into %s: git reports conflicts but names none: %w", theirs, ours, err)
	}
	sort.Strings(res.Conflicts)
	return res, nil
}

// CheckoutChanges lists the tracked paths whose content differs from
// HEAD or the index in the worktree at dir (status --porcelain,
// config-neutral, untracked files not counted).
func (g *Git) CheckoutChanges(ctx context.Context, dir string) ([]string, error) {
	out, err := g.Run(ctx, Call{Dir: dir, Neutral: true, Args: []string{"status", "--porcelain", "-z", "--untracked-files=no", "--ignore-submodules=none"}})
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", dir, err)
	}
	return parseStatusZ(out), nil
}

// SwitchCheckout moves the checkout at dir from commit old to commit new
// (read-tree -m -u, a two-way merge that refuses to overwrite local
// changes or untracked files), config-neutral: no hook, no filter, no
// driver of any config runs.
func (g *Git) SwitchCheckout(ctx context.Context, dir, oldCommit, newCommit string) error {
	if _, err := g.Run(ctx, Call{Dir: dir, Neutral: true, Args: []string{"read-tree", "-m", "-u", oldCommit, newCommit}}); err != nil {
		return fmt.Errorf("update the checkout %s to %s: %w", dir, newCommit, err)
	}
	return nil
}

// SymbolicHead is the branch HEAD names in the worktree at dir (full ref),
// "" when HEAD is detached.
func (g *Git) SymbolicHead(ctx context.Context, dir string) (string, error) {
	out, err := g.Run(ctx, Call{Dir: dir, Args: []string{"symbolic-ref", "-q", "HEAD"}})
	if err != nil {
		if exitCodeOf(err) == 1 {
			return "", nil
		}
		return "", fmt.Errorf("read HEAD of %s: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
