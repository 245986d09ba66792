package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OpenOptions describe a lane to open.
type OpenOptions struct {
	// ID is the owner id the lane is bound to (see EncodeLaneID).
	ID string
	// From is the ref to branch from; HEAD of the repository when empty.
	From string
	// NoCheckout creates the worktree without checking files out: it holds
	// only its .git file (for sandboxes that bring their own tree).
	NoCheckout bool
	// OwnerPID is recorded as the pid of the process that asked.
	OwnerPID int
	// OwnerSession is recorded as the owner's session label.
	OwnerSession string
}

// Open creates a lane: worktree <repo>/.worktrees/dw-<enc> on a new branch
// dirtywork/<enc> from opts.From, with .worktrees/ in the common exclude
// file, recorded in the manifest with status open.
//
// It refuses, before creating anything: an invalid id (ErrInvalidLaneID),
// an id already in the manifest (ErrLaneOpen), a .worktrees that is not a
// real directory (ErrWorktreesNotDir), anything at the destination
// (ErrDestinationExists), an existing branch of that name, which is left
// alone (ErrBranchExists), a ref that names no commit (ErrBadRef), an
// unsafe exclude file (ErrUnsafeFile), a corrupt manifest
// (ErrCorruptManifest). If git fails (ErrWorktreeAdd) or the worktree
// does not resolve where it should (ErrWorktreeEscaped), or anything later
// fails, everything created is removed again; only the exclude line stays.
func (m *Manager) Open(ctx context.Context, opts OpenOptions) (Lane, error) {
	enc, err := EncodeLaneID(opts.ID)
	if err != nil {
		return Lane{}, err
	}
	var lane Lane
	err = m.locked(ctx, func(mf *manifest) error {
		plan, err := m.plan(ctx, mf, enc, opts)
		if err != nil {
			return err
		}
		lane, err = m.open(ctx, mf, plan, opts)
		return err
	})
	return lane, err
}

// openPlan is what Open's checks established.
type openPlan struct {
	enc, dest, branch string
	start             string // the commit to branch from
	lanesDirExisted   bool
}

// plan runs every check that can refuse a lane before anything is created.
func (m *Manager) plan(ctx context.Context, mf *manifest, enc string, opts OpenOptions) (openPlan, error) {
	if i := mf.find(opts.ID); i >= 0 {
		l := mf.Lanes[i]
		return openPlan{}, fmt.Errorf("lane %q %w (%s, worktree %s); close it first", opts.ID, ErrLaneOpen, l.Status, l.Worktree)
	}
	p := openPlan{enc: enc, branch: LaneBranch(enc), lanesDirExisted: true}
	lanesDir := m.repo.LanesDir()
	if fi, err := os.Lstat(lanesDir); err == nil {
		if !fi.IsDir() {
			return openPlan{}, fmt.Errorf("%s %w (a file or symlink); lanes need a plain directory there", lanesDir, ErrWorktreesNotDir)
		}
	} else if os.IsNotExist(err) {
		p.lanesDirExisted = false
	} else {
		return openPlan{}, fmt.Errorf("inspect %s: %w", lanesDir, err)
	}
	p.dest = filepath.Join(lanesDir, LaneWorktreeName(enc))
	if _, err := os.Lstat(p.dest); err == nil {
		return openPlan{}, fmt.Errorf("lane destination %s %w", p.dest, ErrDestinationExists)
	} else if !os.IsNotExist(err) {
		return openPlan{}, fmt.Errorf("inspect lane destination %s: %w", p.dest, err)
	}
	if _, exists, err := m.branchTip(ctx, p.branch); err != nil {
		return openPlan{}, err
	} else if exists {
		return openPlan{}, fmt.Errorf("branch %s %w; it is left as it is", p.branch, ErrBranchExists)
	}
	from := opts.From
	if from == "" {
		from = "HEAD"
	}
	var err error
	if p.start, err = m.git.resolveCommit(ctx, m.repo.Root, from); err != nil {
		return openPlan{}, err
	}
	return p, nil
}

// open creates the lane planned, with the lock held: exclude line first,
// then branch and worktree, then the manifest entry. Any failure after the
// exclude line undoes everything this call created.
func (m *Manager) open(ctx context.Context, mf *manifest, p openPlan, opts OpenOptions) (Lane, error) {
	if err := m.git.EnsureExcluded(ctx, m.repo); err != nil {
		return Lane{}, err
	}
	rb := &openRollback{m: m, dest: p.dest, branch: p.branch, lanesDir: m.repo.LanesDir()}
	if !p.lanesDirExisted {
		if err := os.Mkdir(rb.lanesDir, 0o755); err != nil {
			return Lane{}, fmt.Errorf("create %s: %w", rb.lanesDir, err)
		}
		rb.removeLanesDir = true
	}
	lane, err := m.create(ctx, rb, p, opts)
	if err == nil {
		mf.put(lane)
		err = m.save(mf)
	}
	if err != nil {
		if rerr := rb.run(ctx); rerr != nil {
			return Lane{}, errors.Join(err, rerr)
		}
		return Lane{}, err
	}
	return lane, nil
}

// create makes the branch and the worktree and returns the new lane,
// noting in rb what must be undone on failure.
func (m *Manager) create(ctx context.Context, rb *openRollback, p openPlan, opts OpenOptions) (Lane, error) {
	// The branch is created first, by a compare-and-swap that fails if it
	// exists, rather than by worktree add -b: then "the branch did not
	// pre-exist" is certain even if another process raced us to the name,
	// and a rollback deletes exactly what this call made. The start point
	// is the resolved commit, so no upstream tracking is configured.
	if _, err := m.git.run(ctx, m.repo.Root, "update-ref", "refs/heads/"+rb.branch, p.start, ""); err != nil {
		return Lane{}, fmt.Errorf("create branch %s at %s: %w", rb.branch, p.start, err)
	}
	rb.branchTip = p.start
	args := NewArgs("worktree", "add").
		ArgIf(opts.NoCheckout, "--no-checkout").
		Arg("--", rb.dest, rb.branch)
	rb.worktreeAdded = true // git may leave a partial worktree even when it fails
	if _, err := m.git.run(ctx, m.repo.Root, args.Strings()...); err != nil {
		if ctx.Err() != nil {
			return Lane{}, err
		}
		return Lane{}, fmt.Errorf("%w: %w", ErrWorktreeAdd, err)
	}
	resolved, err := filepath.EvalSymlinks(rb.dest)
	if err != nil {
		return Lane{}, fmt.Errorf("resolve new worktree %s: %w", rb.dest, err)
	}
	lanesDir := filepath.Join(m.repo.Root, lanesDirName)
	if resolved != filepath.Join(lanesDir, LaneWorktreeName(p.enc)) {
		return Lane{}, fmt.Errorf("new worktree %s (resolved %s) %w %s; it was removed", rb.dest, resolved, ErrWorktreeEscaped, lanesDir)
	}
	base, err := m.git.run(ctx, resolved, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return Lane{}, fmt.Errorf("read the base commit of new worktree %s: %w", resolved, err)
	}
	gitDirOut, err := m.git.run(ctx, resolved, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return Lane{}, fmt.Errorf("locate the git dir of new worktree %s: %w", resolved, err)
	}
	gitDir, err := filepath.EvalSymlinks(strings.TrimSuffix(string(gitDirOut), "\n"))
	if err != nil {
		return Lane{}, fmt.Errorf("resolve the git dir of new worktree %s: %w", resolved, err)
	}
	if adminDir := filepath.Join(m.repo.CommonDir, "worktrees"); !within(gitDir, adminDir) {
		return Lane{}, fmt.Errorf("git dir %s of new worktree %s %w %s", gitDir, resolved, ErrWorktreeEscaped, adminDir)
	}
	lane := Lane{
		ID:           opts.ID,
		Worktree:     resolved,
		Branch:       rb.branch,
		BaseCommit:   strings.TrimSpace(string(base)),
		GitDir:       gitDir,
		OwnerPID:     opts.OwnerPID,
		OwnerSession: opts.OwnerSession,
		Created:      m.timestamp(),
		Status:       StatusOpen,
		NoCheckout:   opts.NoCheckout,
	}
	return lane, nil
}

// openRollback undoes a lane creation that failed part way.
type openRollback struct {
	m              *Manager
	dest, branch   string
	lanesDir       string
	branchTip      string // set once this call created the branch
	worktreeAdded  bool   // git worktree add was started
	removeLanesDir bool   // .worktrees was created by this call
}

// run removes the worktree, git's record of it, the branch and the
// .worktrees directory, as far as this call created them. It runs even if
// ctx has ended: a cancelled open must not leave half a lane behind.
func (rb *openRollback) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	g, root := rb.m.git, rb.m.repo.Root
	var errs []error
	if rb.worktreeAdded {
		if _, err := os.Lstat(rb.dest); err == nil {
			// The worktree is seconds old and holds no one's work, so
			// forcing (twice: also if it got locked) loses nothing.
			if _, err := g.run(ctx, root, "worktree", "remove", "--force", "--force", "--", rb.dest); err != nil {
				errs = append(errs, fmt.Errorf("remove new worktree %s: %w", rb.dest, err))
			}
		}
		if err := rb.m.prune(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if rb.branchTip != "" {
		if err := rb.m.deleteBranch(ctx, rb.branch, rb.branchTip); err != nil {
			errs = append(errs, err)
		}
	}
	if rb.removeLanesDir {
		// os.Remove takes only an empty directory: whatever someone else
		// put there meanwhile stays.
		_ = os.Remove(rb.lanesDir)
	}
	if len(errs) > 0 {
		return fmt.Errorf("undo the half-created lane: %w", errors.Join(errs...))
	}
	return nil
}
