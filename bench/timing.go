package bench

import (
	"math"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// Timing is where a case's time went, in seconds: staging (copying the
// fixture into a repository), the sandbox start, the model (prefill up to
// the first streamed token, decode after it), the tools and the harness
// between replies, the export and the acceptance. Model parts the
// transcript cannot split are nil.
type Timing struct {
	StagingS      float64  `json:"staging_s"`
	SandboxStartS float64  `json:"sandbox_start_s"`
	ModelS        float64  `json:"model_s"`
	PrefillS      *float64 `json:"prefill_s"`
	DecodeS       *float64 `json:"decode_s"`
	// DecodeTokensPerS is the last streamed rate the server reported.
	DecodeTokensPerS *float64 `json:"decode_tokens_per_s"`
	ToolsS           float64  `json:"tools_s"`
	ExportS          float64  `json:"export_s"`
	AcceptanceS      float64  `json:"acceptance_s"`
}

// timingOf reads the run's part of a Timing from its transcript: started
// is run.json's start (the sandbox start is the time to the transcript's
// run_start, which follows the workspace's opening). A model request runs
// from its model_request to the reply's assistant event (or whatever ended
// the turn); the tools' time runs from the reply to the next request; the
// export from the last event to run_end.
func timingOf(lines []transcript.Line, started time.Time) Timing {
	var t Timing
	var prefill, decode float64
	var streamed bool
	var reqAt, firstToken, replyAt, lastAt time.Time
	for _, l := range lines {
		switch l.Event {
		case transcript.EventRunStart:
			if !started.IsZero() && l.TS.After(started) {
				t.SandboxStartS = l.TS.Sub(started).Seconds()
			}
		case transcript.EventModelRequest:
			if !replyAt.IsZero() {
				t.ToolsS += l.TS.Sub(replyAt).Seconds()
				replyAt = time.Time{}
			}
			reqAt, firstToken = l.TS, time.Time{}
		case transcript.EventModelProgress:
			if !reqAt.IsZero() && firstToken.IsZero() {
				firstToken = l.TS
			}
			if ev, err := l.Decode(); err == nil {
				if p, ok := ev.(transcript.ModelProgress); ok && p.TokensPerS > 0 && !math.IsInf(float64(p.TokensPerS), 0) {
					rate := float64(p.TokensPerS)
					t.DecodeTokensPerS = &rate
				}
			}
		case transcript.EventAssistant:
			if !reqAt.IsZero() {
				t.ModelS += l.TS.Sub(reqAt).Seconds()
				if !firstToken.IsZero() {
					streamed = true
					prefill += firstToken.Sub(reqAt).Seconds()
					decode += l.TS.Sub(firstToken).Seconds()
				} else {
					prefill += l.TS.Sub(reqAt).Seconds()
				}
			}
			reqAt, replyAt = time.Time{}, l.TS
		case transcript.EventRunEnd:
			if !lastAt.IsZero() {
				t.ExportS = l.TS.Sub(lastAt).Seconds()
			}
			if !replyAt.IsZero() {
				t.ToolsS += lastAt.Sub(replyAt).Seconds()
			}
			if !reqAt.IsZero() {
				// The run ended on a failed request.
				t.ModelS += lastAt.Sub(reqAt).Seconds()
			}
			t.round()
			if streamed {
				t.PrefillS, t.DecodeS = rounded(prefill), rounded(decode)
			}
			return t
		}
		if l.Event != transcript.EventRunEnd {
			lastAt = l.TS
		}
	}
	t.round()
	if streamed {
		t.PrefillS, t.DecodeS = rounded(prefill), rounded(decode)
	}
	return t
}

// round keeps milliseconds: finer is noise.
func (t *Timing) round() {
	for _, f := range []*float64{&t.StagingS, &t.SandboxStartS, &t.ModelS, &t.ToolsS, &t.ExportS, &t.AcceptanceS} {
		*f = math.Round(max(0, *f)*1000) / 1000
	}
	if t.DecodeTokensPerS != nil {
		t.DecodeTokensPerS = rounded(*t.DecodeTokensPerS)
	}
}

func rounded(v float64) *float64 {
	r := math.Round(max(0, v)*1000) / 1000
	return &r
}
