package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/transcript"
)

// SnapshotResult is what Snapshot did.
type SnapshotResult struct {
	Slug   string `json:"slug"`
	Branch string `json:"branch"`
	// Commit is the new tip; Changed is false when there was nothing to
	// snapshot.
	Commit  string `json:"commit"`
	Changed bool   `json:"changed"`
	// Skipped are entries a tree cannot hold (FIFOs, devices), left out.
	Skipped []string `json:"skipped"`
}

// ErrEmptyTree refuses a snapshot that would commit the deletion of
// every file (gitops' own, so both snapshots match the same error).
var ErrEmptyTree = gitops.ErrEmptyTree

// emptyTree is git's empty tree (SHA-1).
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// Snapshot commits the run's worktree onto its branch: strict
// run.json, RE-4's guards, plumbing only on a temporary index. A worktree
// with no files over a branch that has some is refused (ErrEmptyTree):
// that is a docker run never exported, not the worker deleting
// everything.
func (s *Store) Snapshot(ctx context.Context, slug string) (*SnapshotResult, error) {
	run, err := s.Get(slug)
	if err != nil {
		return nil, err
	}
	if err := run.Strict(); err != nil {
		return nil, err
	}
	l, err := s.Guard(ctx, run, UseSnapshot)
	if err != nil {
		return nil, err
	}
	if _, err := s.quarantineCrashed(run); err != nil {
		return nil, fmt.Errorf("snapshot '%s': %w", slug, err)
	}
	if l.tip == "" {
		return nil, fmt.Errorf("branch %s of '%s' does not exist; nothing to snapshot", run.Record.Branch, slug)
	}
	t, err := s.tree(ctx, l, l.tip)
	if err != nil {
		return nil, fmt.Errorf("snapshot '%s': %w", slug, err)
	}
	res := &SnapshotResult{Slug: slug, Branch: run.Record.Branch, Commit: l.tip, Skipped: nonRegular(l.worktree)}
	tipTree, err := s.git.TreeOf(ctx, l.repo.Root, l.tip)
	if err != nil {
		return nil, err
	}
	if t.Tree == tipTree {
		return res, nil
	}
	if t.Tree == emptyTree {
		return nil, fmt.Errorf("%w: the worktree of '%s' holds no files but %s does; refusing to commit the deletion of everything (export the run first?)", ErrEmptyTree, slug, run.Record.Branch)
	}
	id := s.identity(ctx, l.repo.Root)
	msg := fmt.Sprintf("dirtywork snapshot of run %s\n\nDirtywork-Run: %s\nDirtywork-Model: %s\n", slug, slug, orUnknown(run.Record.Model))
	commit, err := s.git.CommitTree(ctx, l.repo.Root, t.Tree, msg, id.Name, id.Email, l.tip)
	if err != nil {
		return nil, err
	}
	if err := s.git.UpdateRef(ctx, l.repo.Root, l.branch, commit, l.tip, "dirtywork snapshot "+slug); err != nil {
		return nil, fmt.Errorf("snapshot '%s': the branch moved meanwhile: %w", slug, err)
	}
	if admin := gitops.AdminDir(l.repo.CommonDir, l.worktree); admin != "" {
		if err := s.git.ResetIndex(ctx, admin, l.worktree, commit); err != nil {
			return nil, err
		}
	}
	res.Commit, res.Changed = commit, true
	return res, nil
}

// Stop asks a live run to end (SIGINT to its process: the run finalizes
// and records its end as interrupted). A run that is not alive is
// ErrNotAlive.
func (s *Store) Stop(slug string) error {
	run, err := s.Get(slug)
	if err != nil {
		return err
	}
	if !run.Alive {
		return fmt.Errorf("'%s': %w", slug, ErrNotAlive)
	}
	if run.Record.Status != transcript.StatusRunning {
		// Its lock is held by another process (a resume of it), not by the
		// process host_pid names: that pid is not to be signalled.
		return fmt.Errorf("'%s' has ended (%s); the process holding it is another run's: stop that one", slug, run.Record.Status)
	}
	if run.Record.HostPID == nil || *run.Record.HostPID <= 0 {
		return fmt.Errorf("'%s' records no host_pid to signal", slug)
	}
	if err := syscall.Kill(int(*run.Record.HostPID), syscall.SIGINT); err != nil {
		return fmt.Errorf("stop '%s' (pid %d): %w", slug, *run.Record.HostPID, err)
	}
	return nil
}

// ErrNotAlive refuses to stop a run that is not running.
var ErrNotAlive = errors.New("not running")

// Export exports a docker run's kept volume into its worktree (R-5, R-6;
// ExportRun), for runs under the environment's runs root.
func (s *Store) Export(ctx context.Context, slug string, opts ExportOptions) (*ExportResult, error) {
	if opts.DefaultImage == "" {
		opts.DefaultImage = s.defaultImage
	}
	opts.RunsRoot = s.root
	return s.export(ctx, slug, opts)
}

// nonRegular lists the entries of the worktree a tree cannot hold (FIFOs,
// sockets, devices), which git passes over in silence; .git entries are
// not looked into.
func nonRegular(root string) []string {
	out := []string{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if strings.EqualFold(d.Name(), ".git") && p != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if t := d.Type(); t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0 {
			if rel, err := filepath.Rel(root, p); err == nil {
				out = append(out, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return out
}
