package runs

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/transcript"
)

// Resume continues an ended run of the store in its worktree with a new
// run started by r (see engine.Runner.Resume, RE-*). req.Target is a slug
// of this store, or a run directory when it holds a path separator (RE-1).
// A refusal is an *engine.PreflightError: nothing was created and the
// resumed run is as it was.
func (s *Store) Resume(ctx context.Context, r *engine.Runner, req engine.ResumeRequest) (*engine.Payload, error) {
	if req.RunDir == "" && !strings.ContainsRune(req.Target, filepath.Separator) && !filepath.IsAbs(req.Target) {
		if err := transcript.ValidSlug(req.Target); err != nil {
			return nil, &engine.PreflightError{Msg: err.Error(), Hint: "see 'dirtywork runs list'", Err: err}
		}
		dir, err := transcript.FindRunDir(s.root, req.Target)
		if err != nil {
			return nil, &engine.PreflightError{Msg: err.Error(), Hint: "see 'dirtywork runs list'", Err: err}
		}
		req.RunDir = dir
	}
	return r.Resume(ctx, req)
}
