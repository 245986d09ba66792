package host

import (
	"context"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
)

// A run whose loop ends before the base tree's read was due must not wait
// the delay out after its last reply: asking for the tree starts the read.
func TestBaseTreeReadStartsWhenAskedBeforeItsDelay(t *testing.T) {
	r := newTestRepo(t)
	w := &Workspace{git: gitops.New(), base: readBaseTree(gitops.New(), r.repo, r.base, time.Hour)}
	w.cfg.RepoRoot, w.cfg.BaseCommit = r.repo, r.base
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	go func() {
		blobs, err := w.baseBlobs(ctx)
		got <- result{len(blobs), err}
	}()
	select {
	case res := <-got:
		if res.err != nil || res.n != 4 {
			t.Fatalf("base tree has %d files (%v), want 4", res.n, res.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("baseBlobs waited for the read's delay")
	}
	select {
	case <-w.base.done:
	default:
		t.Fatal("the tree was read again instead of by the read that was asked to start")
	}
	if w.base.blobs == nil {
		t.Fatal("the read asked to start kept no blobs")
	}
}

// The end of the checkout starts the read: the tree is there well before
// the delay.
func TestBaseTreeReadStartsOnNow(t *testing.T) {
	r := newTestRepo(t)
	b := readBaseTree(gitops.New(), r.repo, r.base, time.Hour)
	b.now()
	b.now() // idempotent
	select {
	case <-b.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not start on now")
	}
	if b.err != nil || len(b.blobs) != 4 {
		t.Fatalf("read %d blobs, err %v", len(b.blobs), b.err)
	}
}
