package engine

import (
	"fmt"
	"path/filepath"

	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/transcript"
)

// QuarantineCrashedTree does, for a host run that died before its
// finalize (recorded as running; the caller has checked that its process
// is gone), what the finalize would have done to its worktree: every
// repository the worker left there, its core.fsmonitor, hooks and
// filters armed for any git run inside, is moved into <runDir>/quarantine,
// disarmed (export.Disarm) and added to dropped_git_entries. Whatever then
// reads or commits the tree (cleanup's park, a snapshot, accept,
// --branch-from) never carries a worker's repository into a commit the
// operator checks out. A finished run's tree, and a docker run's (the
// export quarantines), are left as they are. It returns the paths moved.
func QuarantineCrashedTree(runDir string, rec transcript.Record) ([]string, error) {
	status, _ := rec.String("status")
	sandbox, _ := rec.String("sandbox")
	worktree, _ := rec.String("worktree")
	if status != "running" || sandbox == "docker" || worktree == "" {
		return nil, nil
	}
	dest := filepath.Join(runDir, "quarantine")
	moved, err := export.QuarantineRepositories(worktree, dest)
	if err == nil {
		err = export.Disarm(dest, moved)
	}
	if err != nil {
		return moved, fmt.Errorf("move the worker's repositories out of %s: %w", worktree, err)
	}
	if len(moved) > 0 {
		dropped := moved
		if prior, ok := rec["dropped_git_entries"].([]any); ok {
			dropped = nil
			for _, p := range prior {
				if s, ok := p.(string); ok {
					dropped = append(dropped, s)
				}
			}
			dropped = append(dropped, moved...)
		}
		if _, err := transcript.MergeRecord(runDir, transcript.Record{"dropped_git_entries": dropped}); err != nil {
			return moved, fmt.Errorf("record the repositories moved out of %s: %w", worktree, err)
		}
	}
	return moved, nil
}
