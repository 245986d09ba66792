package engine

import (
	"context"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
)

// baseBranch is the branch the run starts from, for run.json's
// base_branch (what `runs merge` merges into): the --branch-from ref when
// it names a local branch, else the branch the repository has checked out;
// nil when HEAD is detached or the ref is no branch.
func (p *prepared) baseBranch(ctx context.Context) *string {
	g := gitops.New()
	if p.baseRef != "" {
		name := strings.TrimPrefix(p.baseRef, "refs/heads/")
		if strings.HasPrefix(name, "dirtywork/") {
			return nil // another run's branch: its own merge target applies
		}
		if _, ok, err := g.RefTip(ctx, p.repo.Root, "refs/heads/"+name); err == nil && ok {
			return &name
		}
		return nil
	}
	head, err := g.SymbolicHead(ctx, p.repo.Root)
	if err != nil || head == "" {
		return nil
	}
	name := strings.TrimPrefix(head, "refs/heads/")
	return &name
}
