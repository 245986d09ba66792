package host

import (
	"context"

	"github.com/dirtywork/dirtywork/sandbox/seal"
)

// prehash is the reading of the worktree's files ahead of its seal (see
// seal.Prehash), begun once the baseline is marked and done while the
// worker works, so that the seal after the last reply reads only what
// changed.
type prehash struct {
	cancel context.CancelFunc
	done   chan struct{}
	digest *seal.Digests
}

// startPrehash begins reading the worktree's files against the baseline
// w.since.
// A workspace already closed reads nothing.
func (w *Workspace) startPrehash() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	ctx, cancel := context.WithCancel(w.beginCtx)
	p := &prehash{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.digest = seal.Prehash(ctx, w.worktree, w.since, true)
	}()
	w.pre = p
}

// takeDigests stops the reading ahead and returns what it took: the
// first seal stops it, later ones take the same digests (each still
// vouches only for a file unchanged since the baseline).
func (w *Workspace) takeDigests() *seal.Digests {
	w.mu.Lock()
	p := w.pre
	w.mu.Unlock()
	if p == nil {
		return nil
	}
	p.cancel()
	<-p.done
	return p.digest
}
