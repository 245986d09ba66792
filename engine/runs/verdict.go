package runs

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/transcript"
)

// VerdictOptions are a verdict's fields (R-8, plus the reviewer).
type VerdictOptions struct {
	Verdict Verdict
	// Note is the reviewer's note; nil writes null.
	Note *string
	// ReviewSeconds is the time spent reviewing; nil writes null.
	ReviewSeconds *float64
	// Reviewer names who judged; "" takes the operator's git identity
	// (user.name) where the run's repository can tell, else $USER.
	Reviewer string
}

// VerdictResult is what Verdict recorded.
type VerdictResult struct {
	Slug           string
	Verdict        Verdict
	VerdictAt      string
	TimeToVerdictS *float64
	Reviewer       string
}

// Verdict records a review verdict in run.json: verdict, note,
// verdict_at, review_seconds, time_to_verdict_s (= verdict_at − ended, null
// when ended is absent or unreadable; an ended without a zone is UTC) and
// reviewer. It does not look at the run's status. The write merges into
// the stored record under its lock, so it never loses a field a run writes
// at the same moment.
func (s *Store) Verdict(ctx context.Context, slug string, opts VerdictOptions) (*VerdictResult, error) {
	if _, err := transcript.ParseVerdict(string(opts.Verdict)); err != nil {
		return nil, err
	}
	if opts.ReviewSeconds != nil && (math.IsNaN(*opts.ReviewSeconds) || math.IsInf(*opts.ReviewSeconds, 0) || *opts.ReviewSeconds < 0) {
		return nil, fmt.Errorf("review seconds must be a number of at least 0, not %v", *opts.ReviewSeconds)
	}
	run, err := s.Get(slug)
	if err != nil {
		return nil, err
	}
	reviewer := opts.Reviewer
	if reviewer == "" {
		reviewer = s.reviewer(ctx, run)
	}
	return s.recordVerdict(run, opts, reviewer, nil)
}

// recordVerdict writes the verdict fields, plus extra, in one locked
// update.
func (s *Store) recordVerdict(run *Run, opts VerdictOptions, reviewer string, extra ...any) (*VerdictResult, error) {
	at := s.now()
	res := &VerdictResult{Slug: run.Slug, Verdict: opts.Verdict, VerdictAt: transcript.FormatTime(at), Reviewer: reviewer}
	_, err := transcript.UpdateRun(run.Dir, func(rec transcript.RunRecord) ([]any, error) {
		pause.At(pause.Verdict) // read under the lock, not yet written
		res.TimeToVerdictS = secondsSince(rec.Ended, at)
		return append([]any{transcript.VerdictFields{
			Verdict: opts.Verdict, Note: opts.Note, VerdictAt: res.VerdictAt, ReviewSeconds: opts.ReviewSeconds,
			TimeToVerdictS: res.TimeToVerdictS, Reviewer: reviewer,
		}}, extra...), nil
	})
	if err != nil {
		return nil, fmt.Errorf("record the verdict of '%s': %w", run.Slug, err)
	}
	return res, nil
}

// reviewer is the operator's name for a verdict given without one.
func (s *Store) reviewer(ctx context.Context, run *Run) string {
	if run.Record.Repo != "" {
		if id := s.identity(ctx, run.Record.Repo); id.Name != fallbackIdentity.Name {
			return id.Name
		}
	}
	if u := userName(); u != "" {
		return u
	}
	return fallbackIdentity.Name
}

// secondsSince is at − ended in seconds, rounded to milliseconds; nil when
// ended is not a timestamp. A timestamp without a zone is UTC, as 0.9.1
// wrote them.
func secondsSince(ended string, at time.Time) *float64 {
	t, err := transcript.ParseTime(ended)
	if err != nil {
		return nil
	}
	d := math.Round(at.Sub(t).Seconds()*1000) / 1000
	return &d
}
