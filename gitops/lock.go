package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// lockName is the lock file in the state directory.
const lockName = "lock"

// Backoff bounds while waiting for the repo lock. Lane operations hold it
// for the length of a few git commands, so a short poll costs little and
// keeps LockRepo cancellable without a goroutine parked in flock(2).
const (
	lockPollMin = 2 * time.Millisecond
	lockPollMax = 50 * time.Millisecond
)

// RepoLock is an exclusive lock on a repository's lane state, held across
// processes through flock(2) on <common>/dirtywork/lock. The kernel drops it
// when the holder dies, however it dies, so a crashed process never leaves
// the repository locked.
type RepoLock struct {
	mu sync.Mutex
	f  *os.File
}

// LockRepo takes the repository's lane lock, waiting while another process
// (or another RepoLock in this one) holds it, until ctx ends.
func LockRepo(ctx context.Context, repo Repo) (*RepoLock, error) {
	dir, err := ensureStateDir(repo)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, lockName)
	// os.OpenFile adds O_CLOEXEC, so git and other children never inherit
	// (and never prolong) the lock.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open repo lock %s: %w", path, err)
	}
	wait := lockPollMin
	for {
		err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &RepoLock{f: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			_ = f.Close() // not locked, nothing written: nothing to lose
			return nil, fmt.Errorf("lock repo lock %s: %w", path, err)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			_ = f.Close() // not locked, nothing written: nothing to lose
			return nil, fmt.Errorf("wait for repo lock %s: %w", path, ctx.Err())
		case <-timer.C:
		}
		wait = min(2*wait, lockPollMax)
	}
}

// Unlock releases the lock. It is safe to call more than once.
func (l *RepoLock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Unlock before closing: a descriptor duplicated elsewhere would
	// otherwise keep the lock alive.
	uerr := flock(f, unix.LOCK_UN)
	cerr := f.Close()
	if uerr != nil {
		return fmt.Errorf("unlock repo lock: %w", uerr)
	}
	if cerr != nil {
		return fmt.Errorf("close repo lock: %w", cerr)
	}
	return nil
}

// flock retries flock(2) interrupted by a signal.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// ensureStateDir creates <common>/dirtywork (0700) if needed and refuses
// one that is a symlink or not a directory.
func ensureStateDir(repo Repo) (string, error) {
	dir := repo.StateDir()
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("create lane state dir %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("inspect lane state dir %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("lane state dir %s %w: it is not a real directory", dir, ErrUnsafeFile)
	}
	return dir, nil
}
