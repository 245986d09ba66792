package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
)

// finalizeTimeout bounds finalize, a docker export included.
const finalizeTimeout = 5 * time.Minute

// finalize measures the tree and computes (docker: exports) the run's
// changes. It runs even when the run was interrupted, so it does not
// inherit ctx's cancellation; a panic in it is its error.
func finalize(ctx context.Context, ws sandbox.Workspace) (fin *sandbox.Finalization, err error) {
	defer func() {
		if v := recover(); v != nil {
			fin, err = nil, fmt.Errorf("finalize: unexpected error: %v", v)
		}
	}()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalizeTimeout)
	defer cancel()
	pause.At(pause.Finalize)
	f, err := ws.Finalize(fctx)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// failAfterStart ends a run that failed after its sandbox started but
// before the loop ran (E-18's run failure). A docker tree is exported
// first, so whatever --setup made is not lost; when that export fails, the
// volume stays and the message names it.
func (r *Runner) failAfterStart(ctx context.Context, p *prepared, rec *record, slug string, lane gitops.Lane,
	op *opened, status transcript.Status, msg string,
) *Payload {
	if op.docker == nil {
		return rec.failure(p, slug, lane, nil, status, msg, nil)
	}
	fin, err := r.finalizeWork(ctx, p, op.ws)
	if err != nil {
		msg += fmt.Sprintf(" (docker volume kept for recovery: %s)", op.volume)
	}
	return rec.failure(p, slug, lane, nil, status, msg, fin)
}
