package tui

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/backend/fake"
)

// At start the runs come in batches (the watch reports every run of the
// root, in the root's order, racing the listing): the cursor is on the
// newest run at the top once they are all in, whatever the batches; and
// after the user moves it, new runs leave it on the run chosen.
func TestStartCursorOnNewestRunWhateverTheBatches(t *testing.T) {
	runs := make([]backend.Run, 130)
	for i := range runs {
		slug := fmt.Sprintf("fix-bug-%d-12021%05d-%08x", i, i, i*0x3131)
		runs[i] = backend.Run{
			RunRecord: transcript.RunRecord{
				Slug: slug, Repo: "/src/shop", Task: fmt.Sprintf("fix bug %d", i), Model: "devstral", Sandbox: "docker",
				Status: transcript.StatusCompleted, Verdict: transcript.VerdictAccept,
				Started: at(t0.Add(-time.Duration(i) * time.Minute)), Ended: at(t0.Add(-time.Duration(i)*time.Minute + time.Minute)),
			},
			Transcript: "/r/" + slug + "/transcript.jsonl",
		}
	}
	for seed := range uint64(3) {
		h := newHarness(t, 120, 40, fake.New())
		rng := rand.New(rand.NewPCG(seed, 11))
		order := rng.Perm(len(runs))
		for len(order) > 0 {
			n := min(len(order), 1+rng.IntN(30))
			batch := make([]backend.Run, n)
			for j, i := range order[:n] {
				batch[j] = runs[i]
			}
			order = order[n:]
			h.change(batch...)
		}
		if it, ok := h.m.list.Selected(); !ok || it.Key != runs[0].Slug {
			t.Fatalf("seed %d: cursor on %q, want the newest run %s", seed, it.Key, runs[0].Slug)
		}
		h.key("j", "j")
		chosen, _ := h.m.list.Selected()
		newer := runs[5]
		newer.Slug, newer.Task, newer.Started = "fix-bug-new-1202999999-ffffffff", "fix bug new", at(t0.Add(time.Minute))
		h.change(newer)
		if it, _ := h.m.list.Selected(); it.Key != chosen.Key {
			t.Fatalf("seed %d: a new run moved the cursor from %s to %s", seed, chosen.Key, it.Key)
		}
	}
}

// The list zoomed (z with the list focused) names its columns; zoomed
// back out, or a pane zoomed instead, it does not.
func TestZoomedListNamesItsColumns(t *testing.T) {
	h := newSample(t, 200, 50)
	header := "status      repo         task"
	if strings.Contains(plain(h.screen()), header) {
		t.Fatal("the list names its columns unzoomed")
	}
	h.key("z")
	h.contains(header)
	h.contains("turns   tokens elapsed ctx")
	h.key("z", "2", "z")
	if s := plain(h.screen()); strings.Contains(s, header) || !h.m.zoom {
		t.Fatalf("with pane 2 zoomed the screen names the list's columns:\n%s", s)
	}
}
