package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dirtywork/dirtywork/sandbox/seal"
)

// sealTree settles the worktree for verify or the export, with no process
// of the worker alive (the jail idle or stopped): see package seal. The
// repositories the worker made are moved to <RunDir>/quarantine (their
// config disarmed) before the rest is taken out. What every seal of the
// run found is kept for Finalize's evidence; the manifest is the tree as
// left.
func (w *Workspace) sealTree(ctx context.Context) (seal.Report, *seal.Manifest, error) {
	b, err := w.sealBaseline(ctx)
	if err != nil {
		return seal.Report{}, nil, err
	}
	report, m, err := seal.SealInPlace(ctx, w.worktree, b, filepath.Join(w.cfg.RunDir, quarantineDir))
	if err != nil {
		return report, nil, err
	}
	w.mu.Lock()
	w.sealed.Merge(report)
	w.mu.Unlock()
	return report, m, nil
}

// sealBaseline is what the worktree is sealed against: the baseline time
// taken after the checkout, the base tree's paths, the repository's own
// excludes, and the root's .git, which is the lane's.
func (w *Workspace) sealBaseline(ctx context.Context) (seal.Baseline, error) {
	blobs, err := w.baseBlobs(ctx)
	if err != nil {
		return seal.Baseline{}, fmt.Errorf("read the base tree: %w", err)
	}
	tracked := make(map[string]uint32, len(blobs))
	for _, bl := range blobs {
		tracked[bl.Path] = bl.Mode
	}
	exclude, err := os.ReadFile(filepath.Join(w.commonDir, "info", "exclude"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return seal.Baseline{}, fmt.Errorf("read the repository's excludes: %w", err)
	}
	return seal.Baseline{Since: w.since, Tracked: tracked, Exclude: exclude, KeepRootGit: true, Known: w.takeDigests()}, nil
}

// sealedReport is what every seal of the run found so far.
func (w *Workspace) sealedReport() seal.Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sealed
}
