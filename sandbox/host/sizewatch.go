package host

import (
	"context"
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
	fs       *fsops.FS
	limits   fsops.Limits
	onBreach func(reason string)

	mu      sync.Mutex
	cancel  context.CancelFunc // guarded by mu: the running watch's
	done    chan struct{}      // guarded by mu: closed when it ended
	stopped bool               // guarded by mu
}

func newSizeWatch(f *fsops.FS, limits fsops.Limits, onBreach func(string)) *sizeWatch {
	return &sizeWatch{fs: f, limits: limits, onBreach: onBreach}
}

// begin starts measuring; a watch already running is left as it is.
func (s *sizeWatch) begin() {
	if s.limits.MaxBytes <= 0 && s.limits.MaxEntries <= 0 {
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
		m, err := s.fs.Measure(ctx, s.limits)
		if ctx.Err() != nil {
			return
		}
		if err == nil && m.Violation != "" {
			s.onBreach(m.Violation)
			return
		}
		// The next walk starts an interval after this one started, at
		// once when this one took longer.
		t.Reset(max(0, sizeWatchInterval-time.Since(started)))
	}
}
