package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
)

// execution is one run past preflight, made in steps: the record, the
// lane, the workspace, the transcript, then the loop and finalize. Until
// the run exists for good (it is announced, or its sandbox is asked to
// start) a refusal undoes every step so far, last first.
type execution struct {
	r    *Runner
	p    *prepared
	slug string
	rec  *record // nil until the run dir exists
	lane gitops.Lane
	tw   *transcript.Writer
	loop *Loop
	// first is what the first model request was made of, nil until it
	// went out.
	first *firstTurn
	// undo is what a refusal takes back, in the order it was made.
	undo []func()
	// closeLane removes the lane while no worker has touched it.
	closeLane func()
	announced bool
}

// refuse takes back every step so far and returns the refusal.
func (x *execution) refuse(err error) (*Payload, error) {
	for _, f := range slices.Backward(x.undo) {
		f()
	}
	x.undo = nil
	return nil, err
}

// execute creates the run record, the lane and the workspace, runs the
// loop and finalizes.
func (r *Runner) execute(ctx context.Context, p *prepared) (payload *Payload, err error) {
	x := &execution{r: r, p: p}
	// A panic anywhere past preflight still ends with one result: the
	// failure payload once the run record exists, a refusal before.
	// Registered again once the transcript is open, so that one runs
	// first (deferred calls run last-in first-out) and can still write
	// run_end; whichever runs first stops the panic.
	defer x.onPanic(&payload, &err)

	runDir, err := x.createRunDir()
	if err != nil {
		return nil, err
	}
	live, err := transcript.AcquireLiveness(runDir)
	if err != nil {
		return x.refuse(refuse("", "%v", err))
	}
	defer func() { _ = live.Release() }()
	// The result is kept before the liveness lock goes (deferred calls run
	// last-in first-out, after the transcript and the sandbox are closed):
	// whoever sees the run no longer alive finds its result, or knows it
	// died without one.
	defer func() {
		p.waitStashGone()
		if payload != nil {
			r.keep(runDir, payload)
		}
	}()
	r.mark("run_record")

	x.loop = r.newLoop(p)
	defer x.loop.Discard()
	if err := x.recordAndOpenLane(ctx); err != nil {
		return x.refuse(err)
	}
	r.mark("lane")
	if x.first == nil {
		x.first = r.prefetchFirst(ctx, p, x.lane, x.loop)
	}
	x.announce()

	events := &sandboxEvents{}
	op, err := r.openWorkspace(ctx, p, x.rec, x.slug, x.lane, events)
	if err != nil {
		return x.setupFailed(ctx, err)
	}
	x.undo = nil // the run exists for good
	ws := op.ws
	defer func() { _ = ws.Close() }()
	r.mark("workspace")

	x.tw, err = transcript.Create(filepath.Join(runDir, transcript.TranscriptName))
	if err != nil {
		return r.failAfterStart(ctx, p, x.rec, x.slug, x.lane, op, transcript.StatusModelError,
			"unexpected error: create transcript: "+err.Error()), nil
	}
	defer func() { _ = x.tw.Close() }()
	defer x.onPanic(&payload, &err)
	pause.At(pause.Transcript)
	fmt.Fprintf(r.Stderr, "transcript: %s\n", x.tw.Path())

	system := x.systemPrompt(ctx, ws.DisplayRoot())
	_ = x.tw.Write(r.runStart(p, x.lane, op.settings))
	events.attach(x.tw)
	r.mark("run_start")
	if r.OnWorking != nil {
		r.OnWorking()
	}
	if b, ok := ws.(interface{ Begin() }); ok {
		// The host jail starts while the first request is out.
		b.Begin()
	}
	if pv, ok := ws.(interface{ PrepareVerify() }); ok && p.spec.VerifyCommand != "" {
		// The verify session's jail is made while the worker works.
		pv.PrepareVerify()
	}
	out, fin, finErr := r.loopAndFinalize(ctx, p, x.loop, ws, op.guard(x.lane), x.tw, system)
	return x.rec.finish(r, p, x.lane, x.tw, out, fin, finErr, events.setupRecord()), nil
}

// onPanic turns a panic into the run's result: a refusal before the run
// record exists, the failure payload after.
func (x *execution) onPanic(payload **Payload, err *error) {
	v := recover()
	if v == nil {
		return
	}
	msg := fmt.Sprintf("unexpected error: %v", v)
	fmt.Fprintf(x.r.Stderr, "error: %s\n%s", msg, debug.Stack())
	if x.rec == nil {
		*payload, *err = nil, refuse("", "%s", msg)
		return
	}
	*payload, *err = x.rec.failure(x.p, x.slug, x.lane, x.tw, transcript.StatusModelError, msg, nil), nil
}

// createRunDir names the run and makes its run dir.
func (x *execution) createRunDir() (string, error) {
	r, p := x.r, x.p
	slugTask := p.spec.Task
	if p.resume != nil {
		slugTask = p.resume.slugTask // the task's own words, not the resume's
	}
	slug, err := transcript.NewSlug(slugTask, r.now(), r.slugSalt)
	if err != nil {
		return "", refuse("", "make a run slug: %v", err)
	}
	x.slug, p.slug = slug, slug
	runsRoot, err := transcript.EnsureRunsRoot()
	if err != nil {
		return "", refuse("", "%v", err)
	}
	if p.spec.Sandbox != "docker" {
		// The jail needs python's answer; asking can take longer than
		// making the worktree: ask now, from where the jail's start will.
		p.userSiteCache = filepath.Join(filepath.Dir(runsRoot), "cache", "python-user-site.json")
		host.PrewarmPythonUserSite(os.Environ(), runsRoot, p.userSiteCache)
	}
	runDir, err := transcript.CreateRunDir(runsRoot, slug)
	if err != nil {
		return "", refuse("", "%v", err)
	}
	x.rec = &record{dir: runDir, reserve: transcript.ReserveSpace(runDir)}
	x.undo = append(x.undo, func() { _ = os.RemoveAll(runDir) })
	return runDir, nil
}

// recordAndOpenLane writes run.json, sends the first model request, makes
// the lane and records a resume in the prior run. run.json comes before
// the lane, so a crash at any later moment leaves a record naming the
// repository, worktree and branch the run uses.
func (x *execution) recordAndOpenLane(ctx context.Context) error {
	r, p := x.r, x.p
	planned, err := r.plannedLane(p, x.slug)
	if err != nil {
		return refuse("", "%v", err)
	}
	start := r.startRecord(p, x.slug, planned)
	start.BaseBranch = p.baseBranch(ctx)
	if p.resume != nil {
		// A resume merges where the run it continues would.
		start.BaseBranch = nil
		if b := p.resume.prior.Record.BaseBranch; b != "" {
			start.BaseBranch = &b
		}
	}
	if err := transcript.CreateRun(x.rec.dir, start); err != nil {
		return refuse("", "write run.json: %v", err)
	}
	// The first model request goes out now, while the lane and the
	// sandbox are made (or, when another ref decides the base, once the
	// lane says which commit it is).
	x.first = r.prefetchFirst(ctx, p, planned, x.loop)
	x.lane, x.closeLane, err = r.openLane(ctx, p, x.slug)
	if err != nil {
		return refuse("", "%v", err)
	}
	x.undo = append(x.undo, x.closeLane)
	pause.At(pause.Lane)
	lane := x.lane
	if lane.Worktree != planned.Worktree || lane.Branch != planned.Branch || lane.BaseCommit != planned.BaseCommit {
		if _, err := transcript.Patch(x.rec.dir, transcript.LaneFields{
			Worktree: lane.Worktree, Branch: lane.Branch, BaseCommit: lane.BaseCommit,
		}); err != nil {
			return refuse("", "write run.json: %v", err)
		}
	}
	if err := r.markResumedBy(p, x.slug); err != nil {
		return refuse("", "%v", err)
	}
	x.undo = append(x.undo, func() { r.undoResumedBy(p, x.slug) })
	return nil
}

// announce says where the run works, and tells OnStarted it exists.
func (x *execution) announce() {
	r := x.r
	fmt.Fprintf(r.Stderr, "worktree:   %s\n", x.lane.Worktree)
	if r.OnStarted == nil {
		return
	}
	x.announced = true
	x.undo = nil // a run already announced never vanishes
	r.OnStarted(Started{
		Slug: x.slug, RunDir: x.rec.dir, Transcript: filepath.Join(x.rec.dir, transcript.TranscriptName), PID: os.Getpid(),
	})
}

// setupFailed handles a workspace that did not open: before the run was
// announced a refusal undoes it; after, it is a setup failure (E-18): the
// record stays, the empty lane goes.
func (x *execution) setupFailed(ctx context.Context, err error) (*Payload, error) {
	var pe *PreflightError
	if errors.As(err, &pe) && !x.announced {
		return x.refuse(pe)
	}
	if errors.As(err, &pe) {
		// A run already announced never vanishes: the refusal is its
		// setup failure.
		err = errors.New(strings.TrimSpace(pe.Msg + "; " + pe.Hint))
	}
	x.closeLane()
	if ctx.Err() != nil {
		return x.rec.failure(x.p, x.slug, x.lane, nil, transcript.StatusInterrupted, "", nil), nil
	}
	return x.rec.failure(x.p, x.slug, x.lane, nil, transcript.StatusSandboxError, err.Error(), nil), nil
}

// systemPrompt is the run's system prompt for the tree at root, with the
// repository's conventions at the lane's base commit (read once: the
// prefetched request's, when it was made for that commit).
func (x *execution) systemPrompt(ctx context.Context, root string) string {
	if x.first == nil || x.first.base != x.lane.BaseCommit {
		x.first = x.r.firstTurn(ctx, x.p, x.lane.BaseCommit)
	}
	if x.first.convErr != nil {
		x.r.warnf("cannot read the repository's conventions: %v", x.first.convErr)
	}
	// A prefetched request made for another root is dropped by the loop.
	return SystemPrompt(root, x.first.conv.Name, x.first.conv.Text, x.p.spec.AllowCommit)
}
