package feed

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/live"
)

// sink collects batches; it can be made slow, like a busy program.
type sink struct {
	mu      sync.Mutex
	batches []BatchMsg
	delay   time.Duration
}

func (s *sink) send(msg tea.Msg) {
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, msg.(BatchMsg))
}

func (s *sink) entries(slug string) []live.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []live.Entry
	for _, b := range s.batches {
		out = append(out, b.Entries[slug]...)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFollowDeliversEveryEventInOrderAndCoalescesProgress(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "transcript.jsonl")
	w, err := transcript.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{delay: 20 * time.Millisecond} // a slow consumer
	f := New(t.Context(), s.send)
	if err := f.Follow("run", path); err != nil {
		t.Fatal(err)
	}
	const n = 500
	for i := range n {
		if err := w.Write(transcript.ModelProgress{Turn: i, Tokens: i}); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(transcript.ToolResult{Tool: "bash", Args: "{}", Result: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(transcript.RunEnd{Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "run_end", func() bool {
		es := s.entries("run")
		return len(es) > 0 && es[len(es)-1].Kind == live.KindRunEnd
	})
	es := s.entries("run")
	if es[0].Kind != live.KindReset {
		t.Fatalf("first entry = %v, want the reset that starts a follow", es[0].Kind)
	}
	results, progress := 0, 0
	for i, e := range es {
		switch e.Kind {
		case live.KindToolResult:
			results++
		case live.KindProgress:
			progress++
			if i > 0 && es[i-1].Kind == live.KindProgress {
				t.Fatal("two progress deltas in a row were not coalesced")
			}
		}
	}
	if results != n {
		t.Fatalf("%d tool results delivered, want %d", results, n)
	}
	if progress == 0 || progress > n {
		t.Fatalf("%d progress deltas", progress)
	}
	s.mu.Lock()
	batches := len(s.batches)
	s.mu.Unlock()
	if batches >= 2*n {
		t.Fatalf("%d batches for %d events: nothing was coalesced", batches, 2*n+1)
	}
}

func TestWatchChangesAreDelivered(t *testing.T) {
	s := &sink{}
	f := New(t.Context(), s.send)
	ch := make(chan []backend.Change, 1)
	f.Watch(ch)
	for i := range 100 {
		ch <- []backend.Change{{Run: backend.Run{RunRecord: transcript.RunRecord{Slug: "r", Turns: new(i)}}}}
	}
	waitFor(t, "100 changes", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for _, b := range s.batches {
			n += len(b.Changes)
		}
		return n == 100
	})
}

func TestUnfollowThenFollowStartsClean(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "transcript.jsonl")
	w, err := transcript.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	for range 10 {
		if err := w.Write(transcript.Nudge{Kind: "stall", Turn: 1}); err != nil {
			t.Fatal(err)
		}
	}
	s := &sink{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := New(ctx, s.send)
	if err := f.Follow("run", path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "first read", func() bool { return len(s.entries("run")) == 11 })
	f.Unfollow("run")
	if f.Following("run") {
		t.Fatal("still following")
	}
	if err := f.Follow("run", path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "second read", func() bool { return len(s.entries("run")) == 22 })
	if es := s.entries("run"); es[11].Kind != live.KindReset {
		t.Fatalf("a new follow did not start with a reset: %v", es[11].Kind)
	}
}
