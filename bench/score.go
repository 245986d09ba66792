package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
)

// AcceptanceResult is what scoring one case found.
type AcceptanceResult struct {
	// Outcome is one of AcceptancePass, AcceptanceFail (the command exited
	// otherwise, or outlived its deadline: the original scored a hang
	// skipped), AcceptanceGamed (the worker's copy of a file under
	// acceptance/ is changed, gone or no longer a regular file; the
	// command did not run) and AcceptanceSkipped (the check could not be
	// made: a malformed acceptance block, no daemon, no image, a failed
	// upload).
	Outcome string
	// Detail says why, for every outcome but a pass: the exit code, the
	// deadline, the changed files, the error.
	Detail string
	// ExitCode is the command's, when it ran.
	ExitCode int
	// TimedOut reports a command killed at its deadline.
	TimedOut bool
	// Output is the command's output, capped (its first and last parts).
	Output string
	// Duration is how long the command ran; Elapsed how long the whole
	// check took (hashing, containers, upload and removal included).
	Duration, Elapsed time.Duration
	// Err is the error behind a skipped score, for errors.Is (a cancelled
	// sweep is context.Canceled, not a verdict on the case).
	Err error
}

// Score is the result as a sweep records it.
func (r AcceptanceResult) Score() Score {
	return Score{Outcome: r.Outcome, Detail: r.Detail, Output: r.Output, Seconds: r.Elapsed.Seconds()}
}

// Tree is the run's tree a case is scored on: its exported worktree on
// this machine (Dir), or its kept work volume (Volume). Exactly one is set.
type Tree struct {
	Dir, Volume string
}

// AcceptanceRunner runs acceptance checks; workspace.AcceptanceChecker is
// the one that makes containers.
type AcceptanceRunner interface {
	RunAcceptance(ctx context.Context, spec workspace.AcceptanceSpec) (workspace.AcceptanceResult, error)
}

// Scorer scores cases in acceptance containers (B-6, B-7).
type Scorer struct {
	// Runner makes the containers.
	Runner AcceptanceRunner
	// Image is the image the case's run used.
	Image string
	// Timeout bounds the acceptance command
	// (workspace.DefaultAcceptanceTimeout when 0).
	Timeout time.Duration
	// OutputCap bounds the output kept (workspace.DefaultAcceptanceOutput
	// when 0).
	OutputCap int
	// Labels are added to the check's containers and volumes.
	Labels map[string]string
}

// Score scores fixture f's acceptance on tree; it never fails, an error is
// a skipped score. The worker's copies of the hashed files are checked
// first: one that differs from bench.json is gamed and the command never
// runs. Otherwise the command runs in a fresh container with the tree at
// /work and the fixture's own acceptance/ at /acceptance, read-only: exit
// 0 is a pass, anything else, a hang past the deadline included, a fail.
func (s Scorer) Score(ctx context.Context, f Fixture, tree Tree) AcceptanceResult {
	start := time.Now()
	r := s.score(ctx, f, tree)
	r.Elapsed = time.Since(start)
	return r
}

func (s Scorer) score(ctx context.Context, f Fixture, tree Tree) AcceptanceResult {
	if (tree.Dir == "") == (tree.Volume == "") {
		return skipped(errors.New("the tree to score is given as neither or both of a directory and a volume"))
	}
	spec, bad := s.spec(f)
	if bad != nil {
		return *bad
	}
	spec.TreeDir, spec.Volume = tree.Dir, tree.Volume
	res, err := s.Runner.RunAcceptance(ctx, spec)
	return s.verdict(f, res, err)
}

// spec is fixture f's check without its tree; a fixture that cannot be
// checked gives the skipped result instead.
func (s Scorer) spec(f Fixture) (workspace.AcceptanceSpec, *AcceptanceResult) {
	if err := f.Acceptance.Validate(); err != nil {
		r := skipped(fmt.Errorf("malformed acceptance of %s: %w", f.Name, err))
		return workspace.AcceptanceSpec{}, &r
	}
	if f.FS == nil {
		r := skipped(fmt.Errorf("fixture %s has no files", f.Name))
		return workspace.AcceptanceSpec{}, &r
	}
	checker, err := fs.Sub(f.FS, AcceptanceDir)
	if err != nil {
		r := skipped(fmt.Errorf("the checker of %s: %w", f.Name, err))
		return workspace.AcceptanceSpec{}, &r
	}
	return workspace.AcceptanceSpec{
		Image:      s.Image,
		Acceptance: checker,
		Command:    f.Acceptance.Command,
		Guard:      f.Acceptance.Hashes,
		Timeout:    s.Timeout,
		OutputCap:  s.OutputCap,
		Labels:     s.Labels,
	}, nil
}

// verdict turns a check's result into the case's score.
func (s Scorer) verdict(f Fixture, res workspace.AcceptanceResult, err error) AcceptanceResult {
	if err != nil {
		return skipped(fmt.Errorf("acceptance check of %s: %w", f.Name, err))
	}
	if changed := changedFiles(f.Acceptance.Hashes, res.Hashes); len(changed) > 0 {
		return AcceptanceResult{Outcome: AcceptanceGamed, Detail: "the worker's copy differs from bench.json: " + strings.Join(changed, ", ")}
	}
	if !res.Ran {
		return skipped(errors.New("the acceptance command did not run"))
	}
	sc := AcceptanceResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Output: string(res.Output), Duration: res.Duration}
	switch {
	case res.TimedOut:
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = workspace.DefaultAcceptanceTimeout
		}
		sc.Outcome, sc.Detail = AcceptanceFail, fmt.Sprintf("the acceptance command was still running after %s", timeout)
	case res.ExitCode == 0:
		sc.Outcome = AcceptancePass
	default:
		sc.Outcome, sc.Detail = AcceptanceFail, fmt.Sprintf("the acceptance command exited with %d", res.ExitCode)
	}
	return sc
}

// acceptancePreparer is a runner that can make a check ahead of its tree
// (workspace.AcceptanceChecker).
type acceptancePreparer interface {
	Prepare(ctx context.Context, spec workspace.AcceptanceSpec) (*workspace.PreparedAcceptance, error)
}

// ScorePrepared is fixture f's check made ahead of the tree it scores: its
// volumes, checker and container exist while the run still works, so the
// score, once the tree is there, costs its upload and the command.
type ScorePrepared struct {
	s        Scorer
	f        Fixture
	prepared *workspace.PreparedAcceptance
	used     bool
}

// Prepare makes f's check ahead. A runner that cannot prepare, or a
// preparation that fails, leaves the score to be made whole when the
// tree is there: Prepare never fails.
func (s Scorer) Prepare(ctx context.Context, f Fixture) *ScorePrepared {
	sp := &ScorePrepared{s: s, f: f}
	pr, ok := s.Runner.(acceptancePreparer)
	if !ok {
		return sp
	}
	spec, bad := s.spec(f)
	if bad != nil {
		return sp
	}
	if p, err := pr.Prepare(ctx, spec); err == nil {
		sp.prepared = p
	}
	return sp
}

// Score scores the tree in dir with the prepared check (once; a second
// call, or a check that could not be prepared, makes a whole new one).
// The prepared check stays until Release.
func (sp *ScorePrepared) Score(ctx context.Context, dir string) AcceptanceResult {
	start := time.Now()
	p := sp.prepared
	if p == nil || sp.used {
		return sp.s.Score(ctx, sp.f, Tree{Dir: dir})
	}
	sp.used = true
	res, err := p.Run(ctx, dir)
	r := sp.s.verdict(sp.f, res, err)
	r.Elapsed = time.Since(start)
	return r
}

// Release removes the prepared check, used or not.
func (sp *ScorePrepared) Release() {
	if sp.prepared != nil {
		sp.prepared.Remove()
		sp.prepared = nil
	}
}

// changedFiles names every hashed path whose found hash differs, sorted.
func changedFiles(want, found map[string]string) []string {
	var changed []string
	for _, p := range (AcceptanceSpec{Hashes: want}).HashPaths() {
		switch got, ok := found[p]; {
		case !ok:
			changed = append(changed, p+" (missing or not a regular file)")
		case got != want[p]:
			changed = append(changed, p+" (changed)")
		}
	}
	return changed
}

func skipped(err error) AcceptanceResult {
	return AcceptanceResult{Outcome: AcceptanceSkipped, Detail: err.Error(), Err: err}
}

// CaseScorer scores a sweep's cases: its Score is a Sweep's. The fixture
// is the one the case's task names, the tree the run's exported worktree,
// the checks made on the docker engine the case ran on.
type CaseScorer struct {
	Fixtures []Fixture
	// Runner is the acceptance runner of a docker engine (a DOCKER_HOST
	// value, "" for the environment's).
	Runner func(host string) (AcceptanceRunner, error)
	// Timeout, OutputCap and Labels are a Scorer's.
	Timeout   time.Duration
	OutputCap int
	Labels    map[string]string
}

// Prepare makes the check of the case req asks for ahead of its tree
// (req.Tree is not read); the sweep scores the tree with it once the run
// ended.
func (c CaseScorer) Prepare(ctx context.Context, req ScoreRequest) PreparedScore {
	f, ok := FixtureNamed(c.Fixtures, req.Task)
	if !ok {
		return unprepared{c, req}
	}
	runner, err := c.Runner(req.Host)
	if err != nil {
		return unprepared{c, req}
	}
	s := Scorer{Runner: runner, Image: req.Image, Timeout: c.Timeout, OutputCap: c.OutputCap, Labels: c.Labels}
	return preparedCase{s.Prepare(ctx, f)}
}

// preparedCase is a ScorePrepared as the sweep's PreparedScore.
type preparedCase struct{ sp *ScorePrepared }

func (p preparedCase) Score(ctx context.Context, tree string) Score {
	return p.sp.Score(ctx, tree).Score()
}
func (p preparedCase) Release() { p.sp.Release() }

// unprepared scores a case whose check could not be made ahead.
type unprepared struct {
	c   CaseScorer
	req ScoreRequest
}

func (u unprepared) Score(ctx context.Context, tree string) Score {
	req := u.req
	req.Tree = tree
	return u.c.Score(ctx, req)
}
func (unprepared) Release() {}

// Score scores the case req asks for.
func (c CaseScorer) Score(ctx context.Context, req ScoreRequest) Score {
	f, ok := FixtureNamed(c.Fixtures, req.Task)
	if !ok {
		return skipped(fmt.Errorf("%w: %s", ErrNoFixture, req.Task)).Score()
	}
	runner, err := c.Runner(req.Host)
	if err != nil {
		return skipped(fmt.Errorf("acceptance check of %s: %w", f.Name, err)).Score()
	}
	s := Scorer{Runner: runner, Image: req.Image, Timeout: c.Timeout, OutputCap: c.OutputCap, Labels: c.Labels}
	return s.Score(ctx, f, Tree{Dir: req.Tree}).Score()
}
