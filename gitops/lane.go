package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Manager performs lane operations on one repository. Operations that
// change lanes hold the repository lock for their whole length, so
// processes opening and closing lanes at the same time never race on git's
// own locks or on the manifest.
type Manager struct {
	git  *Git
	repo Repo
	// now is the clock for manifest timestamps; tests fix it.
	now func() time.Time
}

// NewManager returns a Manager for repo running git through g (New() when
// g is nil).
func NewManager(g *Git, repo Repo) *Manager {
	if g == nil {
		g = New()
	}
	return &Manager{git: g, repo: repo, now: time.Now}
}

// Repo is the repository the manager works on.
func (m *Manager) Repo() Repo { return m.repo }

// cleanupTimeout bounds rollback and cleanup work that must run even when
// the caller's context has ended.
const cleanupTimeout = 30 * time.Second

// locked runs fn holding the repo lock with the manifest loaded.
func (m *Manager) locked(ctx context.Context, fn func(mf *manifest) error) error {
	lock, err := LockRepo(ctx, m.repo)
	if err != nil {
		return err
	}
	// The kernel releases the lock when the descriptor closes even if the
	// explicit unlock fails, so there is nothing to act on.
	defer func() { _ = lock.Unlock() }()
	mf, err := readManifest(manifestPath(m.repo))
	if err != nil {
		return err
	}
	return fn(mf)
}

// save writes the manifest back; callers hold the lock.
func (m *Manager) save(mf *manifest) error {
	return writeManifest(manifestPath(m.repo), mf)
}

// timestamp is the manager's clock in UTC RFC 3339.
func (m *Manager) timestamp() string {
	return m.now().UTC().Format(time.RFC3339)
}

// knownWorktrees lists the worktrees git knows for the repository, keyed by
// resolved path (a worktree whose directory is gone keys by its clean
// recorded path).
func (m *Manager) knownWorktrees(ctx context.Context) (map[string]worktreeEntry, error) {
	out, err := m.git.run(ctx, m.repo.Root, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, fmt.Errorf("list the worktrees of %s: %w", m.repo.Root, err)
	}
	known := map[string]worktreeEntry{}
	for _, e := range parseWorktreeListZ(out) {
		p := filepath.Clean(e.Path)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		known[p] = e
	}
	return known, nil
}

// prune runs git worktree prune, dropping git's records of worktrees whose
// directories are gone.
func (m *Manager) prune(ctx context.Context) error {
	if _, err := m.git.run(ctx, m.repo.Root, "worktree", "prune"); err != nil {
		return fmt.Errorf("prune stale worktrees of %s: %w", m.repo.Root, err)
	}
	return nil
}

// branchTip returns the commit a local branch points at, and whether the
// branch exists.
func (m *Manager) branchTip(ctx context.Context, branch string) (string, bool, error) {
	out, err := m.git.run(ctx, m.repo.Root, "rev-parse", "--verify", "--quiet", "--end-of-options", "refs/heads/"+branch)
	if err != nil {
		if exitCodeOf(err) == 1 {
			return "", false, nil
		}
		return "", false, fmt.Errorf("resolve branch %s: %w", branch, err)
	}
	return strings.TrimSpace(string(out)), true, nil
}

// commitsAhead counts commits reachable from tip but not from base.
func (m *Manager) commitsAhead(ctx context.Context, base, tip string) (int, error) {
	if tip == "" || tip == base {
		return 0, nil
	}
	out, err := m.git.run(ctx, m.repo.Root, "rev-list", "--count", base+".."+tip, "--")
	if err != nil {
		return 0, fmt.Errorf("count commits of %s beyond %s: %w", tip, base, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("count commits of %s beyond %s: unexpected output %q", tip, base, out)
	}
	return n, nil
}

// deleteBranch deletes a branch only if it still points at tip, so a
// branch that moved since it was inspected is never lost.
func (m *Manager) deleteBranch(ctx context.Context, branch, tip string) error {
	if _, err := m.git.run(ctx, m.repo.Root, "update-ref", "-d", "refs/heads/"+branch, tip); err != nil {
		return fmt.Errorf("delete branch %s: %w", branch, err)
	}
	return nil
}

// worktreeCall is a config-neutral call pinned to a lane's worktree and,
// when recorded, its git dir: the worktree's content is the worker's.
func worktreeCall(l Lane, args ...string) Call {
	return Call{Dir: l.Worktree, Args: args, Neutral: true, GitDir: l.GitDir, WorkTree: l.Worktree}
}

// worktreeChanges returns the porcelain status lines of a lane's worktree
// (ignored files do not count) and the commit its HEAD points at.
func (m *Manager) worktreeChanges(ctx context.Context, l Lane) ([]string, string, error) {
	out, err := m.git.Run(ctx, worktreeCall(l, "status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules=none", "--no-renames"))
	if err != nil {
		return nil, "", fmt.Errorf("read the status of lane %q in %s: %w", l.ID, l.Worktree, err)
	}
	changed := parseStatusZ(out)
	head, err := m.git.Run(ctx, worktreeCall(l, "rev-parse", "--verify", "--quiet", "HEAD"))
	if err != nil {
		return nil, "", fmt.Errorf("read HEAD of lane %q in %s: %w", l.ID, l.Worktree, err)
	}
	return changed, strings.TrimSpace(string(head)), nil
}

// laneCheck is what a lane's worktree and branch look like right now.
type laneCheck struct {
	present      bool // something is at the worktree path
	isDir        bool // and it is a real directory
	known        bool // git lists a worktree at the path
	changed      []string
	branchExists bool
	branchTip    string
	ahead        int // commits beyond base on the branch or the worktree's HEAD
}

// inspectable reports whether the worktree can be asked for its status.
func (c laneCheck) inspectable() bool { return c.present && c.isDir && c.known }

// dirty reports whether closing would lose something.
func (c laneCheck) dirty() bool { return len(c.changed) > 0 || c.ahead > 0 }

// check inspects a lane; known is the result of knownWorktrees.
func (m *Manager) check(ctx context.Context, l Lane, known map[string]worktreeEntry) (laneCheck, error) {
	c := laneCheck{changed: []string{}}
	if fi, err := os.Lstat(l.Worktree); err == nil {
		c.present, c.isDir = true, fi.IsDir()
	} else if !os.IsNotExist(err) {
		return c, fmt.Errorf("inspect worktree %s of lane %q: %w", l.Worktree, l.ID, err)
	}
	_, c.known = known[l.Worktree]
	var err error
	if c.branchTip, c.branchExists, err = m.branchTip(ctx, l.Branch); err != nil {
		return c, err
	}
	if c.ahead, err = m.commitsAhead(ctx, l.BaseCommit, c.branchTip); err != nil {
		return c, err
	}
	if !c.inspectable() {
		return c, nil
	}
	changed, head, err := m.worktreeChanges(ctx, l)
	if err != nil {
		return c, err
	}
	c.changed = changed
	// The worktree may have left the lane's branch (detached, or another
	// branch); its own commits count too.
	if head != c.branchTip {
		headAhead, err := m.commitsAhead(ctx, l.BaseCommit, head)
		if err != nil {
			return c, err
		}
		c.ahead = max(c.ahead, headAhead)
	}
	return c, nil
}

// pathPresent reports whether anything, even a dangling symlink, is at path.
func pathPresent(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
