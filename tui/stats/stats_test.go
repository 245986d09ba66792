package stats

import (
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
)

func TestAggregate(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	runs := []backend.Run{
		{RunRecord: transcript.RunRecord{Model: "a", Repo: "/r/x", Status: transcript.StatusCompleted, Verdict: "accept", ReviewSeconds: f(10), Turns: new(4), Usage: &transcript.Usage{PromptTokens: 100}}},
		{RunRecord: transcript.RunRecord{Model: "a", Repo: "/r/x", Status: transcript.StatusCompleted, Verdict: "reject", ReviewSeconds: f(30), Turns: new(6), Usage: &transcript.Usage{PromptTokens: 300}}},
		{RunRecord: transcript.RunRecord{Model: "a", Repo: "/r/y", Status: transcript.StatusMaxTurns, Verdict: "cleanup", ReviewSeconds: f(20), Turns: new(40)}},
		{RunRecord: transcript.RunRecord{Model: "b", Repo: "/r/y", Status: transcript.StatusRunning}},
	}
	all, rows := Aggregate(runs, ByModel)
	if all.Runs != 4 || all.Finished != 3 || all.Completed != 2 || all.Accept != 1 || all.Reject != 1 || all.Cleanup != 1 {
		t.Fatalf("overall = %+v", all)
	}
	if all.MedianReview != 20 || all.MedianTurns != 6 || all.MedianTokens != 100 {
		t.Fatalf("medians = %v %v %v", all.MedianReview, all.MedianTurns, all.MedianTokens)
	}
	if r := all.AcceptRate(); r < 0.33 || r > 0.34 {
		t.Fatalf("accept rate = %v", r)
	}
	if len(rows) != 2 || rows[0].Name != "a" || rows[1].Name != "b" || rows[1].CompletionRate() != -1 {
		t.Fatalf("rows = %+v", rows)
	}
	_, byRepo := Aggregate(runs, ByRepo)
	if len(byRepo) != 2 || byRepo[0].Runs != 2 {
		t.Fatalf("by repo = %+v", byRepo)
	}
}
