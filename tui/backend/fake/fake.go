// Package fake is an in-memory backend for mission control's tests: a
// Store whose runs and reviews the test sets, and a Launcher that makes up
// runs; every call is recorded, and any call can be made slow to prove
// the UI does not wait for it.
package fake

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
)

// Call is one recorded call.
type Call struct {
	Method        string
	Slug          string
	Verdict       transcript.Verdict
	Note          string
	Files         []string
	ReviewSeconds float64
	Spec          backend.LaunchSpec
}

// Store is a fake backend.Store and backend.Launcher.
type Store struct {
	mu       sync.Mutex
	runs     []backend.Run
	reviews  map[string]backend.Review
	forecast map[string]backend.Forecast
	plans    map[string]backend.CleanPlan
	calls    []Call
	watchers []chan []backend.Change
	// Delay is added to every call (a slow git, a slow disk).
	Delay time.Duration
	// Hold, when set, makes every call wait until it is closed (a git
	// that does not answer).
	Hold chan struct{}
	// HoldForecast, when set, makes Forecast alone wait until it is
	// closed (a merge forecast that takes long).
	HoldForecast chan struct{}
	// Err, when set, is returned by the named method.
	Err map[string]error
	// Models is what Models returns.
	ModelIDs []string
	// Launches counts launches, for slugs.
	launches int
}

// New returns a store holding runs.
func New(runs ...backend.Run) *Store {
	return &Store{runs: runs, reviews: map[string]backend.Review{}, forecast: map[string]backend.Forecast{}, plans: map[string]backend.CleanPlan{}, Err: map[string]error{}}
}

// SetReview sets what Review returns for slug.
func (s *Store) SetReview(slug string, r backend.Review) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reviews[slug] = r
}

// SetForecast sets what Forecast returns for slug; without one, Forecast
// returns the merge readiness and blockers of the review set for slug.
func (s *Store) SetForecast(slug string, f backend.Forecast) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forecast[slug] = f
}

// SetPlan sets what PlanClean returns for slug.
func (s *Store) SetPlan(slug string, p backend.CleanPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plans[slug] = p
}

// Calls returns the calls so far.
func (s *Store) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *Store) record(ctx context.Context, c Call) error {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	d, err, hold := s.Delay, s.Err[c.Method], s.Hold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// List implements backend.Store.
func (s *Store) List(ctx context.Context) ([]backend.Run, error) {
	if err := s.record(ctx, Call{Method: "List"}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.runs), nil
}

// Watch implements backend.Store.
func (s *Store) Watch(ctx context.Context) (<-chan []backend.Change, error) {
	if err := s.record(ctx, Call{Method: "Watch"}); err != nil {
		return nil, err
	}
	ch := make(chan []backend.Change, 16)
	s.mu.Lock()
	s.watchers = append(s.watchers, ch)
	s.mu.Unlock()
	return ch, nil
}

// Put adds or replaces a run and tells the watchers.
func (s *Store) Put(r backend.Run) {
	s.mu.Lock()
	i := slices.IndexFunc(s.runs, func(x backend.Run) bool { return x.Slug == r.Slug })
	if i >= 0 {
		s.runs[i] = r
	} else {
		s.runs = append(s.runs, r)
	}
	ws := slices.Clone(s.watchers)
	s.mu.Unlock()
	for _, w := range ws {
		w <- []backend.Change{{Run: r}}
	}
}

// Run returns the stored run.
func (s *Store) Run(slug string) (backend.Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.runs, func(x backend.Run) bool { return x.Slug == slug })
	if i < 0 {
		return backend.Run{}, false
	}
	return s.runs[i], true
}

func (s *Store) setVerdict(slug string, v transcript.Verdict, secs float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.runs {
		if s.runs[i].Slug == slug {
			s.runs[i].Verdict = v
			s.runs[i].ReviewSeconds = &secs
		}
	}
}

// Review implements backend.Store.
func (s *Store) Review(ctx context.Context, slug string) (backend.Review, error) {
	if err := s.record(ctx, Call{Method: "Review", Slug: slug}); err != nil {
		return backend.Review{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reviews[slug]
	if !ok {
		return backend.Review{}, fmt.Errorf("no review for %s", slug)
	}
	return r, nil
}

// Forecast implements backend.Store.
func (s *Store) Forecast(ctx context.Context, slug string) (backend.Forecast, error) {
	if err := s.record(ctx, Call{Method: "Forecast", Slug: slug}); err != nil {
		return backend.Forecast{}, err
	}
	s.mu.Lock()
	hold := s.HoldForecast
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return backend.Forecast{}, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.forecast[slug]; ok {
		return f, nil
	}
	r, ok := s.reviews[slug]
	if !ok {
		return backend.Forecast{}, fmt.Errorf("no review for %s", slug)
	}
	return backend.Forecast{Ready: r.MergeReady, Blockers: r.MergeBlockers, Into: r.MergeInto, CheckedOutAt: r.MergeCheckedOutAt}, nil
}

// Accept implements backend.Store.
func (s *Store) Accept(ctx context.Context, slug string, o backend.AcceptOptions) (backend.Outcome, error) {
	if err := s.record(ctx, Call{Method: "Accept", Slug: slug, Files: o.Files, ReviewSeconds: o.ReviewSeconds}); err != nil {
		return backend.Outcome{}, err
	}
	s.setVerdict(slug, transcript.VerdictAccept, o.ReviewSeconds)
	return backend.Outcome{Message: "accepted " + slug}, nil
}

// Merge implements backend.Store.
func (s *Store) Merge(ctx context.Context, slug string, secs float64) (backend.Outcome, error) {
	if err := s.record(ctx, Call{Method: "Merge", Slug: slug, ReviewSeconds: secs}); err != nil {
		return backend.Outcome{}, err
	}
	s.setVerdict(slug, transcript.VerdictAccept, secs)
	return backend.Outcome{Message: "merged " + slug}, nil
}

// Verdict implements backend.Store.
func (s *Store) Verdict(ctx context.Context, slug string, v transcript.Verdict, note string, secs float64) error {
	if err := s.record(ctx, Call{Method: "Verdict", Slug: slug, Verdict: v, Note: note, ReviewSeconds: secs}); err != nil {
		return err
	}
	s.setVerdict(slug, v, secs)
	return nil
}

// PlanClean implements backend.Store.
func (s *Store) PlanClean(ctx context.Context, slug string) (backend.CleanPlan, error) {
	if err := s.record(ctx, Call{Method: "PlanClean", Slug: slug}); err != nil {
		return backend.CleanPlan{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plans[slug], nil
}

// Clean implements backend.Store.
func (s *Store) Clean(ctx context.Context, slug string, secs float64) (backend.Outcome, error) {
	if err := s.record(ctx, Call{Method: "Clean", Slug: slug, ReviewSeconds: secs}); err != nil {
		return backend.Outcome{}, err
	}
	s.setVerdict(slug, transcript.VerdictCleanup, secs)
	return backend.Outcome{Message: "cleaned " + slug}, nil
}

// Stop implements backend.Store.
func (s *Store) Stop(ctx context.Context, slug string) error {
	return s.record(ctx, Call{Method: "Stop", Slug: slug})
}

// Launch implements backend.Launcher: it makes up a live run.
func (s *Store) Launch(ctx context.Context, spec backend.LaunchSpec) (backend.Launched, error) {
	if err := s.record(ctx, Call{Method: "Launch", Spec: spec}); err != nil {
		return backend.Launched{}, err
	}
	s.mu.Lock()
	s.launches++
	n := s.launches
	s.mu.Unlock()
	slug := fmt.Sprintf("launched-%d", n)
	return backend.Launched{Slug: slug, RunDir: "/runs/" + slug, Transcript: "/runs/" + slug + "/transcript.jsonl", PID: 1000 + n}, nil
}

// Resume implements backend.Launcher.
func (s *Store) Resume(ctx context.Context, run backend.Run, feedback string) (backend.Launched, error) {
	slug := run.Slug
	if err := s.record(ctx, Call{Method: "Resume", Slug: slug, Note: feedback}); err != nil {
		return backend.Launched{}, err
	}
	r := slug + "-resumed"
	return backend.Launched{Slug: r, RunDir: "/runs/" + r, Transcript: "/runs/" + r + "/transcript.jsonl"}, nil
}

// Models implements backend.Launcher.
func (s *Store) Models(ctx context.Context, _ string) ([]string, error) {
	if err := s.record(ctx, Call{Method: "Models"}); err != nil {
		return nil, err
	}
	return s.ModelIDs, nil
}

var (
	_ backend.Store    = (*Store)(nil)
	_ backend.Launcher = (*Store)(nil)
)
