package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/seal"

	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/transcript"
)

// QuarantineCrashedTree does, for a host run that died before its
// finalize (recorded as running; the caller has checked that its process
// is gone), what the finalize would have done to its worktree. With the
// seal's baseline recorded, the tree is sealed against it (package seal):
// the repositories the worker made are moved into <runDir>/quarantine,
// disarmed, and what else the worker left that no diff shows (ignored
// files, special files, links out of the tree, setuid bits) is taken out
// and recorded, as the finalize would have. Without one (a run of an older
// version, or one that died before the checkout), only the repositories
// are moved (export.QuarantineRepositories). Whatever then reads or
// commits the tree (cleanup's park, a snapshot, accept, --branch-from)
// never carries a worker's repository or hidden file into a commit the
// operator checks out. A finished run's tree, and a docker run's (the
// export seals), are left as they are. It returns the repositories moved.
func QuarantineCrashedTree(runDir string, rec transcript.RunRecord) ([]string, error) {
	worktree := rec.Worktree
	if rec.Status != transcript.StatusRunning || rec.Sandbox == "docker" || worktree == "" {
		return nil, nil
	}
	dest := filepath.Join(runDir, "quarantine")
	if since, ok := recordedBaseline(rec); ok {
		return sealCrashedTree(runDir, rec, worktree, since, dest)
	}
	moved, err := export.QuarantineRepositories(worktree, dest)
	if err == nil {
		err = export.Disarm(dest, moved)
	}
	if err != nil {
		return moved, fmt.Errorf("move the worker's repositories out of %s: %w", worktree, err)
	}
	if len(moved) > 0 {
		dropped := append(slices.Clone(rec.DroppedGitEntries), moved...)
		if _, err := transcript.Patch(runDir, transcript.DroppedGitEntriesFields{DroppedGitEntries: dropped}); err != nil {
			return moved, fmt.Errorf("record the repositories moved out of %s: %w", worktree, err)
		}
	}
	return moved, nil
}

// recordedBaseline is the seal's baseline the run recorded.
func recordedBaseline(rec transcript.RunRecord) (time.Time, bool) {
	if rec.SealBaseline == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, rec.SealBaseline)
	return t, err == nil
}

// sealCrashedTree seals a crashed host run's worktree against the
// baseline it recorded, and records what the seal found.
func sealCrashedTree(runDir string, rec transcript.RunRecord, worktree string, since time.Time, dest string) ([]string, error) {
	ctx := context.Background()
	b, err := BaseSealBaseline(ctx, rec.Repo, rec.BaseCommit)
	if err != nil {
		return nil, fmt.Errorf("seal the worktree %s: %w", worktree, err)
	}
	b.Since = since
	report, _, err := seal.SealInPlace(ctx, worktree, b, dest)
	if err != nil {
		return report.Repositories, fmt.Errorf("seal the worktree %s: %w", worktree, err)
	}
	var a transcript.Artifacts
	a.DroppedGitEntries = slices.Clone(rec.DroppedGitEntries)
	a.SkippedSpecialEntries = slices.Clone(rec.SkippedSpecialEntries)
	a.EscapingSymlinks = slices.Clone(rec.EscapingSymlinks)
	a.UnexportedEntries = slices.Clone(rec.UnexportedEntries)
	seal.Evidence(&a, report)
	if _, err := transcript.Patch(runDir, transcript.SealFields{
		DroppedGitEntries: a.DroppedGitEntries, SkippedSpecialEntries: a.SkippedSpecialEntries,
		EscapingSymlinks: a.EscapingSymlinks, IgnoredChanges: a.IgnoredChanges, ModeChanges: a.ModeChanges,
	}); err != nil {
		return report.Repositories, fmt.Errorf("record what the seal of %s found: %w", worktree, err)
	}
	return report.Repositories, nil
}

// BaseSealBaseline is what a tree of repoRoot's base commit is sealed
// against, but the time: the base tree's paths, the repository's own
// excludes, and the root's .git, which is the lane's.
func BaseSealBaseline(ctx context.Context, repoRoot, base string) (seal.Baseline, error) {
	g := gitops.New()
	blobs, err := g.TreeBlobs(ctx, repoRoot, base)
	if err != nil {
		return seal.Baseline{}, fmt.Errorf("read the base tree: %w", err)
	}
	b := seal.Baseline{Tracked: make(map[string]uint32, len(blobs)), KeepRootGit: true}
	for _, bl := range blobs {
		b.Tracked[bl.Path] = bl.Mode
	}
	if repo, err := g.ResolveRepo(ctx, repoRoot); err == nil {
		if b.Exclude, err = os.ReadFile(filepath.Join(repo.CommonDir, "info", "exclude")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return seal.Baseline{}, fmt.Errorf("read the repository's excludes: %w", err)
		}
	}
	return b, nil
}
