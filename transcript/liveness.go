package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// livenessName is the file in a run directory whose exclusive flock the run's
// process holds for its whole life.
const livenessName = ".alive"

// acquireGrace is how long AcquireLiveness keeps retrying a lock that is
// taken: IsAlive briefly holds a shared lock while it probes, and a run that
// starts at that moment must not mistake the probe for a live owner. A
// variable so tests can change it.
var acquireGrace = 250 * time.Millisecond

// ErrRunAlive marks a run whose liveness lock is held by a running process.
var ErrRunAlive = errors.New("run is still alive")

// LivenessLock is the proof that this process owns a run. The kernel drops
// it when the process dies, however it dies, so liveness is immune to pid
// reuse.
type LivenessLock struct {
	mu sync.Mutex
	f  *os.File
}

// AcquireLiveness marks the run in runDir as alive for as long as this
// process lives or until Release. If another process (or another
// LivenessLock in this one) holds it, the error matches ErrRunAlive.
//
// The lock file is opened close-on-exec, so processes started by the run
// never inherit the lock and cannot keep a dead run looking alive.
func AcquireLiveness(runDir string) (*LivenessLock, error) {
	path := filepath.Join(runDir, livenessName)
	// os.OpenFile always adds O_CLOEXEC on Unix; that is what keeps children
	// from inheriting the lock.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the liveness lock of run '%s': %w", filepath.Base(runDir), err)
	}
	deadline := time.Now().Add(acquireGrace)
	for {
		err := flockFile(f, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &LivenessLock{f: f}, nil
		}
		// On failure the lock file was never locked or written: closing it
		// loses nothing, and the lock error is the one to report.
		if !errors.Is(err, unix.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock the liveness lock of run '%s': %w", filepath.Base(runDir), err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, &runError{
				kind: ErrRunAlive,
				msg:  fmt.Sprintf("run '%s' is still alive: another process holds %s", filepath.Base(runDir), path),
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Release gives up the liveness lock. It is safe to call more than once.
func (l *LivenessLock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Unlock explicitly: closing alone would keep the lock if the descriptor
	// had been duplicated.
	unlockErr := flockFile(f, unix.LOCK_UN)
	closeErr := f.Close()
	if err := errors.Join(unlockErr, closeErr); err != nil {
		return fmt.Errorf("release liveness lock %s: %w", f.Name(), err)
	}
	return nil
}

// IsAlive reports whether a process holds the liveness lock of the run in
// runDir. A run without a liveness file was never started (or predates the
// lock) and is not alive.
func IsAlive(runDir string) (bool, error) {
	path := filepath.Join(runDir, livenessName)
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open the liveness lock of run '%s': %w", filepath.Base(runDir), err)
	}
	defer func() { _ = f.Close() }() // only probed, never written
	// Probe with a shared lock: it conflicts with the owner's exclusive lock
	// but not with other probes, so two observers never see each other as
	// a live run.
	err = flockFile(f, unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("probe the liveness lock of run '%s': %w", filepath.Base(runDir), err)
	}
	_ = flockFile(f, unix.LOCK_UN)
	return false, nil
}

// flockFile applies flock(2) to f, retrying when a signal interrupts it.
func flockFile(f *os.File, how int) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	err = conn.Control(func(fd uintptr) {
		for {
			opErr = unix.Flock(int(fd), how)
			if !errors.Is(opErr, unix.EINTR) {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return opErr
}
