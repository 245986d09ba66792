// Package localstore reads the runs root for mission control with the
// transcript package alone: the run records, their liveness, and a watch
// (fsnotify on the root for runs appearing and disappearing, a one-second
// look at live runs, a slower scan for records changed by others). It is
// the read side only; the actions on runs belong to engine/runs, and
// until that store is wired in they say so.
package localstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
)

// ErrNotLanded is what the actions return until the runs store is wired.
var ErrNotLanded = errors.New("review actions need engine/runs, which is not in this build yet")

// Store reads runs under Root.
type Store struct {
	Root string
	// LivePoll is how often live runs are looked at (1 s when 0); Scan how
	// often every record's change time is (5 s when 0).
	LivePoll time.Duration
	Scan     time.Duration
}

// New returns a store over root.
func New(root string) *Store { return &Store{Root: root} }

// List reads every run under the root, in parallel.
func (s *Store) List(ctx context.Context) ([]backend.Run, error) {
	ents, err := os.ReadDir(s.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && transcript.ValidSlug(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	out := make([]backend.Run, len(names))
	ok := make([]bool, len(names))
	var wg sync.WaitGroup
	workers := max(2, runtime.NumCPU())
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r, found := s.read(names[i])
				out[i], ok[i] = r, found
			}
		}()
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	runs := out[:0]
	for i, r := range out {
		if ok[i] {
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// read reads one run; found is false when the directory holds no record.
func (s *Store) read(slug string) (backend.Run, bool) {
	dir := filepath.Join(s.Root, slug)
	rec, err := transcript.ReadRecord(dir)
	if errors.Is(err, os.ErrNotExist) {
		return backend.Run{}, false
	}
	r := FromRecord(dir, rec)
	if err != nil {
		r.Slug = slug
		r.Problem = err.Error()
		r.Turns = -1
		return r, true
	}
	if r.Status == backend.StatusRunning {
		alive, aerr := transcript.IsAlive(dir)
		r.Alive = alive && aerr == nil
	}
	return r, true
}

// FromRecord maps a run.json onto a Run (Alive is left false).
func FromRecord(dir string, rec transcript.Record) backend.Run {
	str := func(k string) string { v, _ := rec.String(k); return v }
	num := func(k string) int {
		v, ok := rec.Int(k)
		if !ok {
			return -1
		}
		return int(v)
	}
	r := backend.Run{
		Slug: str("slug"), RunDir: dir, Transcript: filepath.Join(dir, "transcript.jsonl"),
		Repo: str("repo"), Worktree: str("worktree"), Branch: str("branch"), BaseCommit: str("base_commit"),
		BaseRef: str("base_ref"), Task: str("task"), Model: str("model"), Provider: str("provider"),
		Sandbox: str("sandbox"), Status: backend.Status(str("status")), Started: parseTime(str("started")),
		Ended: parseTime(str("ended")), Turns: num("turns"), ContextWindow: max(0, num("context_window")),
		VerifyCommand: str("verify_command"), LastText: str("last_assistant_text"), Verdict: str("verdict"),
		VerdictAt: parseTime(str("verdict_at")), ResumedFrom: str("resumed_from"), ResumedBy: str("resumed_by"),
	}
	if r.Slug == "" {
		r.Slug = filepath.Base(dir)
	}
	if u, ok := rec["usage"].(map[string]any); ok {
		r.Usage.PromptTokens = intOf(u["prompt_tokens"])
		r.Usage.CompletionTokens = intOf(u["completion_tokens"])
	}
	if fc, ok := rec["files_changed"].([]any); ok {
		r.FilesChanged = len(fc)
	}
	if v, ok := rec["verify"].(map[string]any); ok {
		if p, ok := v["passed"].(bool); ok {
			r.VerifyPassed = &p
		}
	}
	if n, ok := rec["review_seconds"].(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			r.ReviewSeconds = &f
		}
	}
	return r
}

func intOf(v any) int {
	if n, ok := v.(json.Number); ok {
		i, err := n.Int64()
		if err == nil {
			return int(i)
		}
	}
	return 0
}

// parseTime reads the records' UTC ISO-8601 stamps (with or without an
// offset).
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// Watch reports changes until ctx ends.
func (s *Store) Watch(ctx context.Context) (<-chan []backend.Change, error) {
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return nil, fmt.Errorf("watch runs: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch runs: %w", err)
	}
	if err := w.Add(s.Root); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("watch runs root %s: %w", s.Root, err)
	}
	out := make(chan []backend.Change, 16)
	go s.watch(ctx, w, out)
	return out, nil
}

// seen is what the watch last reported of a run.
type seen struct {
	mod   time.Time
	size  int64
	alive bool
	live  bool // status running
}

func (s *Store) watch(ctx context.Context, w *fsnotify.Watcher, out chan<- []backend.Change) {
	defer close(out)
	defer func() { _ = w.Close() }()
	livePoll, scan := s.LivePoll, s.Scan
	if livePoll <= 0 {
		livePoll = time.Second
	}
	if scan <= 0 {
		scan = 5 * time.Second
	}
	known := map[string]seen{}
	// The first full pass waits a moment, so it does not compete with the
	// List that draws the first frame; what changed meanwhile it reports.
	first := time.NewTimer(livePoll)
	defer first.Stop()
	live := time.NewTicker(livePoll)
	defer live.Stop()
	full := time.NewTicker(scan)
	defer full.Stop()
	send := func(cs []backend.Change) bool {
		if len(cs) == 0 {
			return true
		}
		select {
		case out <- cs:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		var cs []backend.Change
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			slug := filepath.Base(ev.Name)
			if filepath.Dir(ev.Name) == filepath.Clean(s.Root) {
				cs = s.check(known, slug, true)
				if ev.Has(fsnotify.Create) {
					// A new run dir: watch it, so its run.json is seen the
					// moment it is written.
					_ = w.Add(ev.Name)
				}
			} else {
				cs = s.check(known, filepath.Base(filepath.Dir(ev.Name)), true)
			}
		case <-w.Errors:
			cs = s.rescan(known, nil)
		case <-live.C:
			for slug, st := range known {
				if st.live {
					cs = append(cs, s.check(known, slug, false)...)
				}
			}
		case <-full.C:
			cs = s.rescan(known, nil)
		case <-first.C:
			cs = s.rescan(known, nil)
		}
		if !send(cs) {
			return
		}
	}
}

// rescan looks at every run dir; it returns what changed since known.
func (s *Store) rescan(known map[string]seen, cs []backend.Change) []backend.Change {
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return cs
	}
	present := map[string]bool{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		present[e.Name()] = true
		cs = append(cs, s.check(known, e.Name(), false)...)
	}
	for slug := range known {
		if !present[slug] {
			delete(known, slug)
			cs = append(cs, backend.Change{Run: backend.Run{Slug: slug}, Removed: true})
		}
	}
	return cs
}

// check compares one run with what was last reported.
func (s *Store) check(known map[string]seen, slug string, force bool) []backend.Change {
	if transcript.ValidSlug(slug) != nil {
		return nil
	}
	dir := filepath.Join(s.Root, slug)
	fi, err := os.Stat(filepath.Join(dir, transcript.RecordName))
	prev, had := known[slug]
	if err != nil {
		if _, derr := os.Stat(dir); derr != nil && had {
			delete(known, slug)
			return []backend.Change{{Run: backend.Run{Slug: slug}, Removed: true}}
		}
		return nil
	}
	now := seen{mod: fi.ModTime(), size: fi.Size(), alive: prev.alive, live: prev.live}
	changed := !had || !now.mod.Equal(prev.mod) || now.size != prev.size
	if !changed && !prev.live && !force {
		return nil
	}
	r, ok := s.read(slug)
	if !ok {
		return nil
	}
	now.live = r.Status == backend.StatusRunning
	now.alive = r.Alive
	known[slug] = now
	if had && !changed && now.alive == prev.alive {
		return nil
	}
	return []backend.Change{{Run: r}}
}

// Review is not available without engine/runs.
func (s *Store) Review(context.Context, string) (backend.Review, error) {
	return backend.Review{}, ErrNotLanded
}

// Accept is not available without engine/runs.
func (s *Store) Accept(context.Context, string, backend.AcceptOptions) (backend.Outcome, error) {
	return backend.Outcome{}, ErrNotLanded
}

// Merge is not available without engine/runs.
func (s *Store) Merge(context.Context, string, float64) (backend.Outcome, error) {
	return backend.Outcome{}, ErrNotLanded
}

// Verdict is not available without engine/runs.
func (s *Store) Verdict(context.Context, string, string, string, float64) error {
	return ErrNotLanded
}

// PlanClean is not available without engine/runs.
func (s *Store) PlanClean(context.Context, string) (backend.CleanPlan, error) {
	return backend.CleanPlan{}, ErrNotLanded
}

// Clean is not available without engine/runs.
func (s *Store) Clean(context.Context, string, float64) (backend.Outcome, error) {
	return backend.Outcome{}, ErrNotLanded
}

// Stop sends SIGINT to a live run's process, the run's own graceful
// interrupt (it ends interrupted, keeping its evidence). The pid is
// trusted only while the run's liveness lock is held, so a reused pid is
// never signalled.
func (s *Store) Stop(_ context.Context, slug string) error {
	dir, err := transcript.FindRunDir(s.Root, slug)
	if err != nil {
		return err
	}
	rec, err := transcript.ReadRecord(dir)
	if err != nil {
		return err
	}
	alive, err := transcript.IsAlive(dir)
	if err != nil {
		return err
	}
	if !alive {
		return fmt.Errorf("run '%s' is not running", slug)
	}
	pid, ok := rec.Int("host_pid")
	if !ok || pid <= 1 {
		return fmt.Errorf("run '%s' records no process id", slug)
	}
	if err := syscall.Kill(int(pid), syscall.SIGINT); err != nil {
		return fmt.Errorf("stop run '%s' (pid %s): %w", slug, strconv.FormatInt(pid, 10), err)
	}
	return nil
}

var _ backend.Store = (*Store)(nil)
