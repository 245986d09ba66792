// Package runsstore is mission control's backend.Store over engine/runs:
// the same Store the `runs` verbs use, so a key in the TUI does exactly
// what the matching command does. It only translates: a runs.Run is
// shown as its record (backend.Run embeds it), the diff, risks and merge
// forecast become a review, and each verdict key its Store call.
package runsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
)

// Store adapts a *runs.Store.
type Store struct {
	S *runs.Store
}

// New wraps s.
func New(s *runs.Store) *Store { return &Store{S: s} }

// view is a store run as the TUI holds it: the record itself, with where
// it lives and whether it is alive.
func view(r *runs.Run) backend.Run {
	out := backend.Run{
		RunRecord: r.Record, RunDir: r.Dir, Transcript: filepath.Join(r.Dir, transcript.TranscriptName), Alive: r.Alive,
	}
	if out.Slug == "" {
		out.Slug = r.Slug
	}
	if r.Err != nil {
		out.Problem = r.Err.Error()
	}
	return out
}

// Recent implements backend.Previewer: the n run dirs changed last (a
// run's dir changes whenever its run.json is rewritten), through the
// store's Get.
func (s *Store) Recent(ctx context.Context, n int) ([]backend.Run, int, error) {
	root := s.S.Root()
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	type dir struct {
		name string
		mod  int64
	}
	dirs := make([]dir, 0, len(ents))
	for _, e := range ents {
		if !e.IsDir() || transcript.ValidSlug(e.Name()) != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		dirs = append(dirs, dir{e.Name(), info.ModTime().UnixNano()})
	}
	slices.SortFunc(dirs, func(a, b dir) int { return cmp.Compare(b.mod, a.mod) })
	out := make([]backend.Run, 0, min(n, len(dirs)))
	for _, d := range dirs[:min(n, len(dirs))] {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		r, err := s.S.Get(d.name)
		if err != nil && r == nil {
			continue // gone, or holding no run.json
		}
		out = append(out, view(r))
	}
	return out, len(dirs), nil
}

// List implements backend.Store.
func (s *Store) List(ctx context.Context) ([]backend.Run, error) {
	rs, err := s.S.List(ctx, runs.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]backend.Run, len(rs))
	for i, r := range rs {
		out[i] = view(r)
	}
	return out, nil
}

// Watch implements backend.Store: the store's events, in batches of what
// is ready at once.
func (s *Store) Watch(ctx context.Context) (<-chan []backend.Change, error) {
	evs, err := s.S.Watch(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan []backend.Change, 8)
	go func() {
		defer close(out)
		for ev := range evs {
			batch := []backend.Change{change(ev)}
		drain:
			for len(batch) < 512 {
				select {
				case ev, ok := <-evs:
					if !ok {
						break drain
					}
					batch = append(batch, change(ev))
				default:
					break drain
				}
			}
			select {
			case out <- batch:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func change(ev runs.Event) backend.Change {
	if ev.Kind == runs.RunRemoved || ev.Run == nil {
		return backend.Change{Run: backend.Run{RunRecord: transcript.RunRecord{Slug: ev.Slug}}, Removed: true}
	}
	return backend.Change{Run: view(ev.Run)}
}

// Review implements backend.Store: the diff, its risks, and the merge
// forecast, with the run's summary and verify result.
func (s *Store) Review(ctx context.Context, slug string) (backend.Review, error) {
	r, err := s.S.ReviewDiff(ctx, slug)
	if err != nil {
		return backend.Review{}, err
	}
	d := r.Diff
	rv := backend.Review{Patch: string(d.Patch), Summary: r.Summary}
	if v := r.Run.Record.Verify; v != nil {
		rv.Verify = &backend.Verify{Command: v.Command, ExitCode: v.ExitCode, Passed: v.Passed, Output: v.OutputTail}
	}
	if d.Source == runs.DiffNone {
		rv.Warnings = append(rv.Warnings, backend.Warning{Kind: "other", Text: "no diff: the worktree holds none of the run's files and there is no diff.patch"})
	}
	if d.Truncated {
		rv.Warnings = append(rv.Warnings, backend.Warning{Kind: "other", Text: fmt.Sprintf("the diff is cut at %d MiB; the files list is complete", runs.DefaultMaxPatchBytes>>20)})
	}
	for _, r := range d.Risks {
		rv.Warnings = append(rv.Warnings, backend.Warning{Kind: backend.WarnRisky, Text: r.Path + ": " + r.Detail})
	}
	for _, p := range append(d.Skipped, d.Dropped...) {
		rv.Warnings = append(rv.Warnings, backend.Warning{Kind: "other", Text: "left out of the diff: " + p})
	}
	return rv, nil
}

// Forecast implements backend.Store. A forecast that cannot be made is a
// blocker, not an error: the review shows why merge will not go ahead.
func (s *Store) Forecast(ctx context.Context, slug string) (backend.Forecast, error) {
	fc, err := s.S.Forecast(ctx, slug, "")
	if err != nil {
		if ctx.Err() != nil {
			return backend.Forecast{}, ctx.Err()
		}
		return backend.Forecast{Blockers: []string{err.Error()}}, nil
	}
	var f backend.Forecast
	if fc.BaseMoved {
		f.Warnings = append(f.Warnings, backend.Warning{Kind: backend.WarnBaseMoved, Text: fc.Into + " has moved on since the run began"})
	}
	if len(fc.Conflicts) > 0 {
		f.Warnings = append(f.Warnings, backend.Warning{Kind: backend.WarnConflict, Text: "in " + strings.Join(fc.Conflicts, ", ")})
	}
	f.Ready, f.Blockers = fc.OK(), fc.Reasons
	f.Into, f.CheckedOutAt = fc.Into, fc.CheckedOutAt
	return f, nil
}

func risks(rs []runs.Risk) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Path+": "+r.Detail)
	}
	return out
}

// Accept implements backend.Store.
func (s *Store) Accept(ctx context.Context, slug string, o backend.AcceptOptions) (backend.Outcome, error) {
	secs := o.ReviewSeconds
	res, err := s.S.Accept(ctx, slug, runs.AcceptOptions{Files: o.Files, ReviewSeconds: &secs})
	if err != nil {
		return backend.Outcome{}, err
	}
	msg := fmt.Sprintf("accepted %s: nothing new to commit on %s", slug, res.Branch)
	if res.Committed {
		msg = fmt.Sprintf("accepted %s: %d files committed on %s as %s", slug, len(res.Files), res.Branch, short(res.Commit))
	}
	return backend.Outcome{Message: msg, Warnings: risks(res.Risks)}, nil
}

// Merge implements backend.Store.
func (s *Store) Merge(ctx context.Context, slug string, reviewSeconds float64) (backend.Outcome, error) {
	secs := reviewSeconds
	res, err := s.S.Merge(ctx, slug, runs.MergeOptions{ReviewSeconds: &secs})
	if err != nil {
		return backend.Outcome{}, err
	}
	how := "a merge commit"
	switch {
	case res.AlreadyMerged:
		how = "already there"
	case res.FastForward:
		how = "fast-forward"
	}
	var warns []string
	if res.Accept != nil {
		warns = risks(res.Accept.Risks)
	}
	return backend.Outcome{Message: fmt.Sprintf("merged %s into %s (%s, %s)", slug, res.Into, how, short(res.Commit)), Warnings: warns}, nil
}

// Verdict implements backend.Store.
func (s *Store) Verdict(ctx context.Context, slug string, verdict transcript.Verdict, note string, reviewSeconds float64) error {
	secs := reviewSeconds
	o := runs.VerdictOptions{Verdict: verdict, ReviewSeconds: &secs}
	if note != "" {
		o.Note = &note
	}
	_, err := s.S.Verdict(ctx, slug, o)
	return err
}

// cleanOptions is the TUI's clean: lossless (work merged nowhere is
// parked first, so force never deletes it), keeping run.json and the
// transcript so the verdict stays in the statistics.
var cleanOptions = runs.CleanOptions{Force: true, KeepTranscript: true}

// PlanClean implements backend.Store: a dry run of the clean.
func (s *Store) PlanClean(ctx context.Context, slug string) (backend.CleanPlan, error) {
	o := cleanOptions
	o.DryRun = true
	res := s.S.Clean(ctx, slug, o)
	plan := backend.CleanPlan{}
	for _, a := range res.Actions {
		plan.Actions = append(plan.Actions, planned(a))
	}
	if res.Parked != "" {
		plan.Parked = []string{res.Parked}
	}
	if res.Skipped() {
		return plan, skips(res)
	}
	return plan, nil
}

// planned is a dry run's action as the clean with cleanOptions does it:
// the engine's dry run reports the run dir's removal whatever
// KeepTranscript says, while the clean keeps run.json and the transcript
// there (and removes the rest), so the confirmation says that.
func planned(a runs.Action) string {
	if a.Action == "remove-rundir" && cleanOptions.KeepTranscript {
		return "keep-transcript: " + a.Detail + " (run.json and " + transcript.TranscriptName + " stay; the rest of the run dir goes)"
	}
	return a.String()
}

// Clean implements backend.Store: verdict cleanup, then the clean.
func (s *Store) Clean(ctx context.Context, slug string, reviewSeconds float64) (backend.Outcome, error) {
	if err := s.Verdict(ctx, slug, transcript.VerdictCleanup, "", reviewSeconds); err != nil {
		return backend.Outcome{}, err
	}
	res := s.S.Clean(ctx, slug, cleanOptions)
	if res.Skipped() {
		return backend.Outcome{}, skips(res)
	}
	msg := "cleaned " + slug
	if res.Parked != "" {
		msg += "; its work is kept under " + res.Parked
	}
	return backend.Outcome{Message: msg}, nil
}

func skips(res *runs.CleanResult) error {
	var lines []string
	for _, a := range res.Actions {
		if a.Skipped() {
			lines = append(lines, a.String())
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}

// Stop implements backend.Store: the store's Stop (SIGINT to a run whose
// liveness lock is held; it ends interrupted, keeping its evidence).
func (s *Store) Stop(_ context.Context, slug string) error { return s.S.Stop(slug) }

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

var (
	_ backend.Store     = (*Store)(nil)
	_ backend.Previewer = (*Store)(nil)
)
