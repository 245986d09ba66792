package host

import (
	"context"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
)

// maxBaseBytes bounds the base blobs kept in memory from the start of a
// run to its end; a larger base is read again by Finalize.
const maxBaseBytes = 512 << 20

// baseTreeDelay is how long the read of the base tree waits at most
// before it starts, so that it does not compete with the jail's start
// and the first request for the CPU. The checkout's end or a Finalize
// that needs the tree starts it sooner (now).
const baseTreeDelay = 200 * time.Millisecond

// baseTree is the base commit's tree, read from the host repository in
// the background (operator content only) so that Finalize need not wait
// for it after the last reply.
type baseTree struct {
	hurry     chan struct{} // closed by now
	hurryOnce sync.Once
	done      chan struct{}
	blobs     []gitops.TreeBlob // set when done; nil when not kept
	err       error
}

// readBaseTree starts reading commit's tree from repoRoot after at most
// delay.
func readBaseTree(g *gitops.Git, repoRoot, commit string, delay time.Duration) *baseTree {
	b := &baseTree{hurry: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		wait := time.NewTimer(delay)
		select {
		case <-wait.C:
		case <-b.hurry:
			wait.Stop()
		}
		blobs, err := g.TreeBlobs(context.Background(), repoRoot, commit)
		if err != nil {
			b.err = err
			return
		}
		var size int64
		for _, f := range blobs {
			size += int64(len(f.Blob))
		}
		if size <= maxBaseBytes {
			b.blobs = blobs
		}
	}()
	return b
}

// now starts the read if it is still waiting. Idempotent.
func (b *baseTree) now() { b.hurryOnce.Do(func() { close(b.hurry) }) }

// baseBlobs is the base commit's tree: the one read meanwhile, else read
// now.
func (w *Workspace) baseBlobs(ctx context.Context) ([]gitops.TreeBlob, error) {
	w.base.now() // a run ended before the delay does not wait it out
	select {
	case <-w.base.done:
		if w.base.err == nil && w.base.blobs != nil {
			return w.base.blobs, nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return w.git.TreeBlobs(ctx, w.cfg.RepoRoot, w.cfg.BaseCommit)
}
