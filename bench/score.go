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
	if err := f.Acceptance.Validate(); err != nil {
		return skipped(fmt.Errorf("malformed acceptance of %s: %w", f.Name, err))
	}
	if (tree.Dir == "") == (tree.Volume == "") {
		return skipped(errors.New("the tree to score is given as neither or both of a directory and a volume"))
	}
	if f.FS == nil {
		return skipped(fmt.Errorf("fixture %s has no files", f.Name))
	}
	checker, err := fs.Sub(f.FS, AcceptanceDir)
	if err != nil {
		return skipped(fmt.Errorf("the checker of %s: %w", f.Name, err))
	}
	res, err := s.Runner.RunAcceptance(ctx, workspace.AcceptanceSpec{
		Image:      s.Image,
		TreeDir:    tree.Dir,
		Volume:     tree.Volume,
		Acceptance: checker,
		Command:    f.Acceptance.Command,
		Guard:      f.Acceptance.Hashes,
		Timeout:    s.Timeout,
		OutputCap:  s.OutputCap,
		Labels:     s.Labels,
	})
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
