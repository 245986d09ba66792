package tui

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/backend/fake"
)

// watchCtxStore is a fake store that hands over the context its Watch
// was given.
type watchCtxStore struct {
	*fake.Store
	watched chan context.Context
}

func (s *watchCtxStore) Watch(ctx context.Context) (<-chan []backend.Change, error) {
	s.watched <- ctx
	return s.Store.Watch(ctx)
}

// The runs root's watch ends with the program: Run gives it the
// program's context, which is done once Run returned.
func TestTheWatchEndsWithTheProgram(t *testing.T) {
	st := &watchCtxStore{Store: fake.New(), watched: make(chan context.Context, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	in, inW := io.Pipe()
	defer func() { _ = inW.Close() }()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Store: st, Color: ColorNone, TickEvery: -1}, RunOptions{In: in, Out: io.Discard, Env: []string{"TERM=dumb"}})
	}()
	var watchCtx context.Context
	select {
	case watchCtx = <-st.watched:
	case err := <-done:
		t.Fatalf("Run returned before watching: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the runs root was not watched")
	}
	if watchCtx.Err() != nil {
		t.Fatal("the watch's context ended while the program runs")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	select {
	case <-watchCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the watch outlived the program")
	}
}
