package runs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dirtywork/dirtywork/gitops"
)

// DiffSource says where a Diff came from.
type DiffSource string

// The sources of a diff.
const (
	// DiffFromWorktree: computed from the worktree's files against the
	// base commit (config-neutral, nothing of the worker's git read).
	DiffFromWorktree DiffSource = "worktree"
	// DiffFromPatch: the run's diff.patch (a docker run whose worktree
	// never received its tree).
	DiffFromPatch DiffSource = "diff.patch"
	// DiffNone: neither exists.
	DiffNone DiffSource = "none"
)

// Diff is what a run changed against its base commit.
type Diff struct {
	Slug   string
	Source DiffSource
	// Base is the base commit; Tree the tree of the run's files (worktree
	// source only).
	Base, Tree string
	// Files are the changed paths with line counts (none for a diff.patch
	// source beyond run.json's files_changed).
	Files []gitops.FileChange
	// Patch is the unified diff, at most MaxPatchBytes; Truncated says it
	// was cut.
	Patch     []byte
	Truncated bool
	// Risks are the changes that make tools run code later.
	Risks []Risk
	// Skipped and Dropped are what a tree cannot hold (FIFOs, devices)
	// and nested .git entries, left out.
	Skipped, Dropped []string
}

// DefaultMaxPatchBytes caps Diff.Patch when DiffOptions gives no cap.
const DefaultMaxPatchBytes = 10 << 20

// DiffOptions tune Diff.
type DiffOptions struct {
	// MaxPatchBytes caps the patch (DefaultMaxPatchBytes when 0; negative
	// leaves the patch out).
	MaxPatchBytes int
}

// Diff returns what the run changed: from its worktree when that holds
// the run's files (host runs, exported docker runs), else its diff.patch.
func (s *Store) Diff(ctx context.Context, slug string, opts DiffOptions) (*Diff, error) {
	run, err := s.Get(slug)
	if err != nil {
		return nil, err
	}
	return s.diff(ctx, run, opts)
}

func (s *Store) diff(ctx context.Context, run *Run, opts DiffOptions) (*Diff, error) {
	max := opts.MaxPatchBytes
	if max == 0 {
		max = DefaultMaxPatchBytes
	}
	d := &Diff{Slug: run.Slug, Base: run.Record.BaseCommit, Source: DiffNone}
	l, lerr := s.openLane(ctx, run)
	if lerr == nil && !onlyGitFile(l.worktree) && d.Base != "" {
		from := l.tip
		if from == "" {
			from = d.Base
		}
		t, err := s.tree(ctx, l, from)
		if err != nil {
			return nil, fmt.Errorf("diff of '%s': %w", run.Slug, err)
		}
		d.Source, d.Tree, d.Skipped, d.Dropped = DiffFromWorktree, t.Tree, t.Skipped, t.Dropped
		td, err := s.git.TreeDiff(ctx, l.repo.Root)
		if err != nil {
			return nil, fmt.Errorf("diff of '%s': %w", run.Slug, err)
		}
		if d.Files, err = td.Files(ctx, d.Base, t.Tree); err != nil {
			return nil, fmt.Errorf("diff of '%s': %w", run.Slug, err)
		}
		d.Risks = Risks(d.Files, s.blobReader(ctx, l.repo.Root))
		if max > 0 && len(d.Files) > 0 {
			w := &capWriter{max: max}
			if err := td.Patch(ctx, d.Base, t.Tree, w); err != nil {
				return nil, fmt.Errorf("diff of '%s': %w", run.Slug, err)
			}
			d.Patch, d.Truncated = w.buf.Bytes(), w.cut
		}
		return d, nil
	}
	patch := filepath.Join(run.Dir, "diff.patch")
	f, err := os.OpenFile(patch, os.O_RDONLY|noFollow, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return d, nil
		}
		return nil, fmt.Errorf("diff of '%s': %w", run.Slug, err)
	}
	defer func() { _ = f.Close() }() // read only
	d.Source = DiffFromPatch
	for _, p := range run.Record.FilesChanged {
		d.Files = append(d.Files, gitops.FileChange{Path: p})
	}
	if max > 0 {
		w := &capWriter{max: max}
		if _, err := io.Copy(w, f); err != nil {
			return nil, fmt.Errorf("diff of '%s': read %s: %w", run.Slug, patch, err)
		}
		d.Patch, d.Truncated = w.buf.Bytes(), w.cut
	}
	return d, nil
}

// capWriter keeps the first max bytes and drains the rest.
type capWriter struct {
	buf bytes.Buffer
	max int
	cut bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		if len(p) > room {
			w.buf.Write(p[:room])
			w.cut = true
		} else {
			w.buf.Write(p)
		}
	} else if len(p) > 0 {
		w.cut = true
	}
	return len(p), nil
}
