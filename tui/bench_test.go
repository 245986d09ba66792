package tui

import (
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/backend/fake"
	"github.com/dirtywork/dirtywork/tui/keys"
)

// BenchmarkFirstFrame10k is the TUI's own share of the first frame over
// 10,000 runs: taking the listing, grouping and sorting it, and drawing
// (the store's read of the runs root is not in it).
func BenchmarkFirstFrame10k(b *testing.B) {
	runs := make([]backend.Run, 10000)
	for i := range runs {
		runs[i] = backend.Run{RunRecord: transcript.RunRecord{
			Slug: fmt.Sprintf("run-%05d", i), Repo: "/src/repo", Task: "a task of some words", Model: "m",
			Status: transcript.StatusCompleted, Started: at(t0.Add(-time.Duration(i) * time.Minute)), Ended: at(t0), Turns: ip(9),
		}}
		if i%4 == 0 {
			runs[i].Verdict = "accept"
		}
	}
	st := fake.New()
	for b.Loop() {
		m := New(Options{Store: st, Feed: &fakeFeed{}, Keys: keys.Default(), Color: ColorDark, TickEvery: -1, Now: func() time.Time { return t0 }})
		mm, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
		mm, _ = mm.Update(runsLoadedMsg{runs: runs})
		_ = mm.(Model).Render()
	}
}
