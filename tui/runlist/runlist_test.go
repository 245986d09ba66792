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

// manyRuns are n finished runs started a minute apart, run 0 the newest;
// every third waits for review, so both groups are long.
func manyRuns(n int) []spec {
	out := make([]spec, n)
	for i := range out {
		s := spec{slug: slug(fmt.Sprintf("fix bug %d", i), i), task: fmt.Sprintf("fix bug %d in the parser", i), ago: i}
		if i%3 != 0 {
			s.verdict = transcript.VerdictAccept
		}
		out[i] = s
	}
	return out
}

// However the store's batches bring the rows (the watch reports every run
// at start in batches, in the root's order, racing the listing), the
// cursor stays on the top row — the newest run of the first group — until
// the user moves it.
func TestCursorFollowsTheTopUntilMoved(t *testing.T) {
	t.Parallel()
	all := manyRuns(150)
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 7))
		order := rng.Perm(len(all))
		m := newList(t, 100, 20)
		var have []spec
		for len(have) < len(all) {
			n := min(len(all)-len(have), 1+rng.IntN(40))
			for _, i := range order[len(have) : len(have)+n] {
				have = append(have, all[i])
			}
			m.SetItems(items(have...))
			if got, want := selectedKey(m), shown(m)[0]; got != want {
				t.Fatalf("seed %d, %d rows: cursor on %s, want the top row %s", seed, len(have), got, want)
			}
		}
		if got := selectedKey(m); got != all[0].slug {
			t.Fatalf("seed %d: cursor on %s, want the newest run %s", seed, got, all[0].slug)
		}
	}
}

// Once the user moves the cursor, rows arriving (above it, below it, the
// whole list again) leave it on the run the user chose, not on its index.
func TestCursorKeepsTheChosenRun(t *testing.T) {
	t.Parallel()
	all := manyRuns(60)
	for _, tc := range []struct {
		name string
		move func(m Model) Model
	}{
		{"down", func(m Model) Model { return press(t, m, "j", "j", "j") }},
		{"bottom then up", func(m Model) Model { return press(t, m, "G", "k") }},
		{"top", func(m Model) Model { return press(t, m, "g") }},
		{"selected by key", func(m Model) Model { m.SelectKey(all[30].slug); return m }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newList(t, 100, 20)
			m.SetItems(items(all[20:40]...))
			m = tc.move(m)
			chosen := selectedKey(m)
			if chosen == "(none)" {
				t.Fatal("nothing selected")
			}
			// Newer runs arrive above it, older below, then the same
			// rows again.
			m.SetItems(items(all[5:50]...))
			m.SetItems(items(all...))
			m.SetItems(items(all...))
			if got := selectedKey(m); got != chosen {
				t.Fatalf("cursor moved to %s, want the chosen %s", got, chosen)
			}
		})
	}
}

// Typing a filter puts the cursor on the best match, which it follows
// (even after the user had moved it); clearing the filter keeps the
// cursor on the run it was on.
func TestFilterCursor(t *testing.T) {
	t.Parallel()
	all := manyRuns(40)
	m := newList(t, 100, 20)
	m.SetItems(items(all...))
	m = press(t, m, "j", "j", "/")
	m = typeText(t, m, "bug 3")
	if got := selectedKey(m); got != all[3].slug {
		t.Fatalf("after typing: cursor on %s, want %s", got, all[3].slug)
	}
	// More runs arrive: the cursor stays on the top row, still the best
	// match.
	m.SetItems(items(append(slices.Clone(all), manyRuns(80)[40:]...)...))
	if got := selectedKey(m); got != all[3].slug {
		t.Fatalf("rows arrived: cursor on %s, want %s", got, all[3].slug)
	}
	m = press(t, m, "enter", "j")
	picked := selectedKey(m)
	m = press(t, m, "/", "esc")
	if got := selectedKey(m); got != picked {
		t.Fatalf("after clearing: cursor on %s, want %s", got, picked)
	}
	if m.FilterText() != "" || m.Len() != 80 {
		t.Fatalf("filter %q left %d rows", m.FilterText(), m.Len())
	}
	// The chosen run stays chosen: new rows do not move it.
	m.SetItems(items(manyRuns(90)...))
	if got := selectedKey(m); got != picked {
		t.Fatalf("rows arrived after clearing: cursor on %s, want %s", got, picked)
	}
}
