package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

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
	// owner holds an exclusive lock on <dir>/.owner while the run lasts:
	// a directory whose lock anyone can take was left by a run that died
	// (killed), and the next run removes it (sweepStaleRepos).
	owner *os.File
}

// workerDirPrefix starts the name of every worker repository's directory.
const workerDirPrefix = "dirtywork-worker-"

// staleAge is how old a worker directory without an owner file must be
// before it counts as left behind: a younger one may be a run's that is
// being made right now.
const staleAge = time.Minute

// newPrivateRepo makes the directories of the worker's repository, empty:
// the base pack comes with fillBase, the git dir from the script run in
// the jail.
func newPrivateRepo(worktree string) (privateRepo, error) {
	dir, err := os.MkdirTemp("", workerDirPrefix)
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
	// The lock is taken on a file of another name, then renamed into
	// place: a concurrent run's sweep opens only .owner, so it never finds
	// the file before it is locked (it would take the lock, remove this
	// directory, and leave this run unable to lock).
	pending := filepath.Join(dir, ".owner.pending")
	owner, err := os.OpenFile(pending, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = syscall.Flock(int(owner.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err == nil {
		err = os.Rename(pending, filepath.Join(dir, ".owner"))
	}
	if err != nil {
		if owner != nil {
			_ = owner.Close()
		}
		_ = os.RemoveAll(dir)
		return privateRepo{}, fmt.Errorf("make the worker's repository: lock it: %w", err)
	}
	p.owner = owner
	return p, nil
}

// sweepStaleRepos removes the worker repositories that runs which died
// left in dir (the system's temporary directory).
func sweepStaleRepos(dir string) { SweepStaleRepos(dir) }

// SweepStaleRepos removes the worker repositories that runs which died
// left in dir (the system's temporary directory): those whose owner lock
// can be taken, and those old enough that never got one. What cannot be
// read or removed (another user's) is left alone. It returns the
// directories removed.
func SweepStaleRepos(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), workerDirPrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(filepath.Join(path, ".owner"))
		if err != nil {
			if info, ierr := e.Info(); ierr == nil && time.Since(info.ModTime()) > staleAge && os.IsNotExist(err) && removeAll(path) == nil {
				removed = append(removed, path)
			}
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && removeAll(path) == nil {
			removed = append(removed, path) // its run is gone: nobody holds the lock
		}
		_ = f.Close()
	}
	return removed
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
	err := removeAll(p.dir)
	if p.owner != nil {
		_ = p.owner.Close() // the lock goes last, with the directory gone
	}
	if err != nil {
		return fmt.Errorf("remove the worker's repository %s: %w", p.dir, err)
	}
	return nil
}
