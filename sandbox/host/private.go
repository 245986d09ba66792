package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/workerrepo"
)

// privateRepo is the worker's own repository: a git dir of its own in a
// directory of the run's (a private temporary one, so that a full runs
// disk does not stop the sandbox), never the host repository's. The worker's git sees it
// at <worktree>/.git inside the jail through a read-only gitfile bound
// over the host's .git file, so neither that file, nor the worktree's
// admin dir, nor the common dir is ever within the worker's reach; the
// base commit's objects are borrowed read-only from a pack dirtywork
// made. It is removed when the workspace closes.
type privateRepo struct {
	// dir holds everything: a new 0700 directory under the system's
	// temporary directory.
	dir string
	// objects is the base pack's object directory (read-only in the
	// jail); shallow its shallow file, "" with history.
	objects, shallow string
	// gitDir is the worker's git dir (read-write in the jail).
	gitDir string
	// gitfile says "gitdir: <gitDir>"; the jail shows it at
	// <worktree>/.git.
	gitfile string
	// worktree is the tree the repository describes.
	worktree string
	// tmp is TMPDIR where the jail has no private /tmp (no jail at all).
	tmp string
}

// newPrivateRepo makes the directories of the worker's repository, empty:
// the base pack comes with fillBase, the git dir from the script run in
// the jail.
func newPrivateRepo(worktree string) (privateRepo, error) {
	dir, err := os.MkdirTemp("", "dirtywork-worker-")
	if err != nil {
		return privateRepo{}, fmt.Errorf("make the worker's repository: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved // the jail binds resolved paths
	}
	p := privateRepo{
		dir:      dir,
		objects:  filepath.Join(dir, "base", "objects"),
		gitDir:   filepath.Join(dir, "git"),
		gitfile:  filepath.Join(dir, "gitfile"),
		worktree: worktree,
		tmp:      filepath.Join(dir, "tmp"),
	}
	for _, d := range []string{filepath.Join(p.objects, "pack"), p.gitDir, p.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			_ = os.RemoveAll(dir)
			return privateRepo{}, fmt.Errorf("make the worker's repository: %w", err)
		}
	}
	if err := os.WriteFile(p.gitfile, []byte("gitdir: "+p.gitDir+"\n"), 0o444); err != nil {
		_ = os.RemoveAll(dir)
		return privateRepo{}, fmt.Errorf("make the worker's repository: %w", err)
	}
	return p, nil
}

// fillBase packs the base commit (with its history when asked) from the
// host repository into the base object directory.
func (p *privateRepo) fillBase(ctx context.Context, g *gitops.Git, repoRoot, commit string, withHistory bool) error {
	bp, err := g.WriteBasePack(ctx, repoRoot, commit, withHistory, filepath.Join(p.objects, "pack"))
	if err != nil {
		return fmt.Errorf("pack the base commit for the worker: %w", err)
	}
	p.shallow = bp.Shallow
	return nil
}

// script is the shell script, run in the jail, that makes the worker's
// repository and, with populate, checks the base tree out.
func (p *privateRepo) script(branch, base string, shallow, populate bool) (string, error) {
	r := workerrepo.Repo{GitDir: p.gitDir, WorkTree: p.worktree, BaseObjects: p.objects, Branch: branch, Base: base}
	if shallow {
		r.Shallow = p.shallow
	}
	return workerrepo.Script(r, populate)
}

// remove deletes the worker's repository.
func (p *privateRepo) remove() error {
	if p.dir == "" {
		return nil
	}
	if err := removeAll(p.dir); err != nil {
		return fmt.Errorf("remove the worker's repository %s: %w", p.dir, err)
	}
	return nil
}
