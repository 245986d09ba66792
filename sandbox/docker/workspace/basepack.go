package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
)

// packDirPrefix starts the name of every base pack's temporary directory.
const packDirPrefix = "dirtywork-pack-"

// packOwnerName is the file in a pack's directory its run holds an
// exclusive lock on while it lasts: a run killed before it removed its
// pack lets go of the lock with its last file descriptor.
const packOwnerName = ".owner"

// stalePackAge is how old a pack directory without an owner file must be
// before it counts as left behind: a younger one may be a run's that is
// being made right now.
const stalePackAge = time.Minute

// basePack is the base commit's objects packed and indexed on the host,
// ready to upload: the worker's repository reads them through
// objects/info/alternates from the read-only tools volume, so a large pack
// never lands on the /gitdir tmpfs and the worker cannot alter it.
type basePack struct {
	// Dir is the temporary directory holding the files; Close removes it.
	Dir string
	// Name is the pack's base name, pack-<checksum>.
	Name string
	// Shallow is the path of the shallow file, "" with history.
	Shallow string
	// Bytes is the pack's size.
	Bytes int64
	// owner holds the lock on Dir/.owner until Close.
	owner *os.File
}

// makeBasePack packs commit (only it, or with its history) from the host
// repository into a new temporary directory and indexes it there. Both
// steps read operator content only; the index is built by host git on a
// pack this process just wrote, never on anything a worker touched.
func makeBasePack(ctx context.Context, g *gitops.Git, repoRoot, commit string, withHistory bool) (*basePack, error) {
	// What runs killed before they removed their pack left goes first; it
	// costs a directory read.
	SweepStalePacks(os.TempDir())
	dir, err := os.MkdirTemp("", packDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("make a directory for the base pack: %w", err)
	}
	owner, err := lockOwner(dir)
	if err != nil {
		_ = os.RemoveAll(dir) // just made, holds nothing
		return nil, fmt.Errorf("make a directory for the base pack: lock it: %w", err)
	}
	bp := &basePack{Dir: dir, owner: owner}
	if err := bp.fill(ctx, g, repoRoot, commit, withHistory); err != nil {
		bp.Close()
		return nil, err
	}
	return bp, nil
}

func (bp *basePack) fill(ctx context.Context, g *gitops.Git, repoRoot, commit string, withHistory bool) error {
	p, err := g.WriteBasePack(ctx, repoRoot, commit, withHistory, bp.Dir)
	if err != nil {
		return err
	}
	bp.Name, bp.Shallow, bp.Bytes = p.Name, p.Shallow, p.Bytes
	return nil
}

// Close removes the pack's files.
func (bp *basePack) Close() {
	_ = os.RemoveAll(bp.Dir) // a temporary directory; nothing to keep
	if bp.owner != nil {
		_ = bp.owner.Close() // the lock goes last, with the directory gone
	}
}

// lockOwner takes the owner lock of a new pack directory. The lock is
// taken on a file of another name, then renamed into place: a concurrent
// sweep opens only .owner, so it never finds the file before it is locked.
func lockOwner(dir string) (*os.File, error) {
	pending := filepath.Join(dir, packOwnerName+".pending")
	owner, err := os.OpenFile(pending, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(owner.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		err = os.Rename(pending, filepath.Join(dir, packOwnerName))
	}
	if err != nil {
		_ = owner.Close()
		return nil, err
	}
	return owner, nil
}

// SweepStalePacks removes the base pack directories that runs which died
// before removing them left in dir (the system's temporary directory):
// those whose owner lock can be taken, and those old enough that never got
// one. It returns the directories removed; what cannot be removed stays
// for the next sweep.
func SweepStalePacks(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), packDirPrefix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(filepath.Join(path, packOwnerName))
		if err != nil {
			info, ierr := e.Info()
			if os.IsNotExist(err) && ierr == nil && time.Since(info.ModTime()) > stalePackAge && os.RemoveAll(path) == nil {
				removed = append(removed, path)
			}
			continue
		}
		// Taking the lock means its run is gone: nobody else holds it.
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && os.RemoveAll(path) == nil {
			removed = append(removed, path)
		}
		_ = f.Close()
	}
	return removed
}
