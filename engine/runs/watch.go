package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/dirtywork/dirtywork/transcript"
)

// EventKind says what happened to a run.
type EventKind int

// What Watch reports.
const (
	// RunAdded: a run appeared (or was there when the watch began).
	RunAdded EventKind = iota + 1
	// RunChanged: its run.json or its liveness changed.
	RunChanged
	// RunRemoved: its run dir is gone.
	RunRemoved
)

func (k EventKind) String() string {
	switch k {
	case RunAdded:
		return "added"
	case RunChanged:
		return "changed"
	case RunRemoved:
		return "removed"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one change Watch saw. Run is the run as it is now (nil for
// RunRemoved).
type Event struct {
	Kind EventKind
	Slug string
	Run  *Run
}

// How often Watch looks at what inotify cannot tell: the liveness of runs
// that are alive or recorded as running (a lock dropped by a crash makes
// no file event), and run dirs it could not add a watch for.
var (
	watchLivenessEvery = 300 * time.Millisecond
	watchRescanEvery   = 3 * time.Second
)

// Watch reports every run under the root as RunAdded, then every change
// until ctx ends, when the channel is closed: runs appearing (from any
// process), run.json changing, liveness changing, run dirs going. File
// events come from fsnotify on the root and on each run dir; liveness is
// probed every few hundred milliseconds for runs that can still change it,
// so a crash shows within a second. The root is created (0700) if absent.
func (s *Store) Watch(ctx context.Context) (<-chan Event, error) {
	if err := transcript.EnsureDir(s.root); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", s.root, err)
	}
	if err := w.Add(s.root); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch %s: %w", s.root, err)
	}
	ch := make(chan Event, 64)
	wt := &watcher{s: s, w: w, ch: ch, known: map[string]*Run{}, unwatched: map[string]bool{}}
	go wt.loop(ctx)
	return ch, nil
}

type watcher struct {
	s     *Store
	w     *fsnotify.Watcher
	ch    chan Event
	known map[string]*Run
	// unwatched are run dirs without an inotify watch (the limit was
	// reached): rescans stat their run.json instead.
	unwatched map[string]bool
}

func (wt *watcher) loop(ctx context.Context) {
	defer close(wt.ch)
	defer func() { _ = wt.w.Close() }() // nothing written through it
	if !wt.rescan(ctx) {
		return
	}
	live := time.NewTicker(watchLivenessEvery)
	defer live.Stop()
	rescan := time.NewTicker(watchRescanEvery)
	defer rescan.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wt.w.Events:
			if !ok {
				return
			}
			if !wt.handle(ctx, ev) {
				return
			}
		case _, ok := <-wt.w.Errors:
			if !ok {
				return
			}
			// An overflow loses events: a rescan finds what they said.
			if !wt.rescan(ctx) {
				return
			}
		case <-live.C:
			if !wt.probeLiveness(ctx) {
				return
			}
		case <-rescan.C:
			if !wt.rescan(ctx) {
				return
			}
		}
	}
}

// handle turns one file event into run events.
func (wt *watcher) handle(ctx context.Context, ev fsnotify.Event) bool {
	dir, name := filepath.Split(ev.Name)
	dir = filepath.Clean(dir)
	if dir == filepath.Clean(wt.s.root) {
		// A run dir appeared or went.
		return wt.refresh(ctx, name)
	}
	if filepath.Dir(dir) != filepath.Clean(wt.s.root) {
		return true
	}
	switch name {
	case transcript.RecordName, ".alive":
		return wt.refresh(ctx, filepath.Base(dir))
	}
	return true
}

// refresh re-reads one slug and reports what changed.
func (wt *watcher) refresh(ctx context.Context, slug string) bool {
	if transcript.ValidSlug(slug) != nil {
		return true
	}
	dir := filepath.Join(wt.s.root, slug)
	fi, err := os.Lstat(dir)
	old := wt.known[slug]
	if err != nil || !fi.IsDir() {
		if old == nil {
			return true
		}
		delete(wt.known, slug)
		delete(wt.unwatched, slug)
		return wt.send(ctx, Event{Kind: RunRemoved, Slug: slug})
	}
	if old == nil && !wt.unwatched[slug] {
		// Watch the dir before reading it, so a write right after the read
		// is not missed.
		if err := wt.w.Add(dir); err != nil {
			wt.unwatched[slug] = true
		}
	}
	run := wt.s.load(slug, dir)
	if run.Err != nil && errors.Is(run.Err, fs.ErrNotExist) {
		if old != nil {
			delete(wt.known, slug)
			return wt.send(ctx, Event{Kind: RunRemoved, Slug: slug})
		}
		return true // a dir without run.json yet: its watch brings the record
	}
	wt.known[slug] = run
	switch {
	case old == nil:
		return wt.send(ctx, Event{Kind: RunAdded, Slug: slug, Run: run})
	case old.stamp != run.stamp || old.Alive != run.Alive || (old.Err == nil) != (run.Err == nil):
		return wt.send(ctx, Event{Kind: RunChanged, Slug: slug, Run: run})
	}
	return true
}

// rescan lists the root: new runs, gone runs, and (for run dirs without a
// watch) changed records.
func (wt *watcher) rescan(ctx context.Context) bool {
	slugs, err := wt.s.slugs()
	if err != nil {
		return true // the next rescan tries again
	}
	present := make(map[string]bool, len(slugs))
	for _, slug := range slugs {
		present[slug] = true
		if _, ok := wt.known[slug]; !ok || wt.unwatched[slug] {
			if !wt.refresh(ctx, slug) {
				return false
			}
		}
	}
	for slug := range wt.known {
		if !present[slug] && !wt.refresh(ctx, slug) {
			return false
		}
	}
	return true
}

// probeLiveness re-probes the runs whose liveness can still change: alive
// ones (they may die) and ones recorded as running (one may be starting).
func (wt *watcher) probeLiveness(ctx context.Context) bool {
	for slug, run := range wt.known {
		if run == nil || (!run.Alive && run.Record.Status != transcript.StatusRunning) {
			continue
		}
		rec := &run.Record
		if run.Err != nil {
			rec = nil
		}
		if alive := runAlive(run.Dir, rec); alive != run.Alive && !wt.refresh(ctx, slug) {
			return false
		}
	}
	return true
}

func (wt *watcher) send(ctx context.Context, ev Event) bool {
	select {
	case wt.ch <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
