package runinfo

import (
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/live"
)

func TestShortForms(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1.0k", 12345: "12.3k", 250000: "250k", 4_100_000: "4.1M"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{-time.Second: "0s", 42 * time.Second: "42s", 185 * time.Second: "3m05s", 130 * time.Minute: "2h10m", 76 * time.Hour: "3d4h"} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestActivity(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	run := backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning}, Alive: true}
	waiting := &live.State{Waiting: true, RequestAt: now.Add(-12 * time.Second)}
	streaming := &live.State{Waiting: true, Streaming: true, StreamTokens: 340, TokensPerS: 25.1}
	tool := &live.State{LastTool: "bash: go test\x1b[2J", LastOutcome: "ERROR"}
	for name, c := range map[string]struct {
		it   Item
		want string
	}{
		"waiting":   {Item{Run: run, State: waiting}, "waiting for model 12s"},
		"streaming": {Item{Run: run, State: streaming}, "streaming 340 tok · 25.1 tok/s"},
		"tool":      {Item{Run: run, State: tool}, "⚙ bash: go test␛[2J [ERROR]"},
		"dead":      {Item{Run: backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning}}}, "its process is gone; status never recorded"},
		"queued":    {Item{Queued: &Queued{}}, "waiting for a free slot"},
		"refused":   {Item{Queued: &Queued{Err: "not a git repository"}}, "refused: not a git repository"},
	} {
		if got := c.it.Activity(now); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}

func TestPhases(t *testing.T) {
	for name, c := range map[string]struct {
		run  backend.Run
		want backend.Phase
	}{
		"running":    {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning}, Alive: true}, backend.PhaseRunning},
		"dead":       {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning}}, backend.PhaseDead},
		"review":     {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusMaxTurns}}, backend.PhaseReview},
		"judged":     {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusCompleted, Verdict: "reject"}}, backend.PhaseFinished},
		"unreadable": {backend.Run{Problem: "corrupt"}, backend.PhaseFinished},
		// A dead run that was cleaned (or judged otherwise) since is over.
		"cleaned dead": {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning, Verdict: transcript.VerdictCleanup}}, backend.PhaseFinished},
		"judged live":  {backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning, Verdict: transcript.VerdictReject}, Alive: true}, backend.PhaseRunning},
	} {
		if got := (Item{Run: c.run}).Phase(); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// Every state has its own word, and the list, the panes and the review
// header say the same one: a cleaned dead run is cleaned, never dead nor
// running; accepted and merged runs say so, with their commit beside.
func TestStateWords(t *testing.T) {
	rec := func(st transcript.Status, v transcript.Verdict) transcript.RunRecord {
		return transcript.RunRecord{Status: st, Verdict: v, Branch: "dw/fix"}
	}
	accepted := rec(transcript.StatusCompleted, transcript.VerdictAccept)
	accepted.AcceptedCommit = "1a2b3c4d5e6f"
	merged := accepted
	merged.MergedInto, merged.MergeCommit = "main", "9f8e7d6c5b4a"
	parked := rec(transcript.StatusRunning, transcript.VerdictCleanup)
	parked.ParkedRef = "refs/dirtywork/parked/fix"
	for name, c := range map[string]struct {
		run            backend.Run
		word, activity string
	}{
		"running":      {backend.Run{RunRecord: rec(transcript.StatusRunning, ""), Alive: true}, "running", ""},
		"dead":         {backend.Run{RunRecord: rec(transcript.StatusRunning, "")}, "dead", "its process is gone; status never recorded"},
		"cleaned dead": {backend.Run{RunRecord: parked}, "cleaned", "work parked at refs/dirtywork/parked/fix"},
		"max turns":    {backend.Run{RunRecord: rec(transcript.StatusMaxTurns, "")}, "max turns", ""},
		"accepted":     {backend.Run{RunRecord: accepted}, "accepted", "accepted as 1a2b3c4 on dw/fix"},
		"merged":       {backend.Run{RunRecord: merged}, "merged", "merged into main · 9f8e7d6"},
		"rejected":     {backend.Run{RunRecord: rec(transcript.StatusCompleted, transcript.VerdictReject)}, "rejected", ""},
		"unreadable": {
			backend.Run{RunDir: "/runs/fix-1202-abcd", Problem: "run.json: invalid character 'x' looking for beginning of value"},
			"unreadable", "its run.json cannot be read",
		},
	} {
		it := Item{Run: c.run}
		if got := it.StatusText(); got != c.word {
			t.Errorf("%s: status %q, want %q", name, got, c.word)
		}
		if got := c.run.StateWord(); got != c.word {
			t.Errorf("%s: state word %q, want %q", name, got, c.word)
		}
		if got := it.Activity(time.Now()); got != c.activity {
			t.Errorf("%s: activity %q, want %q", name, got, c.activity)
		}
	}
	// An unreadable row names its directory and the error (without the
	// record's path again).
	bad := Item{Run: backend.Run{RunDir: "/runs/fix-1202-abcd", Problem: "unexpected end of JSON input"}}
	if got := bad.Task(); got != "fix-1202-abcd: unexpected end of JSON input" {
		t.Errorf("unreadable task %q", got)
	}
	bad.Run.Problem = "run.json of 'fix-1202-abcd' is corrupt: /runs/fix-1202-abcd/run.json: not a JSON object: unexpected EOF"
	if got := bad.Task(); got != "fix-1202-abcd: run.json: not a JSON object: unexpected EOF" {
		t.Errorf("unreadable task %q", got)
	}
}
