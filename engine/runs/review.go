package runs

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/dirtywork/dirtywork/transcript"
)

// Review is what reviewing one run shows, read from one look at the run:
// the run, its diff, what its worker said it did, and whether it merges.
type Review struct {
	Run  *Run
	Diff *Diff
	// Summary is the summary the worker gave its finish call, else its
	// last text ("" when it left neither).
	Summary string
	// Forecast is the merge into the run's target, nil when it could not
	// be made (ForecastErr says why).
	Forecast    *MergeForecast
	ForecastErr error
}

// Review reads the run slug once and returns what a review of it shows.
func (s *Store) Review(ctx context.Context, slug string) (*Review, error) {
	rv, err := s.ReviewDiff(ctx, slug)
	if err != nil {
		return nil, err
	}
	rv.Forecast, rv.ForecastErr = s.forecast(ctx, rv.Run, "", needsAccept(rv.Run))
	return rv, nil
}

// ReviewDiff is Review without the merge forecast, which takes longer
// than the rest together (a merge is tried): a reviewer reads the diff
// while Forecast makes it.
func (s *Store) ReviewDiff(ctx context.Context, slug string) (*Review, error) {
	run, err := s.Get(slug)
	if err != nil {
		return nil, err
	}
	d, err := s.diff(ctx, run, DiffOptions{})
	if err != nil {
		return nil, err
	}
	rv := &Review{Run: run, Diff: d, Summary: finishSummary(run.Dir)}
	if rv.Summary == "" {
		rv.Summary = Str(run.Record.LastAssistantText)
	}
	return rv, nil
}

// finishSummary is the summary the worker gave its finish call, read from
// the transcript ("" when it gave none).
func finishSummary(dir string) string {
	lines, _, err := transcript.ReadFile(filepath.Join(dir, transcript.TranscriptName))
	if err != nil {
		return ""
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Event != transcript.EventAssistant {
			continue
		}
		ev, _ := lines[i].Decode()
		a, ok := ev.(transcript.Assistant)
		if !ok {
			continue
		}
		for _, c := range a.ToolCalls {
			if c.Name != "finish" {
				continue
			}
			var args struct {
				Summary string `json:"summary"`
			}
			if json.Unmarshal([]byte(c.Arguments), &args) == nil {
				return args.Summary
			}
		}
		return ""
	}
	return ""
}
