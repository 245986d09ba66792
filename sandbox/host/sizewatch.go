package host

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/fsops"
)

// sizeWatchInterval is how often the tree is measured while a command
// runs: twice a second, so a breach is found within a second of happening
// even while a walk of a large tree takes a while.
const sizeWatchInterval = 500 * time.Millisecond

// sizeWatch measures the worktree from the host while a command runs: the
// tool server's own walk comes only after the command, and a command that
// fills the disk must not run on until then. The host walks the tree
// itself (no link followed), so nothing in the jail can forge the figure.
// A breach calls onBreach once, which kills the jail.
type sizeWatch struct {
	// measure walks what is watched and returns the breach it found, ""
	// for none; nil watches nothing.
	measure  func(ctx context.Context) (string, error)
	onBreach func(reason string)

	mu      sync.Mutex
	cancel  context.CancelFunc // guarded by mu: the running watch's
	done    chan struct{}      // guarded by mu: closed when it ended
	stopped bool               // guarded by mu
}

func newSizeWatch(measure func(context.Context) (string, error), onBreach func(string)) *sizeWatch {
	return &sizeWatch{measure: measure, onBreach: onBreach}
}

// begin starts measuring; a watch already running is left as it is.
func (s *sizeWatch) begin() {
	if s.measure == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	go func() {
		defer close(done)
		s.run(ctx)
	}()
}

// end stops measuring without waiting for a walk under way: its verdict
// no longer matters once the server's own walk follows the command.
func (s *sizeWatch) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
}

// stop ends the watch for good and waits for its walk to end, so nothing
// reads the tree afterwards.
func (s *sizeWatch) stop() {
	s.mu.Lock()
	s.stopped = true
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	done := s.done
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

// DefaultGitDirBytes caps the worker's git dir when the config gives no
// cap: docker mode's --gitdir-size default.
const DefaultGitDirBytes = 512 << 20

// gitDirEntriesSlack is what a git dir holds beside its objects: hooks,
// info, refs, logs and the objects' fan-out directories.
const gitDirEntriesSlack = 1024

// gitDirLimits are the caps of the worker's git dir: GitDirBytes, and
// room for committing the whole tree the budget allows (a blob per file,
// a tree per directory) beside the git dir's own files; no entries cap
// when the tree has none.
func (w *Workspace) gitDirLimits() fsops.Limits {
	l := fsops.Limits{MaxBytes: orDefault(w.cfg.GitDirBytes, DefaultGitDirBytes)}
	if n := w.cfg.Limits.MaxEntries; n > 0 {
		l.MaxEntries = 2*n + gitDirEntriesSlack
	}
	return l
}

// measure walks the tree, then the worker's git dir, against their caps
// and returns the first breach, "" for none. Both are on the host's disk;
// only the tree's is the tool server's business too.
func (w *Workspace) measure(ctx context.Context) (string, error) {
	if w.cfg.Limits.MaxBytes > 0 || w.cfg.Limits.MaxEntries > 0 {
		m, err := w.fs.Measure(ctx, fsops.Limits{MaxBytes: w.cfg.Limits.MaxBytes, MaxEntries: w.cfg.Limits.MaxEntries})
		if err != nil || m.Violation != "" {
			return m.Violation, err
		}
	}
	return w.measureGitDir(ctx)
}

// measureGitDir walks the worker's git dir against gitDirLimits.
func (w *Workspace) measureGitDir(ctx context.Context) (string, error) {
	limits := w.gitDirLimits()
	m, err := w.gitFS.Measure(ctx, limits)
	if err != nil || m.Violation == "" {
		return "", err
	}
	if limits.MaxEntries > 0 && m.Entries > limits.MaxEntries {
		return fmt.Sprintf("the worker's git dir exceeds %d entries", limits.MaxEntries), nil
	}
	return fmt.Sprintf("the worker's git dir exceeds %d MB (--gitdir-size)", limits.MaxBytes>>20), nil
}

func (s *sizeWatch) run(ctx context.Context) {
	t := time.NewTimer(sizeWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		started := time.Now()
		breach, err := s.measure(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil && breach != "" {
			s.onBreach(breach)
			return
		}
		// The next walk starts an interval after this one started, at
		// once when this one took longer.
		t.Reset(max(0, sizeWatchInterval-time.Since(started)))
	}
}
