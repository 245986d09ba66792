package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// ErrPreResumeStash marks a worktree with a pre-resume stash beside it.
var ErrPreResumeStash = errors.New("pre-resume stash")

// Guard applies RE-4's guards, shared by resume, snapshot and
// --branch-from @slug; verb and gerund word the refusals ("resume",
// "resuming"). It returns the checked lane.
func (s *Store) Guard(ctx context.Context, run *Run, verb, gerund string) (*lane, error) {
	rec := &run.Record
	if rec.Status == StatusRunning && run.Alive {
		return nil, fmt.Errorf("'%s' is still in progress; wait for it to end before %s", run.Slug, gerund)
	}
	fi, err := os.Lstat(rec.Worktree)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("worktree %s of '%s' is missing; nothing to %s", rec.Worktree, run.Slug, verb)
	}
	if _, err := os.Lstat(filepath.Join(rec.Worktree, ".git")); err != nil {
		return nil, fmt.Errorf("worktree %s of '%s' has no .git; nothing to %s", rec.Worktree, run.Slug, verb)
	}
	l, err := s.openLane(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("worktree %s of '%s' is not a linked worktree of %s: %w", rec.Worktree, run.Slug, rec.Repo, err)
	}
	if stashes := PreResumeStashes(rec.Worktree); len(stashes) > 0 {
		return nil, fmt.Errorf("%w beside the worktree of '%s' (%s); move it away before %s",
			ErrPreResumeStash, run.Slug, strings.Join(stashes, ", "), gerund)
	}
	return l, nil
}

// PreResumeStashes lists the <worktree>.pre-resume-* siblings, sorted.
func PreResumeStashes(worktree string) []string {
	m, _ := filepath.Glob(worktree + ".pre-resume-*")
	sort.Strings(m)
	return m
}
