package runs

import (
	"context"
	"fmt"

	"github.com/dirtywork/dirtywork/transcript"
)

// StrictFields are the run.json keys resume and snapshot need as strings
// (RE-2).
var StrictFields = []string{"slug", "repo", "worktree", "branch", "base_commit", "sandbox", "status"}

// Strict checks RE-2: every StrictFields key present as a string.
func (r *Run) Strict() error {
	rec := &r.Record
	vals := map[string]string{
		"slug": rec.Slug, "repo": rec.Repo, "worktree": rec.Worktree, "branch": rec.Branch,
		"base_commit": rec.BaseCommit, "sandbox": rec.Sandbox, "status": string(rec.Status),
	}
	for _, k := range StrictFields {
		if vals[k] == "" {
			return fmt.Errorf("run.json of '%s' is missing '%s'", r.Slug, k)
		}
	}
	return nil
}

// Guard applies RE-4's guards for use, shared with resume and
// --branch-from @slug: GuardPriorRun decides (a *PreflightError
// worded for the use), then the lane is opened as the store's other verbs
// open it.
func (s *Store) Guard(ctx context.Context, run *Run, use PriorUse) (*lane, error) {
	rf, err := transcript.ReadRun(run.Dir) // afresh: the run may have moved on since it was listed
	if err != nil {
		return nil, err
	}
	if _, err := GuardPriorRun(ctx, run.Dir, rf.Record, use); err != nil {
		return nil, err
	}
	return s.openLane(ctx, run)
}
