package host

import (
	"context"
)

// verifyAhead is a verify jail being made ahead of the verify that will
// take it: making a session's git dir and starting its jail is most of a
// verify's cost, and none of it depends on the tree. The jail is the
// worker's neighbour, never its guest: its own namespaces, /tmp and home,
// its session under the private directory the worker's jail does not
// show, and nothing run in it until the verify's command.
type verifyAhead struct {
	done chan struct{}
	vj   *verifyJail
	err  error
}

// PrepareVerify starts making the jail of the run's first verify, and
// from then on the next round's while a round runs. Without it every
// verify makes its jail when it starts.
func (w *Workspace) PrepareVerify() {
	w.mu.Lock()
	w.verifyAheadOn = true
	w.mu.Unlock()
	w.prepareNextVerify()
}

// prepareNextVerify starts making a verify jail when verifies are made
// ahead and none is being made.
func (w *Workspace) prepareNextVerify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.verifyAheadOn || w.verifyNext != nil || w.closed {
		return
	}
	if w.verifyCtx == nil {
		w.verifyCtx, w.verifyCancel = context.WithCancel(w.beginCtx)
	}
	ahead := &verifyAhead{done: make(chan struct{})}
	w.verifyNext = ahead
	ctx := w.verifyCtx
	go func() {
		defer close(ahead.done)
		// The worker's jail first: the verify jail is made from its spec.
		if _, err := w.client(ctx); err != nil {
			ahead.err = err
			return
		}
		ahead.vj, ahead.err = w.startVerifyJail(ctx)
	}()
}

// takeVerifyJail is the verify jail made ahead, once it is up, or a new
// one when none was being made or making it failed.
func (w *Workspace) takeVerifyJail(ctx context.Context) (*verifyJail, error) {
	w.mu.Lock()
	ahead := w.verifyNext
	w.verifyNext = nil
	w.mu.Unlock()
	if ahead != nil {
		select {
		case <-ahead.done:
			if ahead.err == nil {
				return ahead.vj, nil
			}
		case <-ctx.Done():
			go discardAhead(ahead)
			return nil, ctx.Err()
		}
	}
	return w.startVerifyJail(ctx)
}

// discardAhead ends a verify jail made ahead that no verify will take.
func discardAhead(ahead *verifyAhead) {
	<-ahead.done
	if ahead.vj != nil {
		ahead.vj.close()
	}
}

// stopVerifyAhead stops making verify jails ahead and ends the one made.
func (w *Workspace) stopVerifyAhead() {
	w.mu.Lock()
	ahead, cancel := w.verifyNext, w.verifyCancel
	w.verifyNext, w.verifyAheadOn = nil, false
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if ahead != nil {
		discardAhead(ahead)
	}
}
