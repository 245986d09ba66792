package bench

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// at writes events with the given stamps and reads them back as lines.
func at(t *testing.T, stamps []time.Time, events []transcript.Event) []transcript.Line {
	t.Helper()
	path := filepath.Join(t.TempDir(), transcript.TranscriptName)
	i := 0
	tw, err := transcript.Create(path, transcript.WithClock(func() time.Time { s := stamps[i]; i++; return s }))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if err := tw.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	lines, _, err := transcript.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestTimingSplitsARun(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	s := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	lines := at(t,
		[]time.Time{s(1.5), s(1.6), s(2.6), s(3.1), s(4.0), s(4.5), s(6.5), s(7.0), s(9.0)},
		[]transcript.Event{
			transcript.RunStart{Task: "t"},                        // 1.5: sandbox 1.5 s after start
			transcript.ModelRequest{Turn: 1},                      // 1.6
			transcript.ModelProgress{Turn: 1, TokensPerS: 40},     // 2.6: first token after 1.0
			transcript.Assistant{Text: "call"},                    // 3.1: decode 0.5
			transcript.ModelRequest{Turn: 2},                      // 4.0: tools 0.9
			transcript.ModelProgress{Turn: 2, TokensPerS: 50},     // 4.5: prefill 0.5
			transcript.Assistant{Text: "done"},                    // 6.5: decode 2.0
			transcript.ToolResult{Tool: "finish", Result: "ok"},   // 7.0: tools 0.5
			transcript.RunEnd{Status: transcript.StatusCompleted}, // 9.0: export 2.0
		})
	got := timingOf(lines, t0)
	if got.SandboxStartS != 1.5 || got.ModelS != 4.0 || got.ToolsS != 1.4 || got.ExportS != 2.0 {
		t.Fatalf("timing %+v", got)
	}
	if got.PrefillS == nil || *got.PrefillS != 1.5 || got.DecodeS == nil || *got.DecodeS != 2.5 ||
		got.DecodeTokensPerS == nil || *got.DecodeTokensPerS != 50 {
		t.Fatalf("model split %v %v %v", got.PrefillS, got.DecodeS, got.DecodeTokensPerS)
	}
}

// Without streamed progress the model's time is not split, and a run
// ending on a failed request counts that request's time.
func TestTimingWithoutStreaming(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	s := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	lines := at(t,
		[]time.Time{s(1), s(1), s(3), s(4), s(9), s(9.25)},
		[]transcript.Event{
			transcript.RunStart{Task: "t"},
			transcript.ModelRequest{Turn: 1},
			transcript.Assistant{Text: "call"},
			transcript.ModelRequest{Turn: 2},
			transcript.Nudge{Kind: "empty", Turn: 2},
			transcript.RunEnd{Status: transcript.StatusModelError},
		})
	got := timingOf(lines, t0)
	if got.ModelS != 7 || got.ToolsS != 1 || got.ExportS != 0.25 || got.PrefillS != nil || got.DecodeS != nil {
		t.Fatalf("timing %+v", got)
	}
}
