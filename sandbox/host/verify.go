package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
	"github.com/dirtywork/dirtywork/sandbox/workerrepo"
)

// verifyHome is the verify session's home inside its jail: empty, on the
// jail's own /tmp.
const verifyHome = "/tmp/home"

// Verify runs the verify command on the sealed worktree in a jail of its
// own (see sandbox.VerifyRun):
//
//  1. the worker's jail is swept: its init kills whatever the commands
//     left (one that survives SIGKILL ends the run, sandbox_error);
//  2. the worktree is sealed (sealTree): what the export would drop or
//     quarantine, and the ignored files the worker made, are taken out;
//  3. a new jail runs the command: its own /tmp, an empty home, a git dir
//     made afresh from the base commit, none of the worker's processes,
//     config or hooks; the host measures the tree meanwhile;
//  4. the jail is killed with everything it started, what the command
//     made is taken out, and what it changed of the sealed tree reported.
func (w *Workspace) Verify(ctx context.Context, command string, timeout time.Duration) (sandbox.VerifyRun, error) {
	run := sandbox.VerifyRun{BashResult: sandbox.BashResult{ExitCode: -1, Timeout: timeout}}
	c, err := w.client(ctx)
	if err != nil {
		return run, err
	}
	if err := w.settleBudget(ctx, c); err != nil {
		return run, err
	}
	if n, err := c.Sweep(ctx, false); err != nil {
		return run, w.failed(ctx, "verify", err)
	} else if n > 0 {
		w.stopJail()
		return run, &sandbox.SandboxError{Op: "verify", Err: fmt.Errorf("%d processes of the worker survived SIGKILL; the jail was stopped", n)}
	}
	w.trace("verify_swept")
	report, m, err := w.sealTree(ctx)
	if err != nil {
		return run, &sandbox.SandboxError{Op: "seal the worktree for verify", Err: err}
	}
	w.trace("verify_sealed")
	run.Sealed = report.Notes()
	res, err := w.runVerifyJail(ctx, command, timeout)
	if err != nil {
		return run, err
	}
	run.BashResult = res
	changes, err := m.Rollback(context.WithoutCancel(ctx), w.worktree)
	if err != nil {
		return run, &sandbox.SandboxError{Op: "check the worktree after verify", Err: err}
	}
	w.trace("verify_checked")
	run.Tree, run.Changed = m.Hash(), changes.Changed
	// The worker's tool server walks the tree again (the seal took things
	// out of it); the next command takes the verdict.
	if _, err := c.Sweep(ctx, true); err != nil {
		return run, w.failed(ctx, "verify", err)
	}
	w.mu.Lock()
	w.walkPending = true
	w.mu.Unlock()
	if v := w.currentViolation(); v != nil {
		return run, v
	}
	return run, nil
}

// runVerifyJail runs command in a fresh jail on the worktree and ends the
// jail, and everything in it, afterwards. The jail is the one made ahead
// (PrepareVerify) when there is one.
func (w *Workspace) runVerifyJail(ctx context.Context, command string, timeout time.Duration) (sandbox.BashResult, error) {
	res := sandbox.BashResult{ExitCode: -1, Timeout: timeout}
	vj, err := w.takeVerifyJail(ctx)
	if err != nil {
		return res, err
	}
	defer vj.close()
	w.trace("verify_session")
	w.watch.begin()
	reply, err := vj.tb.Bash(ctx, command, timeout)
	w.watch.end()
	w.trace("verify_ran")
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if v := w.currentViolation(); v != nil {
			return res, v
		}
		return res, &sandbox.SandboxError{Op: "verify", Err: err}
	}
	if reply.Leftover > 0 {
		return res, &sandbox.SandboxError{Op: "verify", Err: fmt.Errorf("%d processes of verify survived SIGKILL", reply.Leftover)}
	}
	if reply.ExitCode != 0 {
		// The worker gets another round: its jail is made meanwhile. A
		// verify that passed ends the run's verifying.
		w.prepareNextVerify()
	}
	return reply.BashResult, nil
}

// verifyJail is a verify session's jail up to its command: the session's
// git dir made afresh, the tool server answering, nothing else run.
type verifyJail struct {
	sess verifySession
	proc jailProc
	tb   *toolbox.Client
}

// close ends the jail, and everything in it, and removes its session.
func (v *verifyJail) close() {
	_ = v.tb.Close()
	_ = v.proc.Kill()
	_ = v.proc.Wait()
	v.sess.remove()
}

// startVerifyJail makes a verify session and starts its jail.
func (w *Workspace) startVerifyJail(ctx context.Context) (*verifyJail, error) {
	sess, err := w.newVerifySession()
	if err != nil {
		return nil, &sandbox.SandboxError{Op: "verify", Err: err}
	}
	proc, err := w.jailer.Start(ctx, w.verifySpec(sess))
	if err != nil {
		sess.remove()
		return nil, &sandbox.SandboxError{Op: "verify", Err: fmt.Errorf("start the verify jail: %w", err)}
	}
	vj := &verifyJail{sess: sess, proc: proc, tb: toolbox.NewClient(proc.Stdout(), proc.Stdin())}
	fail := func(format string, args ...any) (*verifyJail, error) {
		vj.close()
		return nil, &sandbox.SandboxError{Op: "verify", Err: fmt.Errorf(format, args...)}
	}
	w.trace("verify_jail")
	hello, err := vj.tb.Hello(ctx, sandbox.Limits{})
	if err != nil {
		return fail("start the tool server in the verify jail: %w", err)
	}
	if hello.Dumpable {
		return fail("the tool server in the verify jail is dumpable")
	}
	script, err := sess.script(w)
	if err != nil {
		return fail("%w", err)
	}
	setup, err := vj.tb.Bash(ctx, script, checkoutTimeout)
	if err == nil && setup.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", setup.ExitCode, truncate(setup.Output+setup.LaunchError, 500))
	}
	if err != nil {
		return fail("make the verify session's git dir: %w", err)
	}
	return vj, nil
}

// verifySession is one verify's git dir, made afresh from the base
// commit under the worker repository's directory, and the gitfile the
// jail shows at <worktree>/.git.
type verifySession struct {
	dir, gitDir, gitfile, tmp string
}

func (w *Workspace) newVerifySession() (verifySession, error) {
	dir, err := os.MkdirTemp(w.private.dir, "verify-")
	if err != nil {
		return verifySession{}, fmt.Errorf("make the verify session: %w", err)
	}
	s := verifySession{dir: dir, gitDir: filepath.Join(dir, "git"), gitfile: filepath.Join(dir, "gitfile"), tmp: filepath.Join(dir, "tmp")}
	for _, d := range []string{s.gitDir, s.tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = removeAll(dir)
			return verifySession{}, fmt.Errorf("make the verify session: %w", err)
		}
	}
	if err := os.WriteFile(s.gitfile, []byte("gitdir: "+s.gitDir+"\n"), 0o444); err != nil {
		_ = removeAll(dir)
		return verifySession{}, fmt.Errorf("make the verify session: %w", err)
	}
	return s, nil
}

func (s verifySession) remove() { _ = removeAll(s.dir) }

// script makes the session's git dir (the base commit, its index the base
// tree's, the work tree kept) and its home.
func (s verifySession) script(w *Workspace) (string, error) {
	r := workerrepo.Repo{
		GitDir: s.gitDir, WorkTree: w.worktree, BaseObjects: w.private.objects,
		Branch: strings.TrimPrefix(w.cfg.Branch, "refs/heads/"), Base: w.startCommit,
	}
	if !w.cfg.WithHistory {
		r.Shallow = w.private.shallow
	}
	script, err := workerrepo.Script(r, false)
	if err != nil {
		return "", err
	}
	return "mkdir -p " + verifyHome + " && (\n" + script + ") >/dev/null", nil
}

// verifySpec is the verify jail: the worker's, with the session's git dir
// in place of the worker's repository and an empty home.
func (w *Workspace) verifySpec(s verifySession) jailSpec {
	spec := w.spec
	spec.Env = make([]string, 0, len(w.spec.Env)+1)
	for _, kv := range w.spec.Env {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "HOME", "GIT_DIR", "TMPDIR":
		default:
			spec.Env = append(spec.Env, kv)
		}
	}
	if hostView(w.jailer) {
		// No mount namespace: no /tmp of its own, no gitfile over .git.
		spec.Env = append(spec.Env, "HOME="+s.tmp, "TMPDIR="+s.tmp, "GIT_DIR="+s.gitDir)
		spec.Scratch = s.tmp
	} else {
		spec.Env = append(spec.Env, "HOME="+verifyHome, "TMPDIR=/tmp")
	}
	// The worker's git dir, and the gitfile that leads to it, give way to
	// the session's; everything else (the binary, the base objects, the
	// egress proxy's socket) is bound as for the worker.
	spec.Binds = make([]bind, 0, len(w.spec.Binds))
	for _, b := range w.spec.Binds {
		switch {
		case b.Path == w.private.gitDir:
			b.Path = s.gitDir
		case b.Over == w.private.gitfile:
			b.Over = s.gitfile
		}
		spec.Binds = append(spec.Binds, b)
	}
	return spec
}
