package benchview

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// benchFile writes a results file of n rows like a sweep's: ten models,
// fifty tasks, each row with its serving, time split and evidence.
func benchFile(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "20261202T130000Z.jsonl")
	f := func(x float64) *float64 { return &x }
	ctx := 32768
	for i := range n {
		r := row(fmt.Sprintf("model-%d", i%10), fmt.Sprintf("task-%02d", (i/10)%50), i/500, bench.AcceptancePass)
		slug := fmt.Sprintf("task-%02d-1202130000-%08x", (i/10)%50, i)
		dir := "/home/u/.dirtywork/runs/" + slug
		r.Slug, r.RunDir, r.Provider, r.BaseURL = &slug, &dir, ptr("openai"), ptr("http://10.0.0.5:1234/v1")
		r.Turns, r.WallS, r.PromptTokens, r.CompletionTokens = ptr(4+i%30), ptr(bench.Seconds(20+i%90)), ptr(12000+i%5000), ptr(900)
		r.Serving = &bench.Serving{Server: "lmstudio", Version: "0.3.31", ContextLength: &ctx, Quantization: "q4_k_m", Slots: 2}
		r.Time = &bench.Time{StagingS: f(0.4), SandboxStartS: f(1.1), PrefillS: f(2.5), DecodeS: f(12), DecodeTokensPerS: f(31), ToolsS: f(3), ExportS: f(0.3), AcceptanceS: f(1.4)}
		if i%3 != 0 {
			r.Acceptance, r.FailureClass = bench.AcceptanceFail, bench.FailureModel
			r.FailureEvidence = "run_end: status completed; acceptance: exit status 1: 2 of 5 hidden inputs gave the wrong answer"
		}
		if err := bench.AppendRow(path, r); err != nil {
			b.Fatal(err)
		}
	}
	return path
}

// BenchmarkOpen5000 is the bench view opening a 5,000-row results file:
// the read and parse, the statistics and the first frame (the follower's
// goroutine and the program's loop around them are not in it; tui/perftui
// measures the whole key-to-screen path).
func BenchmarkOpen5000(b *testing.B) {
	path := benchFile(b, 5000)
	km := keys.Default()
	st := theme.New(theme.Dark)
	cpu0 := cpuTime(b)
	for b.Loop() {
		m := New(st, &km, nil, path, "")
		m.SetSize(160, 45)
		tl := &tail{path: path}
		u, err := tl.read()
		if err != nil || len(u.Rows) != 5000 {
			b.Fatalf("%d rows: %v", len(u.Rows), err)
		}
		m, _ = m.Update(rowsMsg{path: path, u: u})
		_ = m.View(t0)
	}
	// The process's CPU time per open: what a busy machine cannot
	// stretch (the wall time is at most this on an idle one, less with
	// the parse on every core).
	b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
