package engine

import (
	"context"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/sandbox/pause"
)

// finalizeWork is finalize, with RE-9's stash around a docker resume's
// export: that export writes the container's whole tree (the prior work
// it was seeded with and the new work) into a lane that must hold nothing
// but its .git file, so the prior work moves aside first, into
// <worktree>.pre-resume-<slug>. A done export makes the stash redundant
// and it goes; otherwise the lane is cleared and the prior work moved back,
// and the volume (kept by the sandbox) holds the rest.
func (r *Runner) finalizeWork(ctx context.Context, p *prepared, ws sandbox.Workspace) (*sandbox.Finalization, error) {
	if p.resume == nil || p.spec.Sandbox != "docker" {
		return finalize(ctx, ws)
	}
	stash, err := runs.SetAside(p.resume.prior.Worktree, p.slug)
	if err != nil {
		// Without a stash the export meets the prior work in the lane
		// and refuses, touching nothing; the volume is kept.
		r.warnf("cannot set the prior work aside in %s: %v", p.resume.prior.Worktree+runs.PreResumeMarker+p.slug, err)
		return finalize(ctx, ws)
	}
	pause.At(pause.Stash)
	fin, ferr := finalize(ctx, ws)
	if ferr == nil && fin != nil && fin.ExportStatus == "ok" {
		// The export holds everything the stash did: it goes, while the
		// run records its end and the sandbox closes (a large tree takes
		// seconds). The run's result waits for it (waitStashGone).
		p.stashGone = make(chan struct{})
		go func() {
			defer close(p.stashGone)
			if err := stash.Discard(); err != nil {
				r.warnf("the export is done, but %v", err)
			}
		}()
		return fin, nil
	}
	if err := export.Clear(stash.Worktree); err != nil {
		r.warnf("%v; the prior work stays in %s", err, stash.Path)
		return fin, ferr
	}
	if err := stash.Restore(); err != nil {
		r.warnf("%v", err)
	}
	return fin, ferr
}

// waitStashGone waits for a done export's stash to be removed, if one is
// being removed.
func (p *prepared) waitStashGone() {
	if p.stashGone != nil {
		<-p.stashGone
	}
}
