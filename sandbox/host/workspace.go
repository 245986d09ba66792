package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
	"github.com/dirtywork/dirtywork/sandbox/host/confine"
)

// Workspace is a run's worktree on the host. It implements
// sandbox.Workspace.
type Workspace struct {
	cfg Config
	// worktree, commonDir and adminDir are cfg's paths, resolved.
	worktree, commonDir, adminDir string
	root                          *os.Root
	fs                            *fsops.FS
	// scratch is bash's TMPDIR, removed on Close.
	scratch string
	// operatorEnv is the environment Finalize's git starts from.
	operatorEnv []string
	// bashEnv is bash's whole environment (E-38), set by bashReady.
	bashEnv []string
	// bashOnce settles bashEnv and the policy's python user-site rule at
	// the first command: asking python for its user site can take longer
	// than everything else Open does, and the first model reply comes
	// before any command anyway.
	bashOnce sync.Once
	bashErr  error
	// env and home are the operator's environment and home, for bashReady.
	env  map[string]string
	home string
	// bash is bash's path on the operator's PATH, "" when there is none.
	bash string
	// policy is every bash command's confinement, less the command.
	policy confine.Policy
	info   Info
	budget *fsops.Budget
	git    *gitops.Git

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ sandbox.Workspace = (*Workspace)(nil)

// Open opens the workspace on cfg's worktree: an os.Root for the file
// tools, a scratch dir for bash's TMPDIR, bash's environment, and bash's
// confinement, which it tries out once so that a kernel or system that
// cannot confine bash is refused here (ErrNoLandlock, ErrNoPrivateMounts)
// rather than at the first command. It also measures the tree, the
// baseline of the size budget.
func Open(ctx context.Context, cfg Config) (*Workspace, error) {
	w := &Workspace{cfg: cfg, git: gitops.New()}
	opened := false
	defer func() {
		if !opened {
			_ = w.Close()
		}
	}()
	if err := w.resolvePaths(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(w.worktree)
	if err != nil {
		return nil, fmt.Errorf("open worktree %s: %w", w.worktree, err)
	}
	w.root = root
	w.fs = fsops.New(root, w.worktree)

	w.operatorEnv = cfg.Env
	if w.operatorEnv == nil {
		w.operatorEnv = os.Environ()
	}
	w.git.Environ = func() []string { return w.operatorEnv }
	env := envMap(w.operatorEnv)
	home := operatorHome(cfg.Home, env)

	if w.scratch, err = os.MkdirTemp(os.TempDir(), "dirtywork-scratch-"); err != nil {
		return nil, fmt.Errorf("create bash scratch dir: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(w.scratch)
	if err != nil {
		return nil, fmt.Errorf("resolve bash scratch dir %s: %w", w.scratch, err)
	}
	w.scratch = resolved
	w.env, w.home = env, home
	// python runs in the scratch dir, not in a tree the worker may have
	// written (a resumed run's); its answer is awaited by bashReady.
	go pythonUserSite(context.WithoutCancel(ctx), env, w.operatorEnv, w.scratch)
	w.bash = lookPath("bash", env["PATH"])

	// Confinement is tried out with every rule but the user site's, which
	// only adds a directory to read.
	l, err := w.layout(env, home, "")
	if err != nil {
		return nil, err
	}
	w.policy = l.policy()
	w.policy.Bash = w.bash
	if err := w.setupConfinement(ctx); err != nil {
		return nil, err
	}

	w.budget = fsops.NewBudget(w.fs, fsops.Limits{MaxBytes: cfg.Limits.MaxBytes, MaxEntries: cfg.Limits.MaxEntries})
	// The baseline walk runs while the first model request is out.
	w.budget.StartWalk(context.WithoutCancel(ctx), false)
	opened = true
	return w, nil
}

// resolvePaths resolves the worktree and git dirs, which must exist.
func (w *Workspace) resolvePaths() error {
	for _, p := range []struct {
		name string
		in   string
		out  *string
	}{
		{"worktree", w.cfg.Worktree, &w.worktree},
		{"common git dir", w.cfg.CommonDir, &w.commonDir},
		{"worktree git dir", w.cfg.AdminDir, &w.adminDir},
	} {
		if p.in == "" {
			return fmt.Errorf("open host workspace: no %s given", p.name)
		}
		abs, err := filepath.Abs(p.in)
		if err != nil {
			return fmt.Errorf("resolve %s %s: %w", p.name, p.in, err)
		}
		if *p.out, err = filepath.EvalSymlinks(abs); err != nil {
			return fmt.Errorf("resolve %s %s: %w", p.name, p.in, err)
		}
		if !isDir(*p.out) {
			return fmt.Errorf("%s %s is not a directory", p.name, *p.out)
		}
	}
	return nil
}

// DisplayRoot is the worktree's resolved path, where the model is told its
// files are.
func (w *Workspace) DisplayRoot() string { return w.worktree }

// Info reports bash's confinement, for run_start and a warning on stderr.
func (w *Workspace) Info() Info { return w.info }

// ScratchDir is bash's TMPDIR, removed on Close.
func (w *Workspace) ScratchDir() string { return w.scratch }

// Close releases the root and removes the scratch dir. It is idempotent.
func (w *Workspace) Close() error {
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		// A background walk reads through the root: let it end first. What
		// it found no longer matters.
		if w.budget != nil {
			_ = w.budget.Settle(context.Background())
		}
		var errs []error
		if w.root != nil {
			if err := w.root.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close worktree root: %w", err))
			}
		}
		if w.scratch != "" {
			if err := removeAll(w.scratch); err != nil {
				errs = append(errs, fmt.Errorf("remove scratch dir %s: %w", w.scratch, err))
			}
		}
		w.closeErr = errors.Join(errs...)
	})
	return w.closeErr
}

// usable refuses work on a closed workspace or with an ended context.
func (w *Workspace) usable(ctx context.Context) error {
	if w.closed.Load() {
		return &sandbox.SandboxError{Op: "host workspace", Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.budget.Settle(ctx)
}

// readable is usable for a tool that only reads: it does not wait for a
// budget walk under way (see budget), but reports a breach already found.
func (w *Workspace) readable(ctx context.Context) error {
	if w.closed.Load() {
		return &sandbox.SandboxError{Op: "host workspace", Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.budget.Verdict()
}

// removeAll removes dir like os.RemoveAll, first making writable the
// directories bash may have made read-only (a Go module cache does).
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
