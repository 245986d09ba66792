package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/sandbox/seal"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// checkoutTimeout bounds the first command in the jail: making the
// worker's repository and checking the base tree out (a transfer of the
// whole tree).
const checkoutTimeout = 300 * time.Second

// Workspace is a run's worktree on the host, worked on by the tool server
// (`dirtywork toolbox`) inside the run's jail for the run's whole life. It
// implements sandbox.Workspace; every tool call, bash included, is a call
// to that server, as in docker mode: one protocol, one budget, one set of
// tool tests. The host side keeps what the worker cannot forge: a watch on
// the tree's size while a command runs, and Finalize, which reads no git
// metadata the worker wrote.
type Workspace struct {
	// FileTools answers the file tools, grep and list_dir through textTool.
	toolbox.FileTools

	cfg Config
	// worktree, commonDir and adminDir are cfg's paths, resolved.
	worktree, commonDir, adminDir string
	// private is the worker's repository and what it is made from.
	private privateRepo
	// startCommit is the commit the worker's branch starts at: the lane
	// branch's tip when the workspace opened, which is the base commit
	// unless a resumed run committed beyond it. Set by start.
	startCommit string
	git         *gitops.Git
	jailer      jailer
	spec        jailSpec
	info        Info
	// toolchains is what the jail shows of the toolchain roots, settled
	// with the jail.
	toolchains toolchainPlan
	// root and fs read the worktree from the host side: the size watch
	// and Finalize.
	root *os.Root
	fs   *fsops.FS
	// gitRoot and gitFS read the worker's private git dir, measured
	// like the tree (gitDirLimits).
	gitRoot *os.Root
	gitFS   *fsops.FS
	// operatorEnv is the environment dirtywork's own git starts from.
	operatorEnv []string
	// egress is the run's egress proxy (--allow-network), nil without.
	egress *hostEgress

	// verifyAheadOn is set once PrepareVerify asked for verify jails made
	// ahead; verifyNext is the one being made, verifyCtx (cancelled by
	// verifyCancel at Close) bounds its making. Guarded by mu.
	verifyAheadOn bool
	verifyNext    *verifyAhead
	verifyCtx     context.Context
	verifyCancel  context.CancelFunc
	// beginOnce starts the background start once (Begin); beginCtx is
	// its context.
	beginOnce sync.Once
	beginCtx  context.Context
	// ready is closed once the jail runs and the base tree is checked
	// out in it, startErr set if that failed; proc and tb are set before.
	ready    chan struct{}
	startErr error
	proc     jailProc
	tb       *toolbox.Client

	// watch measures the tree from outside while a command runs.
	watch *sizeWatch
	// base is the base commit's tree, read from the host repository while
	// the worker works, for Finalize's diff.
	base *baseTree
	// checkedOut is the tree as the checkout left it, before the worker
	// touched it (nil when the tree was kept: a resumed run): Finalize
	// diffs only what changed since.
	checkedOut treeStats
	// since is the seal's baseline: marked in the worktree's file system
	// once the checkout was done, before the worker's first call.
	since time.Time

	mu sync.Mutex
	// pre reads the tree's files ahead of the seal, from the baseline on.
	pre *prehash
	// walkPending is set after a command: the tool server is walking the
	// tree, and the next command or writing tool takes the verdict first.
	walkPending bool
	// violation is the breach that ended the run, from the size watch or
	// the tool server's budget.
	violation *sandbox.BudgetError
	// sealed is what every seal of the run found (sealTree).
	sealed    seal.Report
	stopped   bool // the jail is stopped: no more tool calls
	closed    bool
	closeOnce sync.Once
	closeErr  error
}

var _ sandbox.Workspace = (*Workspace)(nil)

// Open prepares the run's workspace and returns at once: the worker's
// private repository, the jail and the checkout of the base tree inside it
// are made in the background, while the first model request is out, and
// every tool call (and Finalize) waits for them. What the jail will be is
// settled here, so Info is true from the start, and a jail that cannot be
// had is refused here (ErrNoJail) unless cfg.AllowUnconfined.
func Open(ctx context.Context, cfg Config) (*Workspace, error) {
	w := &Workspace{cfg: cfg, git: gitops.New(), ready: make(chan struct{})}
	w.FileTools = toolbox.FileTools{Call: w.textTool}
	if err := w.resolvePaths(); err != nil {
		return nil, err
	}
	if cfg.RunDir == "" {
		return nil, errors.New("open host workspace: no run directory given")
	}
	w.operatorEnv = cfg.Env
	if w.operatorEnv == nil {
		w.operatorEnv = os.Environ()
	}
	w.git.Environ = func() []string { return w.operatorEnv }
	root, err := os.OpenRoot(w.worktree)
	if err != nil {
		return nil, fmt.Errorf("open worktree %s: %w", w.worktree, err)
	}
	w.root = root
	w.fs = fsops.New(root, w.worktree)
	if w.private, err = newPrivateRepo(w.worktree); err != nil {
		_ = root.Close()
		return nil, err
	}
	if err := w.chooseJail(ctx); err != nil {
		_ = root.Close()
		_ = w.private.remove()
		return nil, err
	}
	if w.egressOn() {
		if err := w.startEgress(); err != nil {
			_ = root.Close()
			_ = w.private.remove()
			return nil, err
		}
	}
	if w.gitRoot, err = os.OpenRoot(w.private.gitDir); err != nil {
		_ = w.stopEgress()
		_ = root.Close()
		_ = w.private.remove()
		return nil, fmt.Errorf("open the worker's git dir: %w", err)
	}
	w.gitFS = fsops.New(w.gitRoot, w.private.gitDir)
	w.watch = newSizeWatch(w.measure, w.breach)
	w.beginCtx = context.WithoutCancel(ctx)
	// Before anything can begin the start, which hurries the read.
	w.base = readBaseTree(w.git, w.cfg.RepoRoot, w.cfg.BaseCommit, baseTreeDelay)
	// The start waits for Begin, so that it does not take the CPU from
	// the way to the first model request; a caller that never says begin
	// gets it shortly anyway.
	time.AfterFunc(beginDelay, w.Begin)
	return w, nil
}

// beginDelay is when the background start begins at the latest.
const beginDelay = 100 * time.Millisecond

// Begin starts making the worker's repository, the jail and the checkout
// in the background, if that has not begun: the engine calls it once the
// first model request is on its way. Idempotent.
func (w *Workspace) Begin() {
	w.beginOnce.Do(func() { go w.start(w.beginCtx) })
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
	if w.cfg.RepoRoot == "" {
		w.cfg.RepoRoot = w.worktree
	}
	return nil
}

// start makes the worker's repository, starts the jail with the tool
// server and checks the base tree out in it; ready is closed at the end,
// startErr set if any step failed.
func (w *Workspace) start(ctx context.Context) {
	defer close(w.ready)
	w.startErr = w.startJail(ctx)
}

func (w *Workspace) startJail(ctx context.Context) error {
	// What killed runs left behind goes first; it costs a directory read.
	sweepStaleRepos(filepath.Dir(w.private.dir))
	env := w.operatorEnvMap()
	home := operatorHome(w.cfg.Home, env)
	branch := "refs/heads/" + strings.TrimPrefix(w.cfg.Branch, "refs/heads/")
	out, err := w.git.Run(ctx, gitops.Call{Dir: w.cfg.RepoRoot, Args: []string{"rev-parse", "--verify", "-q", branch + "^{commit}"}})
	if err != nil {
		return fmt.Errorf("read the lane's branch %s: %w", branch, err)
	}
	w.startCommit = strings.TrimSpace(string(out))
	// The base pack is made while python's user site is asked for and the
	// jail and its tool server start: only the checkout needs it. The
	// jail reads the pack's directory through a read-only view, where
	// the pack appears once written; no command runs in the jail before
	// the checkout.
	var packErr error
	var packing sync.WaitGroup
	packing.Go(func() {
		packErr = w.private.fillBase(ctx, w.git, w.cfg.RepoRoot, w.startCommit, w.cfg.WithHistory)
		w.trace("host_pack")
	})
	// Every return waits for the pack: its files are written into the
	// worker's repository, which a failed start removes.
	defer packing.Wait()
	site := pythonUserSite(ctx, env, w.operatorEnv, w.private.dir, w.cfg.UserSiteCache)
	w.trace("host_user_site")
	w.spec = w.jailSpec(env, home, site)
	proc, err := w.jailer.Start(ctx, w.spec)
	if err != nil {
		return fmt.Errorf("start the jail: %w", err)
	}
	w.trace("host_jail")
	w.proc = proc
	if w.cfg.OnJailStarted != nil {
		w.cfg.OnJailStarted(proc.Info())
	}
	w.tb = toolbox.NewClient(proc.Stdout(), proc.Stdin())
	hello, err := w.tb.Hello(ctx, w.cfg.Limits)
	if err != nil {
		return fmt.Errorf("start the tool server in the jail: %w", err)
	}
	w.trace("host_hello")
	if hello.Dumpable {
		return errors.New("the tool server in the jail is dumpable: the worker could take it over")
	}
	packing.Wait()
	if packErr != nil {
		return packErr
	}
	script, err := w.private.script(strings.TrimPrefix(w.cfg.Branch, "refs/heads/"), w.startCommit, !w.cfg.WithHistory, !w.cfg.KeepTree)
	if err != nil {
		return err
	}
	res, err := w.tb.Bash(ctx, script, checkoutTimeout)
	if err != nil {
		return fmt.Errorf("check out the base tree in the jail: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("check out the base tree in the jail: exit %d (timed out %v): %s",
			res.ExitCode, res.TimedOut, truncate(res.Output+res.LaunchError, 500))
	}
	w.trace("host_checkout")
	w.base.now() // the start's CPU is spent: read the base tree meanwhile
	// Everything the checkout wrote is stamped before this, everything the
	// worker changes after it.
	if w.since, err = seal.Mark(w.worktree); err != nil {
		return err
	}
	if w.cfg.OnBaseline != nil {
		w.cfg.OnBaseline(w.since)
	}
	w.startPrehash()
	pause.At(pause.Jail) // the jail and its tree are ready, no tool call made
	if !w.cfg.KeepTree {
		// Before any tool call: nothing of the worker's is there yet.
		if stats, err := statTree(w.root); err == nil {
			w.checkedOut = stats
		}
		w.trace("host_stat")
	}
	return nil
}

// trace tells cfg.Trace that phase ended.
func (w *Workspace) trace(phase string) {
	if w.cfg.Trace != nil {
		w.cfg.Trace(phase)
	}
}

// operatorEnvMap is the operator's environment as a map.
func (w *Workspace) operatorEnvMap() map[string]string { return envMap(w.operatorEnv) }

// DisplayRoot is the worktree's resolved path, where the model is told its
// files are (the jail shows the tree at the same path).
func (w *Workspace) DisplayRoot() string { return w.worktree }

// Info is run_start's sandbox object: the jail's layers and the limits.
func (w *Workspace) Info() Info { return w.info }

// client is the tool server once the jail runs, or the error that ends
// the run: a start that failed, a breach, a stopped workspace.
func (w *Workspace) client(ctx context.Context) (*toolbox.Client, error) {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if w.startErr != nil {
		return nil, &sandbox.SandboxError{Op: "start the host sandbox", Err: w.startErr}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.violation != nil {
		return nil, w.violation
	}
	if w.stopped || w.closed {
		return nil, &sandbox.SandboxError{Op: "host sandbox", Err: ErrClosed}
	}
	return w.tb, nil
}

// breach records a breach the size watch found and kills the jail: the
// command that grew the tree dies with it, and the run ends
// budget_exceeded with the tree kept.
func (w *Workspace) breach(reason string) {
	w.mu.Lock()
	if w.violation == nil {
		w.violation = &sandbox.BudgetError{Reason: reason}
	}
	proc := w.proc
	w.mu.Unlock()
	if proc != nil {
		_ = proc.Kill()
	}
}

// currentViolation is the breach recorded, if any.
func (w *Workspace) currentViolation() *sandbox.BudgetError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.violation
}

// stopJail ends the tool server and the jail; nothing the worker started
// outlives it. Idempotent.
func (w *Workspace) stopJail() {
	w.mu.Lock()
	already := w.stopped
	w.stopped = true
	w.mu.Unlock()
	if already {
		return
	}
	<-w.ready // the start is over: proc and tb are settled
	if w.tb != nil {
		_ = w.tb.Close() // shutdown; the jail's end follows
	}
	if w.proc != nil {
		_ = w.proc.Kill()
		_ = w.proc.Wait()
	}
}

// Close stops the jail, removes the worker's private repository and
// releases the root. Idempotent.
func (w *Workspace) Close() error {
	w.closeOnce.Do(func() {
		// A start that never began never will: ready says so.
		w.beginOnce.Do(func() {
			w.startErr = ErrClosed
			close(w.ready)
		})
		w.watch.stop()
		w.stopVerifyAhead()
		w.mu.Lock()
		w.closed = true // and no reading ahead starts from here on
		w.mu.Unlock()
		w.takeDigests() // the reading ahead ends before the root closes
		w.stopJail()
		var errs []error
		if err := w.stopEgress(); err != nil {
			errs = append(errs, err)
		}
		if w.gitRoot != nil {
			_ = w.gitRoot.Close() // only read
		}
		if err := w.private.remove(); err != nil {
			errs = append(errs, err)
		}
		if err := w.root.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close worktree root: %w", err))
		}
		w.closeErr = errors.Join(errs...)
	})
	return w.closeErr
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// removeAll removes dir like os.RemoveAll, first making writable the
// directories the worker may have made read-only (a Go module cache does).
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
