package workspace

import (
	"context"
	"errors"
	"fmt"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/export"
)

// maxBaselineBytes bounds the base blobs kept in memory from the start of
// a run to its export; a larger base is read again at the export and
// the lane filled from the export alone.
const maxBaselineBytes = 512 << 20

// errBaselineTooLarge: the base is over maxBaselineBytes.
var errBaselineTooLarge = errors.New("base tree too large to keep in memory")

// baseline fills the host lane with the base tree while the container
// starts and the worker works: the base commit's blobs are read from the
// host repository (operator content only) and written into the empty lane
// by export.Populate. At the export, export.Sync then writes only what the
// worker changed, and the diff looks only at those paths: on a large tree
// the export costs reads, not tens of thousands of writes after the
// worker's last reply.
type baseline struct {
	cancel context.CancelFunc
	done   chan struct{}
	// base and err are set when done is closed: base is the base tree
	// (nil when it could not be read or was too large), err is nil when
	// the lane holds exactly base.
	base []export.BaseFile
	err  error
}

// startBaseline starts filling worktree with commit's tree from repoRoot.
func startBaseline(g *gitops.Git, repoRoot, commit, worktree string) *baseline {
	ctx, cancel := context.WithCancel(context.Background())
	b := &baseline{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		base, err := baseTree(ctx, g, repoRoot, commit)
		if err != nil {
			b.err = err
			return
		}
		var size int64
		for _, f := range base {
			size += int64(len(f.Blob))
		}
		if size > maxBaselineBytes {
			b.err = fmt.Errorf("%w (%d MB)", errBaselineTooLarge, size>>20)
			return
		}
		b.base = base
		b.err = export.Populate(ctx, worktree, base)
	}()
	return b
}

// wait waits for the lane to be filled, or ctx to end.
func (b *baseline) wait(ctx context.Context) ([]export.BaseFile, error) {
	select {
	case <-b.done:
		return b.base, b.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stop ends the filling and waits for it, so nothing writes into the lane
// once it returns.
func (b *baseline) stop() {
	b.cancel()
	<-b.done
}
