// Package feed brings what happens outside the UI into it: the runs
// root's changes and the transcripts of followed runs. Producers never
// call the program directly: each writes into one buffered channel, and a
// single forwarder goroutine collects what arrives within a short window
// into one BatchMsg and hands it to the program. Model-progress deltas are
// coalesced (only the latest per run survives a window) and may be
// dropped when the channel is full; every other event, run ends included,
// is delivered, in order.
package feed

import (
	"context"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/live"
)

// DefaultWindow is how long the forwarder collects before it sends: long
// enough to turn a burst into one repaint, short enough to feel live.
const DefaultWindow = 30 * time.Millisecond

// bufferSize is the channel between producers and the forwarder.
const bufferSize = 4096

// maxBatch bounds one batch, so a backlog (a long transcript read from its
// start) reaches the screen in pieces rather than after the whole read.
const maxBatch = 2000

// Sink delivers a message to the program (tea.Program.Send).
type Sink func(tea.Msg)

// BatchMsg is everything one window collected.
type BatchMsg struct {
	// Entries holds each followed run's new entries, in order. A
	// live.KindReset entry means: forget this run's earlier entries.
	Entries map[string][]live.Entry
	// Order lists the slugs of Entries in the order they first appeared.
	Order []string
	// Changes are the runs root's changes, in order.
	Changes []backend.Change
	// WatchErr is a runs root watch that ended with an error.
	WatchErr error
	// Dropped counts progress deltas dropped because the channel was full.
	Dropped int
	// First is when the batch's first item reached the forwarder.
	First time.Time
}

type item struct {
	slug    string
	entry   live.Entry
	changes []backend.Change
	err     error
	at      time.Time
}

// FollowFunc starts following a transcript (transcript.Follow).
type FollowFunc func(ctx context.Context, path string) (<-chan transcript.Item, error)

// Option configures a Feed.
type Option func(*Feed)

// WithWindow sets the coalescing window.
func WithWindow(d time.Duration) Option { return func(f *Feed) { f.window = d } }

// WithFollowFunc replaces transcript.Follow (tests).
func WithFollowFunc(fn FollowFunc) Option { return func(f *Feed) { f.follow = fn } }

// Feed owns the producer goroutines and the forwarder.
type Feed struct {
	ctx    context.Context
	sink   Sink
	in     chan item
	window time.Duration
	follow FollowFunc

	mu      sync.Mutex
	follows map[string]*following
	dropped int
}

type following struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// New starts a feed that delivers to sink until ctx ends.
func New(ctx context.Context, sink Sink, opts ...Option) *Feed {
	f := &Feed{
		ctx:     ctx,
		sink:    sink,
		in:      make(chan item, bufferSize),
		window:  DefaultWindow,
		follows: map[string]*following{},
		follow: func(ctx context.Context, path string) (<-chan transcript.Item, error) {
			return transcript.Follow(ctx, path, transcript.WithPollInterval(time.Second))
		},
	}
	for _, o := range opts {
		o(f)
	}
	go f.forward()
	return f
}

// Follow starts delivering the transcript at path as slug's entries, from
// its first line (after a reset entry, so the receiver starts clean). It
// does nothing if slug is already followed. It may block briefly (it
// sets up a file watch): call it from a tea.Cmd.
func (f *Feed) Follow(slug, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.follows[slug]; ok {
		return nil
	}
	ctx, cancel := context.WithCancel(f.ctx)
	items, err := f.follow(ctx, path)
	if err != nil {
		cancel()
		return err
	}
	fl := &following{cancel: cancel, done: make(chan struct{})}
	f.follows[slug] = fl
	go f.pump(ctx, slug, items, fl.done)
	return nil
}

// Unfollow stops following slug and waits until its goroutine is gone, so
// a later Follow's entries come after everything this one sent.
func (f *Feed) Unfollow(slug string) {
	f.mu.Lock()
	fl, ok := f.follows[slug]
	delete(f.follows, slug)
	f.mu.Unlock()
	if ok {
		fl.cancel()
		<-fl.done
	}
}

// Following reports whether slug is followed.
func (f *Feed) Following(slug string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.follows[slug]
	return ok
}

// Watch forwards the runs root's changes from ch until it closes.
func (f *Feed) Watch(ch <-chan []backend.Change) {
	go func() {
		for {
			select {
			case <-f.ctx.Done():
				return
			case cs, ok := <-ch:
				if !ok {
					return
				}
				if !f.put(item{changes: cs, at: time.Now()}) {
					return
				}
			}
		}
	}()
}

// pump turns one follower's items into entries on the channel.
func (f *Feed) pump(ctx context.Context, slug string, items <-chan transcript.Item, done chan struct{}) {
	defer close(done)
	if !f.putCtx(ctx, item{slug: slug, entry: live.Entry{Kind: live.KindReset}, at: time.Now()}) {
		return
	}
	for it := range items {
		e := live.FromItem(it)
		if e.Kind == live.KindReset {
			e.Text = "replaced"
		}
		in := item{slug: slug, entry: e, at: time.Now()}
		if e.Kind == live.KindProgress {
			// A progress delta is superseded by the next one: when the
			// forwarder is behind, dropping it loses nothing that stays
			// on screen.
			select {
			case f.in <- in:
			default:
				f.mu.Lock()
				f.dropped++
				f.mu.Unlock()
			}
			continue
		}
		if !f.putCtx(ctx, in) {
			return
		}
	}
}

func (f *Feed) put(it item) bool { return f.putCtx(f.ctx, it) }

func (f *Feed) putCtx(ctx context.Context, it item) bool {
	select {
	case f.in <- it:
		return true
	case <-ctx.Done():
		return false
	}
}

// forward is the one goroutine that calls the sink.
func (f *Feed) forward() {
	for {
		var first item
		select {
		case <-f.ctx.Done():
			return
		case first = <-f.in:
		}
		b := &BatchMsg{First: first.at}
		n := b.add(first)
		timer := time.NewTimer(f.window)
	collect:
		for n < maxBatch {
			select {
			case it := <-f.in:
				n += b.add(it)
			case <-timer.C:
				break collect
			case <-f.ctx.Done():
				timer.Stop()
				return
			}
		}
		timer.Stop()
		f.mu.Lock()
		b.Dropped, f.dropped = f.dropped, 0
		f.mu.Unlock()
		f.sink(*b)
	}
}

// add puts it into the batch; it returns how many entries that added.
func (b *BatchMsg) add(it item) int {
	if it.changes != nil || it.err != nil {
		b.Changes = append(b.Changes, it.changes...)
		if it.err != nil {
			b.WatchErr = it.err
		}
		return len(it.changes)
	}
	if b.Entries == nil {
		b.Entries = map[string][]live.Entry{}
	}
	list, seen := b.Entries[it.slug]
	if !seen {
		b.Order = append(b.Order, it.slug)
	}
	if it.entry.Kind == live.KindProgress && len(list) > 0 && list[len(list)-1].Kind == live.KindProgress {
		list[len(list)-1] = it.entry // coalesce: only the latest delta counts
		return 0
	}
	b.Entries[it.slug] = append(list, it.entry)
	return 1
}
