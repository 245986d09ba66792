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
	} {
		if got := (Item{Run: c.run}).Phase(); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}
