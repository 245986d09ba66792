package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/transcript"
)

// fakeBench is a sweep whose staging, runs and acceptance are scripted:
// outcome decides each attempt's status and model failure by case.
type fakeBench struct {
	t        *testing.T
	runs     string
	mu       sync.Mutex
	attempts map[string]int
	staged   atomic.Int32
	made     atomic.Int32
	cleaned  atomic.Int32
	outcome  func(model, task string, attempt int) (transcript.Status, string)
	pass     func(task string) bool
}

func newFakeBench(t *testing.T) *fakeBench {
	return &fakeBench{t: t, runs: t.TempDir(), attempts: map[string]int{}}
}

func (f *fakeBench) sweep(out string, models []ModelSpec, tasks []string, repeats int) *Sweep {
	return &Sweep{
		Models: models, Tasks: tasks, Repeats: repeats, Parallel: 2, Out: out, Stamp: "20261202T000000Z",
		Base: engine.Spec{Docker: engine.DockerSpec{Image: "img"}},
		Stage: func(_ context.Context, task string) (*Staged, error) {
			f.staged.Add(1)
			dir := f.t.TempDir()
			return &Staged{Repo: dir, Task: "do " + task, Cleanup: func() error { f.cleaned.Add(1); return nil }}, nil
		},
		RunCase: f.run,
		Score: func(_ context.Context, req ScoreRequest) Score {
			if f.pass(req.Task) {
				return Score{Outcome: AcceptancePass, Output: "ok", Seconds: 0.3255349}
			}
			return Score{Outcome: AcceptanceFail, Detail: "exit 1", Output: "expected 3, got 4", Seconds: 0.3255349}
		},
		Healthy: func(context.Context, ModelSpec) error { return nil },
	}
}

func (f *fakeBench) run(_ context.Context, spec engine.Spec, _ io.Writer, hooks CaseHooks) (*engine.Payload, error) {
	f.mu.Lock()
	key := spec.Model + "/" + spec.Task
	f.attempts[key]++
	attempt := f.attempts[key]
	f.mu.Unlock()
	status, failure := f.outcome(spec.Model, strings.TrimPrefix(spec.Task, "do "), attempt)
	dir := filepath.Join(f.runs, fmt.Sprintf("run-%d", f.made.Add(1)))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := transcript.WriteRecord(dir, transcript.Record{"slug": filepath.Base(dir), "status": string(status), "diff_stat": " a | 1 +"}); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, transcript.TranscriptName)
	tw, err := transcript.Create(path)
	if err != nil {
		return nil, err
	}
	hooks.Started(engine.Started{RunDir: dir, Transcript: path})
	if hooks.Working != nil {
		hooks.Working()
	}
	_ = tw.Write(transcript.RunStart{Task: spec.Task, Model: spec.Model})
	_ = tw.Write(transcript.ModelRequest{Turn: 1})
	_ = tw.Write(transcript.Nudge{Kind: transcript.NudgeEmpty, Turn: 1})
	_ = tw.Write(transcript.RunEnd{Status: status, Turns: 1, ModelFailure: failure})
	_ = tw.Close()
	turns := 1
	return &engine.Payload{
		Status: status, RunDir: dir, Transcript: path, Worktree: spec.Repo, Turns: &turns,
		Usage: transcript.Usage{PromptTokens: 10, CompletionTokens: 5}, Provider: "openai",
	}, nil
}

func TestSweepScoresEveryCaseOnceAndResumes(t *testing.T) {
	t.Parallel()
	f := newFakeBench(t)
	f.outcome = func(string, string, int) (transcript.Status, string) { return transcript.StatusCompleted, "" }
	f.pass = func(task string) bool { return task == "good" }
	out := filepath.Join(t.TempDir(), "results.jsonl")
	models := []ModelSpec{{Model: "m1", Provider: "openai", BaseURL: "http://a/v1", Slots: 1}, {Model: "m2", Provider: "openai", BaseURL: "http://b/v1", Slots: 2}}
	n, err := f.sweep(out, models, []string{"good", "bad"}, 2).Run(t.Context())
	if err != nil || n != 8 {
		t.Fatalf("wrote %d rows: %v", n, err)
	}
	res, err := ReadResults(out)
	if err != nil || len(res.Rows) != 8 {
		t.Fatalf("results: %v %v", res, err)
	}
	for _, r := range res.Rows {
		wantAcc, wantClass := AcceptanceFail, FailureModel
		if r.Task == "good" {
			wantAcc, wantClass = AcceptancePass, ""
		}
		if r.Acceptance != wantAcc || r.FailureClass != wantClass || r.Status != "completed" || r.Stamp != "20261202T000000Z" ||
			r.Harness == nil || r.Harness.NudgeEmpty != 1 || r.Harness.EmptyReply != 1 || r.DiffStat == nil || r.Time == nil {
			t.Errorf("row %+v", r)
		}
		if r.Time != nil && (r.Time.AcceptanceS == nil || *r.Time.AcceptanceS != 0.326) {
			t.Errorf("acceptance_s %v, want milliseconds like the rest of the split (0.326)", r.Time.AcceptanceS)
		}
		if r.Task == "good" && (r.FixRound == nil || *r.FixRound != 0) {
			t.Errorf("a first-round pass records fix_round 0: %+v", r.FixRound)
		}
		acc, err := os.ReadFile(filepath.Join(*r.RunDir, AcceptanceFile))
		if err != nil || !strings.HasPrefix(string(acc), "acceptance: "+wantAcc) {
			t.Errorf("acceptance file %q %v", acc, err)
		}
	}
	if f.staged.Load() != 8 || f.cleaned.Load() != 8 {
		t.Fatalf("staged %d, cleaned %d", f.staged.Load(), f.cleaned.Load())
	}
	// A resumed sweep over a grown matrix runs only the new cases.
	n, err = f.sweep(out, models, []string{"good", "bad"}, 3).Run(t.Context())
	if err != nil || n != 4 {
		t.Fatalf("resume wrote %d rows: %v", n, err)
	}
	res, _ = ReadResults(out)
	seen := map[CaseKey]bool{}
	for _, r := range res.Rows {
		if seen[r.Case()] {
			t.Fatalf("case %+v scored twice", r.Case())
		}
		seen[r.Case()] = true
	}
	if len(seen) != 12 {
		t.Fatalf("%d cases scored, want 12", len(seen))
	}
}

// A server failure is retried once, after the server answers again; a
// second one is the row, classed as the server's, never the model's.
func TestSweepRetriesAServerFailureOnce(t *testing.T) {
	t.Parallel()
	f := newFakeBench(t)
	f.outcome = func(model, _ string, attempt int) (transcript.Status, string) {
		switch {
		case model == "flaky" && attempt == 1:
			return transcript.StatusModelError, transcript.ModelFailureServer
		case model == "dead":
			return transcript.StatusModelError, transcript.ModelFailureServer
		}
		return transcript.StatusCompleted, ""
	}
	f.pass = func(string) bool { return true }
	var probes atomic.Int32
	out := filepath.Join(t.TempDir(), "results.jsonl")
	s := f.sweep(out, []ModelSpec{
		{Model: "flaky", Provider: "openai", BaseURL: "http://a/v1", Slots: 1},
		{Model: "dead", Provider: "openai", BaseURL: "http://b/v1", Slots: 1},
	}, []string{"t"}, 1)
	s.Healthy = func(context.Context, ModelSpec) error { probes.Add(1); return nil }
	if n, err := s.Run(t.Context()); err != nil || n != 2 {
		t.Fatalf("wrote %d: %v", n, err)
	}
	res, _ := ReadResults(out)
	for _, r := range res.Rows {
		switch r.Model {
		case "flaky":
			if r.Acceptance != AcceptancePass || r.FailureClass != "" {
				t.Errorf("flaky after its retry: %+v", r)
			}
		case "dead":
			if r.FailureClass != FailureServer || r.Acceptance != AcceptanceSkipped || !strings.Contains(r.FailureEvidence, "model_failure server") {
				t.Errorf("dead server: %+v", r)
			}
		}
	}
	if f.attempts["flaky/do t"] != 2 || f.attempts["dead/do t"] != 2 || probes.Load() < 2 {
		t.Fatalf("attempts %v, probes %d", f.attempts, probes.Load())
	}
}

// A case that cannot be staged, or whose run is refused, is a bench_error
// row and the sweep goes on.
func TestSweepRecordsBenchErrors(t *testing.T) {
	t.Parallel()
	f := newFakeBench(t)
	f.outcome = func(string, string, int) (transcript.Status, string) { return transcript.StatusCompleted, "" }
	f.pass = func(string) bool { return true }
	out := filepath.Join(t.TempDir(), "results.jsonl")
	s := f.sweep(out, []ModelSpec{{Model: "m", Slots: 1}}, []string{"unstageable", "refused", "fine"}, 1)
	stage := s.Stage
	s.Stage = func(ctx context.Context, task string) (*Staged, error) {
		if task == "unstageable" {
			return nil, errors.New("no fixture")
		}
		return stage(ctx, task)
	}
	run := s.RunCase
	s.RunCase = func(ctx context.Context, spec engine.Spec, log io.Writer, hooks CaseHooks) (*engine.Payload, error) {
		if spec.Task == "do refused" {
			return nil, &engine.PreflightError{Msg: "model not loaded"}
		}
		return run(ctx, spec, log, hooks)
	}
	// A bench_error is the harness's: retried once, then the row.
	if n, err := s.Run(t.Context()); err != nil || n != 3 {
		t.Fatalf("wrote %d: %v", n, err)
	}
	res, _ := ReadResults(out)
	got := map[string]Row{}
	for _, r := range res.Rows {
		got[r.Task] = r
	}
	if r := got["unstageable"]; r.Status != StatusBenchError || r.Error == nil || !strings.Contains(*r.Error, "no fixture") || r.FailureClass != FailureSandbox {
		t.Errorf("unstageable: %+v", r)
	}
	if r := got["refused"]; r.Status != StatusBenchError || !strings.Contains(*r.Error, "model not loaded") {
		t.Errorf("refused: %+v", r)
	}
	if r := got["fine"]; r.Acceptance != AcceptancePass {
		t.Errorf("fine: %+v", r)
	}
}

// A failed acceptance is resumed with its output as feedback, and the row
// records the round that first passed.
func TestSweepFixRounds(t *testing.T) {
	t.Parallel()
	f := newFakeBench(t)
	f.outcome = func(string, string, int) (transcript.Status, string) { return transcript.StatusCompleted, "" }
	var scored atomic.Int32
	out := filepath.Join(t.TempDir(), "results.jsonl")
	s := f.sweep(out, []ModelSpec{{Model: "m", Slots: 1}}, []string{"t"}, 1)
	s.FixRounds = 3
	s.Score = func(context.Context, ScoreRequest) Score {
		if scored.Add(1) < 3 {
			return Score{Outcome: AcceptanceFail, Output: "expected 3, got 4"}
		}
		return Score{Outcome: AcceptancePass}
	}
	var feedback []string
	s.ResumeCase = func(ctx context.Context, req engine.ResumeRequest, log io.Writer, hooks CaseHooks) (*engine.Payload, error) {
		feedback = append(feedback, req.Feedback)
		return f.run(ctx, req.Spec, log, hooks)
	}
	if _, err := s.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, _ := ReadResults(out)
	if len(res.Rows) != 1 || res.Rows[0].FixRound == nil || *res.Rows[0].FixRound != 2 || res.Rows[0].Acceptance != AcceptancePass {
		t.Fatalf("rows %+v", res.Rows)
	}
	if len(feedback) != 2 || !strings.Contains(feedback[0], "expected 3, got 4") {
		t.Fatalf("feedback %q", feedback)
	}
}

// fakePrepared is a prepared check that counts its use and release.
type fakePrepared struct {
	used, released *atomic.Int32
	pass           bool
}

func (p fakePrepared) Score(context.Context, string) Score {
	p.used.Add(1)
	if p.pass {
		return Score{Outcome: AcceptancePass}
	}
	return Score{Outcome: AcceptanceFail, Detail: "prepared"}
}
func (p fakePrepared) Release() { p.released.Add(1) }

// A case's check is prepared while it runs: the first score uses it, a
// fix round's score is a whole one, and every prepared check is released
// before Run returns, a case whose run never completed included.
func TestSweepPreparesEachCaseCheck(t *testing.T) {
	t.Parallel()
	f := newFakeBench(t)
	f.outcome = func(model, _ string, _ int) (transcript.Status, string) {
		if model == "broken" {
			return transcript.StatusMaxTurns, ""
		}
		return transcript.StatusCompleted, ""
	}
	f.pass = func(string) bool { return true } // whole scores pass
	out := filepath.Join(t.TempDir(), "results.jsonl")
	s := f.sweep(out, []ModelSpec{{Model: "m", Slots: 2}, {Model: "broken", Slots: 2}}, []string{"a", "b"}, 1)
	var prepared, used, released atomic.Int32
	s.Prepare = func(_ context.Context, req ScoreRequest) PreparedScore {
		prepared.Add(1)
		if req.Tree != "" || req.Image != "img" {
			t.Errorf("prepare request %+v", req)
		}
		return fakePrepared{used: &used, released: &released, pass: false}
	}
	s.FixRounds = 1
	s.ResumeCase = func(ctx context.Context, req engine.ResumeRequest, log io.Writer, hooks CaseHooks) (*engine.Payload, error) {
		return f.run(ctx, req.Spec, log, hooks)
	}
	if n, err := s.Run(t.Context()); err != nil || n != 4 {
		t.Fatalf("wrote %d rows: %v", n, err)
	}
	if prepared.Load() != 4 || released.Load() != 4 || used.Load() != 2 {
		t.Fatalf("prepared %d, used %d, released %d; want 4, 2, 4", prepared.Load(), used.Load(), released.Load())
	}
	res, _ := ReadResults(out)
	for _, r := range res.Rows {
		if r.Model == "m" && (r.Acceptance != AcceptancePass || r.FixRound == nil || *r.FixRound != 1) {
			t.Errorf("m/%s: %s fix round %v: the prepared check fails, the fix round's whole check passes", r.Task, r.Acceptance, r.FixRound)
		}
	}
}

// A finished case's prepared check is removed once the next case's model
// is at work, never beside that case's sandbox start, and the last one
// when the sweep ends.
func TestSweepRemovesChecksInTheModelsTime(t *testing.T) {
	t.Parallel()
	f := newFakeBench(t)
	f.outcome = func(string, string, int) (transcript.Status, string) { return transcript.StatusCompleted, "" }
	f.pass = func(string) bool { return true }
	out := filepath.Join(t.TempDir(), "results.jsonl")
	s := f.sweep(out, []ModelSpec{{Model: "m", Slots: 1}}, []string{"a", "b", "c"}, 1)
	s.Parallel = 1
	var used, released atomic.Int32
	s.Prepare = func(context.Context, ScoreRequest) PreparedScore {
		return fakePrepared{used: &used, released: &released, pass: true}
	}
	// At each case's start (before its model works) the earlier cases'
	// checks are still there; a removal started then would have to have
	// been let go before Working.
	var atStart []int32
	run := s.RunCase
	s.RunCase = func(ctx context.Context, spec engine.Spec, log io.Writer, hooks CaseHooks) (*engine.Payload, error) {
		s.releasing.Wait() // whatever was let go has finished
		atStart = append(atStart, released.Load())
		return run(ctx, spec, log, hooks)
	}
	if n, err := s.Run(t.Context()); err != nil || n != 3 {
		t.Fatalf("wrote %d rows: %v", n, err)
	}
	// Case 1 starts with nothing to remove; case 2 with case 1's check
	// held (let go by case 2's Working, so 0 were removed at its start);
	// case 3 with case 2's held and case 1's removed.
	if want := []int32{0, 0, 1}; !slices.Equal(atStart, want) {
		t.Fatalf("checks removed at each case's start %v, want %v", atStart, want)
	}
	if used.Load() != 3 || released.Load() != 3 {
		t.Fatalf("used %d, released %d; want 3 and 3 by the sweep's end", used.Load(), released.Load())
	}
}
