package seal

import (
	"context"
	"fmt"

	"github.com/dirtywork/dirtywork/sandbox/export"
)

// SealInPlace seals the tree at dir where the caller can reach it on
// disk (host mode, a crashed run's worktree): the repositories the worker
// made are moved into quarantine at their relative paths and disarmed
// (their HEADs and gitfiles renamed, so no git run there finds a
// repository), then the rest is sealed. The report's Repositories are
// the paths moved.
func SealInPlace(ctx context.Context, dir string, b Baseline, quarantine string) (Report, *Manifest, error) {
	report, m, err := Seal(ctx, dir, b, false)
	if err != nil || !report.Pending(false) {
		return report, m, err
	}
	moved, err := export.QuarantineEntries(dir, report.Repositories, quarantine)
	if err == nil {
		err = export.Disarm(quarantine, moved)
	}
	if err != nil {
		return report, nil, fmt.Errorf("move the worker's repositories out of the tree: %w", err)
	}
	rest, m, err := Seal(ctx, dir, b, true)
	if err != nil {
		return report, nil, err
	}
	rest.Repositories = moved
	return rest, m, nil
}
