package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/runsstore"
)

// benchResults writes a results file of n rows as a sweep writes them:
// ten models (one served two ways) × fifty tasks × as many repeats as it
// takes, every row with its serving, time split and failure evidence.
func benchResults(path string, n int) {
	f := func(x float64) *float64 { return &x }
	ctx := 32768
	for i := range n {
		model := fmt.Sprintf("model-%d", i%10)
		task := fmt.Sprintf("task-%02d", (i/10)%50)
		serving := &bench.Serving{Server: "lmstudio", Version: "0.3.31", ContextLength: &ctx, Quantization: "q4_k_m", Slots: 2}
		if i%10 == 9 && i%20 >= 10 {
			model = "model-8" // model-8 served two ways
			serving = &bench.Serving{Server: "llama.cpp", Version: "b6000", ContextLength: &ctx, Quantization: "Q8_0", Slots: 4}
		}
		slug := fmt.Sprintf("%s-1202130000-%08x", task, i)
		dir := "/home/u/.dirtywork/runs/" + slug
		prov, url := "openai", "http://10.0.0.5:1234/v1"
		turns, wall := 4+i%30, bench.Seconds(20+float64(i%90))
		pt, ct := 12000+i%5000, 900
		r := bench.Row{
			Stamp: "20261202T130000Z", Model: model, Task: task, Repeat: i / 500, Provider: &prov, BaseURL: &url,
			Slug: &slug, RunDir: &dir, Status: "completed", Turns: &turns, WallS: &wall, PromptTokens: &pt, CompletionTokens: &ct,
			Acceptance: bench.AcceptancePass, Harness: &bench.Harness{NudgeEmpty: i % 2}, Serving: serving,
			Time: &bench.Time{StagingS: f(0.4), SandboxStartS: f(1.1), PrefillS: f(2.5), DecodeS: f(12), DecodeTokensPerS: f(31), ToolsS: f(3), ExportS: f(0.3), AcceptanceS: f(1.4)},
		}
		if i%3 != 0 {
			r.Acceptance, r.FailureClass = bench.AcceptanceFail, bench.FailureModel
			r.FailureEvidence = "run_end: status completed; acceptance: exit status 1: 2 of 5 hidden inputs gave the wrong answer"
		}
		check(bench.AppendRow(path, r))
	}
}

// benchProbe wraps the root model: it notes when a frame first shows the
// bench view's tables.
type benchProbe struct {
	inner tui.Model
	st    *benchProbeState
}

type benchProbeState struct {
	mu     sync.Mutex
	want   string
	shown  time.Time
	parsed time.Duration
	done   chan struct{}
}

func (p benchProbe) Init() tea.Cmd { return p.inner.Init() }

func (p benchProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := p.inner.Update(msg)
	p.inner = m.(tui.Model)
	return p, cmd
}

func (p benchProbe) View() tea.View {
	v := p.inner.View()
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	if p.st.want != "" && p.st.shown.IsZero() && strings.Contains(p.inner.Render(), p.st.want) {
		p.st.shown = time.Now()
		p.st.parsed = p.inner.BenchTook()
		close(p.st.done)
	}
	return v
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchOpen times the bench view opening a results file of n rows, from
// the key on the dashboard to the frame that shows its tables.
func benchOpen(dir string, n int) {
	r := root(dir)
	benchDir := filepath.Join(filepath.Dir(r), "bench")
	check(transcript.EnsureDir(benchDir))
	path := filepath.Join(benchDir, "20261202T130000Z.jsonl")
	benchResults(path, n)
	res, err := bench.ReadResults(path)
	check(err)
	info, err := os.Stat(path)
	check(err)
	size := info.Size()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &benchProbeState{done: make(chan struct{})}
	opts := tui.Options{
		Store: runsstore.New(runs.Open(r)), Feed: nopFeed{}, Keys: keys.Default(), Color: tui.ColorDark,
		TickEvery: -1, BenchDir: benchDir, Context: ctx,
	}
	p := tea.NewProgram(benchProbe{inner: tui.New(opts), st: st}, tea.WithContext(ctx), tea.WithInput(nil),
		tea.WithOutput(io.Discard), tea.WithWindowSize(160, 45))
	exited := make(chan struct{})
	go func() {
		_, _ = p.Run()
		close(exited)
	}()
	time.Sleep(time.Second) // the dashboard's first frames
	st.mu.Lock()
	st.want = fmt.Sprintf("%d rows", n)
	st.mu.Unlock()
	cpu0 := cpuTime()
	start := time.Now()
	p.Send(tea.KeyPressMsg{Code: 'b', ShiftedCode: 'B', Text: "B", Mod: tea.ModShift})
	select {
	case <-st.done:
	case <-time.After(time.Minute):
		fmt.Println("  the bench view did not show the file within a minute")
	}
	cpu := cpuTime() - cpu0
	st.mu.Lock()
	shown, parsed := st.shown.Sub(start), st.parsed
	st.mu.Unlock()
	p.Quit()
	<-exited
	fmt.Printf("bench view over a %d-row results file (%.1f MB, %d models × 50 tasks; %d rows read back)\n", n, float64(size)/(1<<20), 10, len(res.Rows))
	fmt.Printf("  key to the tables on screen:   %8s   (target <= 300 ms; process CPU meanwhile %s)\n", shown.Round(time.Millisecond), cpu.Round(time.Millisecond))
	fmt.Printf("  of which reading and parsing:  %8s   (on every core; then the statistics and the frame)\n", parsed.Round(time.Millisecond))
	fmt.Println()
}
