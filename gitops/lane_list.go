package gitops

import "context"

// Lane states reported by List.
const (
	// StateClean: closing the lane would remove it.
	StateClean = "clean"
	// StateDirty: the lane holds uncommitted changes or commits beyond its
	// base; closing it would retain it.
	StateDirty = "dirty"
	// StateUnknown: the lane could not be inspected (see Error); closing
	// it would retain it or fail, never remove it.
	StateUnknown = "unknown"
)

// LaneInfo is a lane as List sees it: its record plus what its worktree
// and branch look like now.
type LaneInfo struct {
	Lane
	// State is StateClean, StateDirty or StateUnknown.
	State string `json:"state"`
	// Changed holds porcelain status lines ("?? f.txt", " M g.txt").
	Changed []string `json:"changed"`
	// CommitsAhead counts commits beyond the base.
	CommitsAhead int `json:"commits_ahead"`
	// WorktreeExists reports whether the worktree directory is there.
	WorktreeExists bool `json:"worktree_exists"`
	// KnownToGit reports whether git lists the worktree.
	KnownToGit bool `json:"known_to_git"`
	// Error says why State is StateUnknown.
	Error string `json:"error,omitempty"`
}

// List reports every lane in the manifest, sorted by id. It reads the
// manifest without the lock (it is replaced atomically) so that listing
// never waits for, or holds up, lanes being opened and closed; a lane that
// cannot be inspected is reported StateUnknown rather than failing the
// whole list.
func (m *Manager) List(ctx context.Context) ([]LaneInfo, error) {
	mf, err := readManifest(manifestPath(m.repo))
	if err != nil {
		return nil, err
	}
	infos := make([]LaneInfo, 0, len(mf.Lanes))
	if len(mf.Lanes) == 0 {
		return infos, nil
	}
	known, err := m.knownWorktrees(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range mf.Lanes {
		infos = append(infos, m.info(ctx, l, known))
	}
	return infos, nil
}

// info inspects one lane for List.
func (m *Manager) info(ctx context.Context, l Lane, known map[string]worktreeEntry) LaneInfo {
	info := LaneInfo{Lane: l, Changed: []string{}}
	c, err := m.check(ctx, l, known)
	info.WorktreeExists, info.KnownToGit = c.present && c.isDir, c.known
	switch {
	case err != nil:
		info.State, info.Error = StateUnknown, err.Error()
	case c.present && !c.inspectable():
		info.State = StateUnknown
		info.Error = "something is at the worktree path that git does not list as a worktree"
	case c.dirty():
		info.State = StateDirty
	default:
		info.State = StateClean
	}
	if err == nil {
		info.Changed, info.CommitsAhead = c.changed, c.ahead
	}
	return info
}
