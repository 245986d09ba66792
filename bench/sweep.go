package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/transcript"
)

// Sweep is one bench: every (model × task × repeat) case run through the
// normal run path, scored in an acceptance container, one row each
// appended to the results file as it is scored.
type Sweep struct {
	Models  []ModelSpec
	Tasks   []string
	Repeats int
	// Parallel is how many cases run at once (at least 1); no server ever
	// has more than its slots.
	Parallel int
	// Hosts are the docker engines cases are spread over (DOCKER_HOST
	// values; "" is the environment's).
	Hosts []string
	// Out is the results file. Rows already in it are cases scored: a
	// resumed sweep skips them.
	Out string
	// Stamp names the sweep in every row it writes.
	Stamp string
	// Scratch is where Stage makes the cases' repositories, recorded in
	// the state file so that a resumed sweep can remove what a killed
	// one left there.
	Scratch string
	// FixRounds is how often a case whose acceptance failed is resumed
	// with the acceptance output as review feedback.
	FixRounds int
	// Base holds the run settings every case shares; the sweep fills in
	// the repository, task, model, server and docker engine.
	Base engine.Spec

	Stage      func(ctx context.Context, task string) (*Staged, error)
	RunCase    func(ctx context.Context, spec engine.Spec, log io.Writer, hooks CaseHooks) (*engine.Payload, error)
	ResumeCase func(ctx context.Context, req engine.ResumeRequest, log io.Writer, hooks CaseHooks) (*engine.Payload, error)
	Score      func(ctx context.Context, req ScoreRequest) Score
	// Prepare, when set, makes a case's acceptance check ready while its
	// run works (req.Tree is empty); the first score of the case uses it.
	Prepare func(ctx context.Context, req ScoreRequest) PreparedScore
	// Probe asks a server about itself (ProbeServer); Healthy says whether
	// it answers at all (a paused server is probed until it does).
	Probe   func(ctx context.Context, m ModelSpec) ServerInfo
	Healthy func(ctx context.Context, m ModelSpec) error
	// HealthWait bounds how long a failed server is waited for before its
	// cases go on (and fail as the server's).
	HealthWait time.Duration

	Progress *Progress
	Now      func() time.Time

	// state is the sweep's state file beside Out (StatePath).
	state *sweepState
	// releasing are prepared acceptance checks being removed; Run waits
	// for them.
	releasing sync.WaitGroup
	// held are the removals of finished cases' acceptance checks waiting
	// for a case's model to be at work (or the sweep's end): the daemon's
	// removal work then runs in the model's time, not beside the next
	// case's sandbox start.
	heldMu sync.Mutex
	held   []func()
}

// holdRelease keeps a removal until letGo.
func (s *Sweep) holdRelease(f func()) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	s.held = append(s.held, f)
}

// letGo starts the held removals.
func (s *Sweep) letGo() {
	s.heldMu.Lock()
	fs := s.held
	s.held = nil
	s.heldMu.Unlock()
	for _, f := range fs {
		s.releasing.Go(f)
	}
}

// Staged is a case's repository, made from its fixture.
type Staged struct {
	// Repo is the repository the run works on; Task the task text.
	Repo, Task string
	// Cleanup removes the repository and everything the run left in it.
	Cleanup func() error
}

// ScoreRequest asks for a case's acceptance: Tree is the run's exported
// work, scored with Image on the docker engine Host.
type ScoreRequest struct {
	Task, Tree, Image, Host string
}

// CaseHooks are what a sweep is told of a case's run as it goes: Started
// once the run exists (engine.Runner.OnStarted), Working once its sandbox
// is open and the model is at work (engine.Runner.OnWorking). Either may
// be nil.
type CaseHooks struct {
	Started func(engine.Started)
	Working func()
}

// caseCheck is a case's acceptance check made ahead (Sweep.Prepare): start
// begins making it, get waits for it (starting it if nothing did), and
// release hands what was made to the sweep's removals.
type caseCheck struct {
	start   func()
	get     func() PreparedScore
	started atomic.Bool
	s       *Sweep
}

func (s *Sweep) caseCheck(ctx context.Context, req ScoreRequest) *caseCheck {
	ch := &caseCheck{s: s}
	if s.Prepare == nil {
		ch.start = func() {}
		return ch
	}
	ready := make(chan PreparedScore, 1)
	ch.start = sync.OnceFunc(func() {
		ch.started.Store(true)
		go func() { ready <- s.Prepare(ctx, req) }()
	})
	ch.get = sync.OnceValue(func() PreparedScore {
		ch.start()
		return <-ready
	})
	return ch
}

func (ch *caseCheck) release() {
	if ch.started.Load() {
		ch.s.holdRelease(ch.get().Release)
	}
}

// PreparedScore is an acceptance check made ahead of the tree it scores.
// Score scores the tree (once); Release removes what was made, whether
// or not it was used, and may run after the row is written.
type PreparedScore interface {
	Score(ctx context.Context, tree string) Score
	Release()
}

// Score is an acceptance's outcome (one of the Acceptance* values), what
// decided it, the command's output and how long it took.
type Score struct {
	Outcome, Detail, Output string
	Seconds                 float64
}

// benchCase is one (model, task, repeat) of a sweep.
type benchCase struct {
	model   ModelSpec
	task    string
	repeat  int
	retried bool
}

func (c benchCase) key() CaseKey {
	return CaseKey{Model: c.model.Model, Provider: c.model.Provider, BaseURL: c.model.BaseURL, Task: c.task, Repeat: c.repeat}
}

// Run runs every case not scored yet and returns how many rows it wrote.
func (s *Sweep) Run(ctx context.Context) (int, error) {
	if s.Now == nil {
		s.Now = time.Now
	}
	if len(s.Hosts) == 0 {
		s.Hosts = []string{""}
	}
	scored := map[CaseKey]bool{}
	if res, err := ReadResults(s.Out); err == nil {
		for _, r := range res.Rows {
			scored[r.Case()] = true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	slots := map[string]int{}
	serving := map[string]ServerInfo{}
	for _, m := range s.Models {
		slots[m.ServerKey()] = m.Slots
		if s.Probe != nil {
			serving[m.Model+"\x00"+m.ServerKey()] = s.Probe(ctx, m)
		}
	}
	sched := newScheduler[benchCase](s.Parallel, len(s.Hosts), slots)
	total, skipped := 0, 0
	for _, m := range s.Models {
		for _, task := range s.Tasks {
			for rep := range s.Repeats {
				total++
				c := benchCase{model: m, task: task, repeat: rep}
				if scored[c.key()] {
					skipped++
					continue
				}
				sched.add(c, m.ServerKey(), false)
			}
		}
	}
	sched.close()
	s.Progress.start(total, skipped)
	defer s.Progress.finish()
	s.state = openSweepState(s.Out, s.Stamp, s.Scratch, s.Now)
	s.state.start(total, skipped)
	defer s.state.finish()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		written  int
		firstErr error
		probing  = map[string]bool{}
	)
	for range max(1, s.Parallel) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, host, ok := sched.next(ctx)
				if !ok {
					return
				}
				server := c.model.ServerKey()
				row := s.runCase(ctx, c, host, serving[c.model.Model+"\x00"+server])
				if ctx.Err() != nil {
					sched.done(server, host)
					return
				}
				if (row.FailureClass == FailureServer || row.FailureClass == FailureSandbox) && !c.retried {
					// Not the model's failure: once more, after the
					// server answers again (its queue waits meanwhile).
					c.retried = true
					if row.FailureClass == FailureServer {
						mu.Lock()
						start := !probing[server]
						probing[server] = true
						mu.Unlock()
						if start {
							sched.pause(server)
							go func() {
								s.waitHealthy(ctx, c.model)
								mu.Lock()
								probing[server] = false
								mu.Unlock()
								sched.resume(server)
							}()
						}
					}
					s.Progress.note(fmt.Sprintf("%s  %s  repeat %d: %s failure, retrying once (%s)",
						c.model.Model, c.task, c.repeat, row.FailureClass, row.FailureEvidence))
					sched.add(c, server, true)
					sched.done(server, host)
					continue
				}
				err := AppendRow(s.Out, row)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					written++
				}
				mu.Unlock()
				s.Progress.caseDone(row)
				sched.done(server, host)
			}
		}()
	}
	wg.Wait()
	s.letGo()
	s.releasing.Wait()
	if firstErr != nil {
		return written, fmt.Errorf("write %s: %w", s.Out, firstErr)
	}
	return written, ctx.Err()
}

// waitHealthy probes a failed server until it answers or HealthWait has
// passed, backing off from one second to fifteen.
func (s *Sweep) waitHealthy(ctx context.Context, m ModelSpec) {
	if s.Healthy == nil {
		return
	}
	wait := s.HealthWait
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	deadline := s.Now().Add(wait)
	delay := time.Second
	for s.Healthy(ctx, m) != nil && s.Now().Before(deadline) {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, 15*time.Second)
	}
}

// runCase stages, runs, scores (and fix-rounds) one case into its row.
func (s *Sweep) runCase(ctx context.Context, c benchCase, host int, serving ServerInfo) Row {
	row := s.identity(c)
	row.Serving = servingOf(serving, c.model.Slots)
	inFlight := s.Progress.caseStarted(c)
	defer s.Progress.caseEnded(inFlight)
	flight := s.state.caseStarted(c, s.Hosts[host])
	defer s.state.caseEnded(flight)

	// The acceptance check is made while the model works (from the
	// moment the run's sandbox is open, so as not to slow its start), and
	// removed off the case's path once the case is over.
	check := s.caseCheck(ctx, ScoreRequest{Task: c.task, Image: s.Base.Docker.Image, Host: s.Hosts[host]})
	defer check.release()

	t0 := s.Now()
	staged, err := s.Stage(ctx, c.task)
	stagingS := s.Now().Sub(t0).Seconds()
	if err != nil {
		return s.benchError(row, fmt.Sprintf("staging failed: %v", err))
	}
	s.state.staged(flight, staged.Repo)
	defer func() {
		if err := staged.Cleanup(); err != nil {
			s.Progress.note(fmt.Sprintf("warning: %s: %v", c.task, err))
		}
	}()

	spec := s.Base
	spec.Repo, spec.Task, spec.Model = staged.Repo, staged.Task, c.model.Model
	if c.model.Provider != "" {
		spec.Provider = c.model.Provider
	}
	if c.model.BaseURL != "" {
		spec.BaseURL = c.model.BaseURL
	}
	spec.Sandbox = "docker"
	spec.Docker.Host = s.Hosts[host]
	// The run's stderr: the runner may write it from more than one
	// goroutine.
	var log lockedBuffer
	hooks := CaseHooks{
		Started: func(st engine.Started) {
			s.Progress.follow(inFlight, st.Transcript)
			s.state.follow(flight, st.Slug, st.RunDir)
		},
		Working: func() {
			check.start()
			s.letGo() // the model is at work now: earlier cases' removals run in its time
		},
	}
	runStart := s.Now()
	payload, err := s.RunCase(ctx, spec, &log, hooks)
	wall := s.Now().Sub(runStart).Seconds()
	if err != nil {
		return s.benchError(row, fmt.Sprintf("the run was refused: %v", err))
	}
	s.fill(&row, payload, wall)
	t := s.timeOf(payload, stagingS)

	score := s.score(ctx, c, payload, spec, host, check)
	for round := 1; score.Outcome == AcceptanceFail && round <= s.FixRounds && ctx.Err() == nil; round++ {
		feedback := "The acceptance check failed. Its output:\n\n" + capText(score.Output, 8000)
		req := engine.ResumeRequest{Target: payload.RunDir, Feedback: feedback, HasFeedback: true, Spec: spec}
		log.Reset()
		resumeStart := s.Now()
		next, err := s.ResumeCase(ctx, req, &log, CaseHooks{Started: hooks.Started})
		wall += s.Now().Sub(resumeStart).Seconds()
		if err != nil {
			s.Progress.note(fmt.Sprintf("%s  %s  repeat %d: fix round %d refused: %v", c.model.Model, c.task, c.repeat, round, err))
			break
		}
		payload = next
		s.fill(&row, payload, wall)
		t = s.timeOf(payload, stagingS)
		score = s.score(ctx, c, payload, spec, host, nil)
		if score.Outcome == AcceptancePass {
			r := round
			row.FixRound = &r
		}
	}
	if score.Outcome == AcceptancePass && row.FixRound == nil {
		zero := 0
		row.FixRound = &zero
	}
	row.Acceptance = score.Outcome
	t.AcceptanceS = rounded(score.Seconds) // milliseconds, like the rest of the split
	row.Time = t
	writeCaseFiles(payload.RunDir, score, log.Bytes())

	facts := caseFacts{
		Status: payload.Status, FinalMessage: payload.FinalMessage,
		Acceptance: score.Outcome, AcceptanceDetail: score.Detail,
	}
	facts.End, facts.EndError, facts.LastNudge = transcriptEnd(payload.Transcript)
	row.FailureClass, row.FailureEvidence = classifyFailure(facts)
	return row
}

// score runs the acceptance of a completed run; any other run is not
// scored (B-7: skipped).
// A prepared check (prepared non-nil) is used when the run's image is
// the one it was made for.
func (s *Sweep) score(ctx context.Context, c benchCase, p *engine.Payload, spec engine.Spec, host int, check *caseCheck) Score {
	if p.Status != transcript.StatusCompleted {
		return Score{Outcome: AcceptanceSkipped, Detail: "the run did not complete (" + string(p.Status) + ")"}
	}
	if check != nil && s.Prepare != nil && spec.Docker.Image == s.Base.Docker.Image {
		return check.get().Score(ctx, p.Worktree)
	}
	return s.Score(ctx, ScoreRequest{Task: c.task, Tree: p.Worktree, Image: spec.Docker.Image, Host: s.Hosts[host]})
}

// identity is a row's identity keys.
func (s *Sweep) identity(c benchCase) Row {
	row := Row{Stamp: s.Stamp, Model: c.model.Model, Task: c.task, Repeat: c.repeat}
	if c.model.Provider != "" {
		p := c.model.Provider
		row.Provider = &p
	}
	if c.model.BaseURL != "" {
		u := c.model.BaseURL
		row.BaseURL = &u
	}
	return row
}

// benchError is the row of a case that never got a run (B-8).
func (s *Sweep) benchError(row Row, msg string) Row {
	row.Status, row.Error, row.Acceptance = StatusBenchError, &msg, AcceptanceSkipped
	row.FailureClass, row.FailureEvidence = classifyFailure(caseFacts{BenchError: msg, Acceptance: AcceptanceSkipped})
	return row
}

// fill copies a run's result and record into its row (B-8, B-9).
func (s *Sweep) fill(row *Row, p *engine.Payload, wall float64) {
	if p.Provider != "" {
		prov := p.Provider
		row.Provider = &prov
	}
	slug, dir := filepath.Base(p.RunDir), p.RunDir
	row.Slug, row.RunDir = &slug, &dir
	row.Status = string(p.Status)
	row.Turns = p.Turns
	w := Seconds(math.Round(wall*10) / 10)
	row.WallS = &w
	trimmed := p.TrimmedTurns
	row.TrimmedTurns = &trimmed
	if u, ok := p.Usage.(transcript.Usage); ok {
		pt, ct := u.PromptTokens, u.CompletionTokens
		row.PromptTokens, row.CompletionTokens = &pt, &ct
	}
	h := &Harness{Timeouts: p.Timeouts}
	switch p.Status {
	case transcript.StatusStalled:
		h.Stalled = 1
	case transcript.StatusMaxTurns:
		h.MaxTurns = 1
	case transcript.StatusSandboxError:
		h.SandboxError = 1
	}
	if m := abortMessage.FindStringSubmatch(p.FinalMessage); m != nil {
		kind := m[1]
		switch kind {
		case "malformed_entry", "malformed_args", "unknown_tool", "bad_args", "empty_reply":
			h.AbortKind = &kind
		case "tool":
			mixed := "mixed"
			h.AbortKind = &mixed
		}
	}
	row.GuardrailBlocks, row.SandboxResets = countEvents(p.Transcript, h)
	row.Harness = h
	if rf, err := transcript.ReadRun(p.RunDir); err == nil {
		rec := rf.Record
		if rec.DiffStat != "" {
			ds := rec.DiffStat
			row.DiffStat = &ds
		}
		if rec.Verdict != "" {
			v := string(rec.Verdict)
			row.Verdict = &v
		}
		row.ReviewSeconds = rec.ReviewSeconds
	}
}

// abortMessage reads the kind out of a failure tracker's closing message
// (B-9: "tool" stands for failures of several kinds).
var abortMessage = regexp.MustCompile(`^aborted after \d+ consecutive (\S+) (?:tool )?failures$`)

// countEvents counts a transcript's nudges by kind into h, and returns its
// guardrail blocks and sandbox resets.
func countEvents(path string, h *Harness) (blocks, resets int) {
	lines, _, _ := transcript.ReadFile(path)
	for _, l := range lines {
		switch l.Event {
		case transcript.EventGuardrailBlock:
			blocks++
		case transcript.EventSandboxReset:
			resets++
		case transcript.EventNudge:
			ev, err := l.Decode()
			n, ok := ev.(transcript.Nudge)
			if err != nil || !ok {
				continue
			}
			switch n.Kind {
			case transcript.NudgeStall:
				h.NudgeStall++
			case transcript.NudgeEmpty:
				h.NudgeEmpty++
			case transcript.NudgeTruncated:
				h.NudgeTruncated++
			case transcript.NudgeTextToolCall:
				h.NudgeTextToolCall++
			case transcript.NudgeTimeout:
				h.NudgeTimeout++
			default:
				h.NudgeOther++
			}
			if n.Kind != transcript.NudgeStall && n.Kind != transcript.NudgeTimeout {
				h.EmptyReply++
			}
		}
	}
	return blocks, resets
}

// transcriptEnd reads what classifyFailure needs of a transcript: its
// run_end (or the failure path's error) and its last nudge.
func transcriptEnd(path string) (end *transcript.RunEnd, endError, lastNudge string) {
	lines, _, _ := transcript.ReadFile(path)
	for _, l := range lines {
		switch l.Event {
		case transcript.EventNudge:
			if ev, err := l.Decode(); err == nil {
				if n, ok := ev.(transcript.Nudge); ok {
					lastNudge = n.Kind
				}
			}
		case transcript.EventRunEnd:
			ev, err := l.Decode()
			if err != nil {
				continue
			}
			switch e := ev.(type) {
			case transcript.RunEnd:
				end, endError = &e, ""
			case transcript.RunEndFailure:
				end, endError = nil, e.Error
			}
		}
	}
	return end, endError, lastNudge
}

// timeOf is the run's time split, with the staging the sweep measured.
func (s *Sweep) timeOf(p *engine.Payload, stagingS float64) *Time {
	var started time.Time
	if rf, err := transcript.ReadRun(p.RunDir); err == nil {
		started, _ = transcript.ParseTime(rf.Record.Started)
	}
	lines, _, _ := transcript.ReadFile(p.Transcript)
	tm := timingOf(lines, started)
	staging := math.Round(stagingS*1000) / 1000
	t := &Time{
		StagingS: &staging, SandboxStartS: &tm.SandboxStartS, PrefillS: tm.PrefillS, DecodeS: tm.DecodeS,
		DecodeTokensPerS: tm.DecodeTokensPerS, ToolsS: &tm.ToolsS, ExportS: &tm.ExportS,
	}
	if t.PrefillS == nil {
		// Unstreamed: all the model's time is before its one answer.
		t.PrefillS = &tm.ModelS
	}
	return t
}

// servingOf is a row's serving object from a probe's answer and the
// slots the sweep was told.
func servingOf(info ServerInfo, slots int) *Serving {
	if info.Server == "" {
		return nil
	}
	sv := &Serving{Server: info.Server, Version: info.Version, Quantization: info.Quantization, Slots: slots}
	if info.Slots > 0 {
		sv.Slots = info.Slots
	}
	if info.ContextLength > 0 {
		n := info.ContextLength
		sv.ContextLength = &n
	}
	return sv
}

// writeCaseFiles keeps a case's acceptance output and the run's log in its
// run dir, so the case can be reviewed after its repository is gone.
func writeCaseFiles(runDir string, score Score, log []byte) {
	if runDir == "" {
		return
	}
	acc := fmt.Sprintf("acceptance: %s\n%s\n\n%s", score.Outcome, score.Detail, score.Output)
	_ = os.WriteFile(filepath.Join(runDir, AcceptanceFile), []byte(acc), 0o600)
	if len(log) > 0 {
		_ = os.WriteFile(filepath.Join(runDir, "bench.log"), log, 0o600)
	}
}

// AcceptanceFile is where a bench case's run dir keeps its acceptance
// outcome and output.
const AcceptanceFile = "acceptance.txt"

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// capText keeps the last n bytes of s: an acceptance's verdict is at its
// end.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "[...]\n" + s[len(s)-n:]
}
