package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
	wt := p.resume.prior.Worktree
	stash := wt + runs.PreResumeMarker + p.slug
	// A name never used before (the slug is new): an existing entry is
	// someone else's, and left alone.
	if err := os.Mkdir(stash, 0o700); err != nil {
		// Without a stash the export meets the prior work in the lane
		// and refuses, touching nothing; the volume is kept.
		r.warnf("cannot set the prior work aside in %s: %v", stash, err)
		return finalize(ctx, ws)
	}
	moved, err := moveEntries(wt, stash)
	if err != nil {
		if rerr := restoreStash(wt, stash, moved); rerr != nil {
			r.warnf("%v", rerr)
		}
		r.warnf("cannot set the prior work aside in %s: %v", stash, err)
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
			if err := os.RemoveAll(stash); err != nil {
				r.warnf("the export is done, but the stash %s could not be removed: %v (remove it by hand)", stash, err)
			}
		}()
		return fin, nil
	}
	if err := export.Clear(wt); err != nil {
		r.warnf("%v; the prior work stays in %s", err, stash)
		return fin, ferr
	}
	if err := restoreStash(wt, stash, nil); err != nil {
		r.warnf("%v", err)
	}
	return fin, ferr
}

// moveEntries renames every entry of dir but .git into stash and returns
// their names, in the order moved.
func moveEntries(dir, stash string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var moved []string
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(stash, e.Name())); err != nil {
			return moved, err
		}
		moved = append(moved, e.Name())
	}
	return moved, nil
}

// restoreStash moves names (every entry of the stash when nil) back into
// dir and removes the then empty stash.
func restoreStash(dir, stash string, names []string) error {
	if names == nil {
		entries, err := os.ReadDir(stash)
		if err != nil {
			return fmt.Errorf("restore the prior work from %s: %w", stash, err)
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	var errs []error
	for _, n := range names {
		if err := os.Rename(filepath.Join(stash, n), filepath.Join(dir, n)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("restore the prior work from %s: %w (what is left stays there)", stash, errors.Join(errs...))
	}
	if err := os.Remove(stash); err != nil {
		return fmt.Errorf("remove the emptied stash %s: %w", stash, err)
	}
	return nil
}

// waitStashGone waits for a done export's stash to be removed, if one is
// being removed.
func (p *prepared) waitStashGone() {
	if p.stashGone != nil {
		<-p.stashGone
	}
}
