package workspace

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
)

// Tool calls wait for the first checkout; a failed one ends the run as a
// sandbox error, and a cancelled caller stops waiting.
func TestWaitReady(t *testing.T) {
	w := &Workspace{}
	if err := w.waitReady(t.Context()); err != nil {
		t.Fatalf("no checkout under way: %v", err)
	}

	w.ready = make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- w.waitReady(t.Context()) }()
	select {
	case err := <-done:
		t.Fatalf("returned before the checkout ended: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(w.ready)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after a good checkout: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting 5 s after the checkout ended")
	}

	failed := &Workspace{ready: make(chan struct{}), readyErr: errors.New("git init failed")}
	close(failed.ready)
	var se *sandbox.SandboxError
	if err := failed.waitReady(t.Context()); !errors.As(err, &se) {
		t.Fatalf("after a failed checkout: %v, want a sandbox error", err)
	}

	pending := &Workspace{ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := pending.waitReady(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v", err)
	}
}
