package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/transcript"
)

// Started is a run that exists for good (see Runner.OnStarted).
type Started struct {
	Slug       string `json:"slug"`
	RunDir     string `json:"run_dir"`
	Transcript string `json:"transcript"`
	// PID is the process running it (run.json's host_pid).
	PID int `json:"pid"`
}

// plannedLane is the lane the run will work in, as run.json records it
// before the lane exists: a resume's is the prior run's; a new lane's
// names follow from the slug, and its base is the repository's HEAD when
// the run starts from it ("" when another ref decides).
func (r *Runner) plannedLane(p *prepared, slug string) (gitops.Lane, error) {
	if pr := p.resume; pr != nil {
		return gitops.Lane{
			ID: pr.prior.Slug, Worktree: pr.prior.Worktree, Branch: pr.prior.Branch,
			BaseCommit: pr.base, GitDir: pr.prior.GitDir,
		}, nil
	}
	enc, err := gitops.EncodeLaneID(slug)
	if err != nil {
		return gitops.Lane{}, err
	}
	l := gitops.Lane{
		ID: slug, Worktree: filepath.Join(p.repo.LanesDir(), gitops.LaneWorktreeName(enc)), Branch: gitops.LaneBranch(enc),
	}
	if p.baseRef == "" {
		l.BaseCommit = p.repo.Head
	}
	return l, nil
}

// openLane makes the run's lane, and returns the function that removes it
// again while no worker has touched it. A resume works in the prior run's
// lane, which is never removed (RE-6).
func (r *Runner) openLane(ctx context.Context, p *prepared, slug string) (gitops.Lane, func(), error) {
	if p.resume != nil {
		l, err := r.plannedLane(p, slug)
		return l, func() {}, err
	}
	lanes := gitops.NewManager(nil, p.repo)
	lane, err := lanes.Open(ctx, gitops.OpenOptions{
		ID: slug, From: p.baseRef, OwnerPID: os.Getpid(), OwnerSession: r.getenv("DIRTYWORK_SESSION"),
		// Either sandbox brings its own tree: the lane holds only its .git
		// file until the container's export writes the worker's files into
		// it (E-7), or the host jail checks the base tree out into it while
		// the first model request is out.
		NoCheckout: true,
	})
	if err != nil {
		return gitops.Lane{}, nil, err
	}
	closeLane := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = lanes.Close(cctx, slug)
	}
	return lane, closeLane, nil
}

// markResumedBy records in the prior run's run.json that this run resumed
// it (RE-6); ended is left as it was.
func (r *Runner) markResumedBy(p *prepared, slug string) error {
	pr := p.resume
	if pr == nil {
		return nil
	}
	_, err := transcript.UpdateRun(pr.prior.Dir, func(rec transcript.RunRecord) ([]any, error) {
		pr.resumedBy = rec.ResumedBy
		return []any{transcript.ResumedByFields{ResumedBy: &slug}}, nil
	})
	if err != nil {
		return fmt.Errorf("record the resume in run.json of '%s': %w", pr.prior.Slug, err)
	}
	return nil
}

// undoResumedBy puts the prior run's resumed_by back as it was, for a
// resume refused after markResumedBy.
func (r *Runner) undoResumedBy(p *prepared, slug string) {
	pr := p.resume
	if pr == nil {
		return
	}
	_, _ = transcript.UpdateRun(pr.prior.Dir, func(rec transcript.RunRecord) ([]any, error) {
		if rec.ResumedBy == nil || *rec.ResumedBy != slug {
			return nil, nil
		}
		return []any{transcript.ResumedByFields{ResumedBy: pr.resumedBy}}, nil
	})
}

// keep writes the run's result into its run dir; a failure is evidence
// lost, reported with the result itself.
func (r *Runner) keep(runDir string, payload *Payload) {
	if err := keepResult(runDir, payload); err != nil {
		r.evidenceLost(payload, []string{ResultName + ": " + err.Error()})
	}
}
