package runlist

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/runinfo"
)

// Rows sorted in place come out in the order the list promises (group,
// newest first, queue order, key) whatever order they come in: every
// cycle of the permutation is followed, and no row is lost or doubled.
func TestSortItemsInPlace(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	statuses := []transcript.Status{transcript.StatusRunning, transcript.StatusCompleted, transcript.StatusMaxTurns}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 17, 500} {
		items := make([]runinfo.Item, n)
		for i := range items {
			if i%7 == 3 {
				items[i] = runinfo.Item{Key: fmt.Sprintf("queued:%d", i), Queued: &runinfo.Queued{ID: rng.IntN(5)}}
				continue
			}
			rec := transcript.RunRecord{
				Slug:    fmt.Sprintf("run-%04d", i),
				Status:  statuses[rng.IntN(len(statuses))],
				Started: transcript.FormatTime(t0.Add(-time.Duration(rng.IntN(20)) * time.Minute)),
			}
			if rng.IntN(2) == 0 {
				rec.Verdict = transcript.VerdictAccept
			}
			items[i] = runinfo.Item{Key: rec.Slug, Run: backend.Run{RunRecord: rec, Alive: rng.IntN(2) == 0}}
		}
		rank := map[backend.Phase]int{}
		for i, p := range groupOrder {
			rank[p] = i
		}
		queue := func(it runinfo.Item) int {
			if it.Queued != nil {
				return it.Queued.ID
			}
			return 0
		}
		want := slices.Clone(items)
		slices.SortStableFunc(want, func(a, b runinfo.Item) int {
			return cmp.Or(
				cmp.Compare(rank[a.Phase()], rank[b.Phase()]),
				b.Run.StartedAt().Compare(a.Run.StartedAt()),
				cmp.Compare(queue(a), queue(b)),
				strings.Compare(a.Key, b.Key),
			)
		})
		sortItems(items)
		got := make([]string, len(items))
		for i, it := range items {
			got[i] = it.Key
			if it.Run.Slug != "" && it.Run.Slug != it.Key {
				t.Fatalf("n=%d: row %q holds run %q", n, it.Key, it.Run.Slug)
			}
		}
		wantKeys := make([]string, len(want))
		for i, it := range want {
			wantKeys[i] = it.Key
		}
		if !slices.Equal(got, wantKeys) {
			t.Errorf("n=%d: order\n%v\nwant\n%v", n, got, wantKeys)
		}
	}
}
