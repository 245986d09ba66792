package engine

import (
	"context"
	"fmt"
	"os"

	"github.com/dirtywork/dirtywork/gitops"
)

// fillEmptyLane checks the base commit out into a lane that holds only its
// .git file, so that closing it finds it clean and removes it. A docker
// lane is made without a checkout, and git reports every file of such a
// lane as a staged deletion, which the lane manager rightly refuses to
// throw away; when the sandbox never started, there is nothing to keep.
// A lane holding anything else is left alone.
func fillEmptyLane(ctx context.Context, lane gitops.Lane) error {
	entries, err := os.ReadDir(lane.Worktree)
	if err != nil {
		return fmt.Errorf("list lane %s: %w", lane.Worktree, err)
	}
	if len(entries) != 1 || entries[0].Name() != ".git" || !entries[0].Type().IsRegular() {
		return nil
	}
	// Config-neutral and pinned to the lane: the content is the
	// operator's own base commit, but no filter or hook needs to run to
	// write it back out only to delete it.
	_, err = gitops.New().Run(ctx, gitops.Call{
		Dir: lane.Worktree, Args: []string{"read-tree", "--reset", "-u", lane.BaseCommit},
		Neutral: true, GitDir: lane.GitDir, WorkTree: lane.Worktree,
	})
	if err != nil {
		return fmt.Errorf("check out the base of lane %s: %w", lane.Worktree, err)
	}
	return nil
}
