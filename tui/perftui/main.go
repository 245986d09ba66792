// Command perftui measures mission control against its speed targets and
// prints the figures; it asserts nothing.
//
//   - first frame with 10,000 runs in the root: the empty frame, and the
//     frame that lists them all through the real runs store;
//   - four live runs each appending 200 events a second: event to screen
//     and keystroke to screen (p50, p95, max), through the real feed and a
//     real tea.Program;
//   - memory with four followed transcripts of 50,000 events each;
//   - a 10,000-line diff: from enter to the review on screen, through the
//     real runs store and git;
//   - a 5,000-row results file: from the bench key to the bench view on
//     screen, through a real tea.Program.
//
// Usage: go run ./tui/perftui [-runs 10000] [-rate 200] [-seconds 10] [-events 50000] [-bench-rows 5000]
// (-only bench runs the last figure alone)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/feed"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/runsstore"
)

func main() {
	nRuns := flag.Int("runs", 10000, "runs in the root for the first-frame figure")
	rate := flag.Int("rate", 200, "events a second each of the four live runs appends")
	secs := flag.Int("seconds", 10, "how long the live load lasts")
	nEvents := flag.Int("events", 50000, "events in each of the four transcripts of the memory figure")
	diffLines := flag.Int("diff-lines", 10000, "lines of the large diff")
	reviewFiles := flag.Int("review-files", 50, "files changed by the run whose review opening is timed")
	background := flag.Int("background-runs", 10000, "finished runs in the root beside the four live ones")
	benchRows := flag.Int("bench-rows", 5000, "rows of the results file the bench view opens")
	only := flag.String("only", "", "run one figure alone: bench or review")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "dirtywork-perftui-")
	check(err)
	scratch = tmp
	defer func() { _ = os.RemoveAll(tmp) }()
	// Interrupted (task perf stopped), it leaves nothing behind either.
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-interrupted
		exit(130)
	}()
	fmt.Printf("machine: %d CPUs, %s\n\n", runtime.NumCPU(), runtime.Version())
	if p := os.Getenv("PERFTUI_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	if *only == "review" {
		reviewOpen(filepath.Join(tmp, "review"), *reviewFiles)
		return
	}
	if *only != "bench" {
		reviewOpen(filepath.Join(tmp, "review"), *reviewFiles)
		firstFrame(filepath.Join(tmp, "many"), *nRuns)
		liveLoad(filepath.Join(tmp, "live"), *rate, time.Duration(*secs)*time.Second, *background)
		memory(filepath.Join(tmp, "mem"), *nEvents)
		bigDiff(filepath.Join(tmp, "diff"), *diffLines)
	}
	benchOpen(filepath.Join(tmp, "bench"), *benchRows)
}

// scratch is the figures' temporary directory, removed on any exit;
// exiting makes one exit at a time.
var (
	scratch string
	exiting sync.Mutex
)

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "perftui:", err)
		exit(1)
	}
}

// exit removes the scratch directory and exits with code. A figure may
// still be writing into the directory (an interrupt comes at any time):
// the removal is repeated until it holds, and the figure, finding its
// directory gone, fails into exit and waits here.
func exit(code int) {
	exiting.Lock()
	if scratch != "" {
		for range 100 {
			if err := os.RemoveAll(scratch); err == nil {
				if _, err := os.Lstat(scratch); os.IsNotExist(err) {
					break
				}
			}
		}
	}
	os.Exit(code)
}

func root(dir string) string {
	check(transcript.EnsureDir(dir))
	r := filepath.Join(dir, "runs")
	check(transcript.EnsureDir(r))
	return r
}

// makeRun writes a run's record as a run leaves it.
func makeRun(root, slug string, i int, running bool) string {
	dir, err := transcript.CreateRunDir(root, slug)
	check(err)
	started := time.Now().Add(-time.Duration(i) * time.Minute)
	if running {
		started = time.Now()
	}
	image := "dirtywork-worker:dev"
	check(transcript.CreateRun(dir, transcript.RunStartFields{
		SchemaVersion: transcript.SchemaVersion, Status: transcript.StatusRunning, Slug: slug,
		Repo: "/src/repo" + strconv.Itoa(i%20), Worktree: "/src/repo/.worktrees/dw-" + slug, Branch: "dirtywork/" + slug,
		BaseCommit: strings.Repeat("a", 40), BaseRef: "HEAD",
		Task:  fmt.Sprintf("task number %d: make the export accept --json and add a test for it", i),
		Model: []string{"qwen/qwen3-coder", "devstral", "gpt-oss-20b"}[i%3], Provider: "openai",
		ContextWindow: 32768, Sandbox: "docker", Image: &image, Started: transcript.FormatTime(started),
	}))
	if running {
		return dir
	}
	done := "done"
	fields := []any{
		transcript.EndFields{
			Status: transcript.StatusCompleted, Turns: 12, LastAssistantText: &done,
			Ended: transcript.FormatTime(started.Add(5 * time.Minute)),
			Usage: transcript.Usage{PromptTokens: 40000, CompletionTokens: 3000},
		},
		transcript.NoExportFields{FilesChanged: []string{"a.go", "b.go"}},
	}
	if i%4 == 0 {
		secs := 30.5
		fields = append(fields, transcript.VerdictFields{Verdict: transcript.VerdictAccept, ReviewSeconds: &secs})
	}
	_, err = transcript.Patch(dir, fields...)
	check(err)
	return dir
}

// drive runs a model's Init commands once, in order (no program), and
// applies what they return; after each message it calls after, if set.
func drive(m tea.Model, after ...func(tea.Model)) tea.Model {
	var run func(cmd tea.Cmd)
	run = func(cmd tea.Cmd) {
		if cmd == nil {
			return
		}
		t0 := time.Now()
		msg := cmd()
		if os.Getenv("PERFTUI_DEBUG") != "" {
			fmt.Printf("    cmd %T took %s\n", msg, time.Since(t0))
		}
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				run(c)
			}
			return
		}
		if msg != nil {
			m, _ = m.Update(msg)
			for _, f := range after {
				f(m)
			}
		}
	}
	run(m.Init())
	return m
}

// nopFeed follows nothing.
type nopFeed struct{}

func (nopFeed) Follow(string, string) error   { return nil }
func (nopFeed) Unfollow(string)               {}
func (nopFeed) Watch(<-chan []backend.Change) {}

func firstFrame(dir string, n int) {
	r := root(dir)
	for i := range n {
		makeRun(r, fmt.Sprintf("run-%05d-1201120000-%08x", i, i), i, false)
	}
	runtime.GC()
	store := runsstore.New(runs.Open(r))
	start := time.Now()
	var m tea.Model = tui.New(tui.Options{Store: store, Feed: nopFeed{}, Keys: keys.Default(), Color: tui.ColorDark, TickEvery: -1})
	m, _ = m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	_ = m.(tui.Model).Render()
	empty := time.Since(start)
	var preview time.Duration
	m = drive(m, func(m tea.Model) {
		if preview == 0 && strings.Contains(m.(tui.Model).Render(), "most recent runs") {
			preview = time.Since(start)
		}
	})
	full := m.(tui.Model).Render()
	total := time.Since(start)
	listStart := time.Now()
	rs, err := store.List(context.Background())
	check(err)
	listTook := time.Since(listStart)
	fmt.Printf("first frame, %d runs in the root\n", n)
	fmt.Printf("  (the store's List alone, again: %s for %d runs)\n", listTook.Round(time.Millisecond), len(rs))
	fmt.Printf("  empty frame:                   %8s\n", empty.Round(time.Microsecond))
	fmt.Printf("  first frame with runs:         %8s   (target < 300 ms; the %d most recently active)\n", preview.Round(time.Millisecond), 200)
	fmt.Printf("  frame listing every run:       %8s\n", total.Round(time.Millisecond))
	if !strings.Contains(full, fmt.Sprintf("Runs %d", n)) {
		fmt.Println("  the frame does not list them all")
	}
	fmt.Println()
}

// probe wraps the root model: it times when an event or a key reached the
// screen (the first View after the Update that applied it).
type probe struct {
	inner tui.Model
	st    *probeState
}

type probeState struct {
	mu       sync.Mutex
	written  map[int]time.Time // seq -> when the writer wrote it
	applied  []int             // seqs applied, not yet drawn
	eventLat []time.Duration
	keySent  map[int]time.Time
	keyQueue []int
	keyLat   []time.Duration
	frames   int
}

func (p probe) Init() tea.Cmd { return p.inner.Init() }

func (p probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case feed.BatchMsg:
		p.st.mu.Lock()
		for _, es := range msg.Entries {
			for _, e := range es {
				if seq, ok := seqOf(e); ok {
					p.st.applied = append(p.st.applied, seq)
				}
			}
		}
		p.st.mu.Unlock()
	case keyMsg:
		p.st.mu.Lock()
		p.st.keyQueue = append(p.st.keyQueue, msg.n)
		p.st.mu.Unlock()
		m, cmd := p.inner.Update(tea.KeyPressMsg{Code: msg.code, Text: string(msg.code)})
		p.inner = m.(tui.Model)
		return p, cmd
	}
	m, cmd := p.inner.Update(msg)
	p.inner = m.(tui.Model)
	return p, cmd
}

func (p probe) View() tea.View {
	v := p.inner.View()
	now := time.Now()
	p.st.mu.Lock()
	for _, seq := range p.st.applied {
		if w, ok := p.st.written[seq]; ok {
			p.st.eventLat = append(p.st.eventLat, now.Sub(w))
		}
	}
	p.st.applied = p.st.applied[:0]
	for _, n := range p.st.keyQueue {
		p.st.keyLat = append(p.st.keyLat, now.Sub(p.st.keySent[n]))
	}
	p.st.keyQueue = p.st.keyQueue[:0]
	p.st.frames++
	p.st.mu.Unlock()
	return v
}

// keyMsg is a key press stamped with its number.
type keyMsg struct {
	n    int
	code rune
}

func seqOf(e live.Entry) (int, bool) {
	i := strings.Index(e.Text, "seq=")
	if i < 0 {
		return 0, false
	}
	j := i + 4
	for j < len(e.Text) && e.Text[j] >= '0' && e.Text[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(e.Text[i+4 : j])
	return n, err == nil
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func liveLoad(dir string, rate int, dur time.Duration, background int) {
	r := root(dir)
	for i := range background {
		makeRun(r, fmt.Sprintf("old-%05d-1201110000-%08x", i, i), i, false)
	}
	var writers []*transcript.Writer
	for i := range 4 {
		slug := fmt.Sprintf("live-%d-1201120000-0000000%d", i, i)
		rd := makeRun(r, slug, i, true)
		lock, err := transcript.AcquireLiveness(rd)
		check(err)
		defer func() { _ = lock.Release() }()
		w, err := transcript.Create(filepath.Join(rd, "transcript.jsonl"))
		check(err)
		check(w.Write(transcript.RunStart{Task: "live load", Model: "m", MaxTurns: 1000, ContextWindow: 32768, Repo: "/src/repo"}))
		writers = append(writers, w)
	}
	st := &probeState{written: map[int]time.Time{}, keySent: map[int]time.Time{}}
	store := runsstore.New(runs.Open(r))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := tui.Options{Store: store, Keys: keys.Default(), Color: tui.ColorDark, TickEvery: time.Second}
	lf := &lateFeed{}
	opts.Feed = lf
	p := tea.NewProgram(probe{inner: tui.New(opts), st: st}, tea.WithContext(ctx), tea.WithInput(nil),
		tea.WithOutput(io.Discard), tea.WithWindowSize(160, 45))
	lf.f = feed.New(ctx, p.Send)
	done := make(chan struct{})
	go func() {
		_, _ = p.Run()
		close(done)
	}()
	time.Sleep(3 * time.Second) // the first listing, the watch's first pass and the follows

	var seq int
	var seqMu sync.Mutex
	next := func() int {
		seqMu.Lock()
		defer seqMu.Unlock()
		seq++
		return seq
	}
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for i, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
			k := 0
			for time.Now().Before(stop) {
				<-tick.C
				k++
				var ev transcript.Event
				switch k % 4 {
				case 0:
					ev = transcript.ModelProgress{Turn: k, Tokens: k, TokensPerS: 30}
				case 1:
					ev = transcript.ModelRequest{Turn: k, EstPromptTokens: 12000}
				default:
					n := next()
					st.mu.Lock()
					st.written[n] = time.Now()
					st.mu.Unlock()
					ev = transcript.ToolResult{
						Tool: "bash", Args: `{"command":"go test ./..."}`,
						Result: fmt.Sprintf("seq=%d run %d ", n, i) + strings.Repeat("ok  \tpackage/path\t0.01s\n", 20),
					}
				}
				check(w.Write(ev))
			}
		}()
	}
	// Keys while the load runs: down and up in the runs list.
	go func() {
		for n := 0; time.Now().Before(stop); n++ {
			code := 'j'
			if n%2 == 1 {
				code = 'k'
			}
			st.mu.Lock()
			st.keySent[n] = time.Now()
			st.mu.Unlock()
			p.Send(keyMsg{n: n, code: code})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
	p.Quit()
	<-done
	st.mu.Lock()
	defer st.mu.Unlock()
	fmt.Printf("four live runs (and %d finished ones in the root), %d events a second each, %s (%d measured events written, %d drawn; %d frames)\n", background, rate, dur, len(st.written), len(st.eventLat), st.frames)
	fmt.Printf("  event written -> drawn:        p50 %6s  p95 %6s  max %6s   (target p95 < 100 ms)\n",
		pct(st.eventLat, .5).Round(time.Millisecond), pct(st.eventLat, .95).Round(time.Millisecond), pct(st.eventLat, 1).Round(time.Millisecond))
	fmt.Printf("  key sent -> drawn:             p50 %6s  p95 %6s  max %6s   (target p95 < 50 ms; %d keys)\n",
		pct(st.keyLat, .5).Round(time.Millisecond), pct(st.keyLat, .95).Round(time.Millisecond), pct(st.keyLat, 1).Round(time.Millisecond), len(st.keyLat))
	fmt.Println("  (drawn = the View after the Update that applied it; the renderer flushes frames at up to 60 a second)")
	fmt.Println()
}

// lateFeed lets the feed be made after the program.
type lateFeed struct{ f *feed.Feed }

func (l *lateFeed) Follow(slug, path string) error   { return l.f.Follow(slug, path) }
func (l *lateFeed) Unfollow(slug string)             { l.f.Unfollow(slug) }
func (l *lateFeed) Watch(ch <-chan []backend.Change) { l.f.Watch(ch) }

func rss() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	return "?"
}

func memory(dir string, n int) {
	r := root(dir)
	var bytesOnDisk int64
	for i := range 4 {
		slug := fmt.Sprintf("mem-%d-1201120000-0000000%d", i, i)
		rd := makeRun(r, slug, i, true)
		lock, err := transcript.AcquireLiveness(rd)
		check(err)
		defer func() { _ = lock.Release() }()
		path := filepath.Join(rd, "transcript.jsonl")
		w, err := transcript.Create(path)
		check(err)
		check(w.Write(transcript.RunStart{Task: "memory", Model: "m", MaxTurns: 100000, ContextWindow: 32768}))
		for k := 1; k < n; k++ {
			var ev transcript.Event
			switch k % 3 {
			case 0:
				ev = transcript.ModelRequest{Turn: k, EstPromptTokens: 12000}
			case 1:
				ev = transcript.Assistant{
					Text:      "I will run the tests and then look at the failing one. " + strings.Repeat("Reasoning about the change. ", 8),
					ToolCalls: []transcript.ToolCallRecord{{Name: "bash", Arguments: `{"command":"go test ./... 2>&1 | tail -40"}`}},
				}
			default:
				ev = transcript.ToolResult{Tool: "bash", Args: `{"command":"go test ./... 2>&1 | tail -40"}`, Result: strings.Repeat("--- FAIL: TestSomething (0.00s)\n    thing_test.go:12: got 1, want 2\n", 20)}
			}
			check(w.Write(ev))
		}
		check(w.Close())
		fi, err := os.Stat(path)
		check(err)
		bytesOnDisk += fi.Size()
	}
	runtime.GC()
	debug.FreeOSMemory()
	before := rss()
	store := runsstore.New(runs.Open(r))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan int, 1024)
	var m tui.Model
	var mu sync.Mutex
	opts := tui.Options{Store: store, Keys: keys.Default(), Color: tui.ColorDark, TickEvery: -1}
	fd := feed.New(ctx, func(msg tea.Msg) {
		mu.Lock()
		defer mu.Unlock()
		mm, _ := m.Update(msg)
		m = mm.(tui.Model)
		if b, ok := msg.(feed.BatchMsg); ok {
			k := 0
			for _, es := range b.Entries {
				k += len(es)
			}
			got <- k
		}
	})
	opts.Feed = &lateFeed{f: fd}
	m = tui.New(opts)
	start := time.Now()
	mu.Lock()
	var mm tea.Model = m
	mm, _ = mm.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	m = mm.(tui.Model)
	mu.Unlock()
	// The first listing and the follows it asks for.
	var run func(cmd tea.Cmd)
	run = func(cmd tea.Cmd) {
		if cmd == nil {
			return
		}
		go func() {
			msg := cmd()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					run(c)
				}
				return
			}
			if msg == nil {
				return
			}
			mu.Lock()
			mm, c := m.Update(msg)
			m = mm.(tui.Model)
			mu.Unlock()
			run(c)
		}()
	}
	run(m.Init())
	total := 0
	for total < 4*n {
		select {
		case k := <-got:
			total += k
		case <-time.After(30 * time.Second):
			fmt.Printf("  only %d of %d events arrived\n", total, 4*n)
			total = 4 * n
		}
	}
	took := time.Since(start)
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mu.Lock()
	_ = m.Render()
	mu.Unlock()
	fmt.Printf("four followed transcripts of %d events (%.0f MB on disk), all read in %s\n", n, float64(bytesOnDisk)/(1<<20), took.Round(time.Millisecond))
	fmt.Printf("  Go heap in use after GC:       %6.1f MB   (target < 150 MB)\n", float64(ms.HeapInuse)/(1<<20))
	fmt.Printf("  process RSS:                   %s (before following: %s)\n", rss(), before)
	fmt.Println()
}

func gitRun(dir string, args ...string) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@p", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@p")
	out, err := cmd.CombinedOutput()
	if err != nil {
		check(fmt.Errorf("git %v: %w: %s", args, err, out))
	}
}

func bigDiff(dir string, lines int) {
	r := root(filepath.Join(dir, "home"))
	repo := filepath.Join(dir, "repo")
	check(os.MkdirAll(repo, 0o755))
	gitRun(repo, "init", "-q", "-b", "main")
	var old, cur strings.Builder
	for i := range lines {
		fmt.Fprintf(&old, "\tvalue%d := compute(%d)\n", i, i)
		fmt.Fprintf(&cur, "\tvalue%d := computeFaster(%d, opts)\n", i, i)
	}
	check(os.WriteFile(filepath.Join(repo, "big.go"), []byte("package big\n\nfunc f() {\n"+old.String()+"}\n"), 0o644))
	gitRun(repo, "add", "-A")
	gitRun(repo, "commit", "-q", "-m", "base")
	wt := filepath.Join(repo, ".worktrees", "dw-bigdiff-1201120000-00000000")
	gitRun(repo, "worktree", "add", "-q", "-b", "dirtywork/bigdiff-1201120000-00000000", wt)
	// Half the lines change: a diff of about `lines` changed lines.
	var half strings.Builder
	for i := range lines {
		if i%2 == 0 {
			fmt.Fprintf(&half, "\tvalue%d := computeFaster(%d, opts)\n", i, i)
		} else {
			fmt.Fprintf(&half, "\tvalue%d := compute(%d)\n", i, i)
		}
	}
	check(os.WriteFile(filepath.Join(wt, "big.go"), []byte("package big\n\nfunc f() {\n"+half.String()+"}\n"), 0o644))
	finishedRun(r, repo, wt, "bigdiff-1201120000-00000000", "speed up f")
	store := runsstore.New(runs.Open(r))
	var m tea.Model = tui.New(tui.Options{Store: store, Feed: nopFeed{}, Keys: keys.Default(), Color: tui.ColorDark, TickEvery: -1})
	m, _ = m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	m = drive(m)
	start := time.Now()
	m, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	keyDone := time.Since(start)
	// The Cmd the key returned: the review's load (the store's diff and
	// forecast, then the parse), as the program would run it.
	var loaded tea.Msg
	var hl tea.Cmd
	for _, msg := range collect(cmd) {
		loaded = msg
		m, hl = m.Update(msg)
	}
	screen := m.(tui.Model).Render()
	shown := time.Since(start)
	hlStart := time.Now()
	for _, msg := range collect(hl) {
		m, _ = m.Update(msg)
	}
	_ = m.(tui.Model).Render()
	colored := time.Since(hlStart)
	_ = loaded
	fmt.Printf("a %d-line diff (%d changed lines)\n", lines, lines)
	fmt.Printf("  enter handled (Update):        %8s\n", keyDone.Round(time.Microsecond))
	fmt.Printf("  review on screen:              %8s   (target < 300 ms; store diff + forecast + parse + frame)\n", shown.Round(time.Millisecond))
	fmt.Printf("  syntax colour of the screen:   %8s   (later, off the UI loop; only the chunks on screen are coloured)\n", colored.Round(time.Millisecond))
	if !strings.Contains(screen, "in the accept") {
		fmt.Println("  the review did not open")
	}
}

// collect runs cmd and returns the messages it leads to (a batch's parts
// in order), skipping none.
func collect(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, collect(c)...)
		}
		return out
	}
	if msg == nil {
		return nil
	}
	return []tea.Msg{msg}
}

// finishedRun records a host run of slug under the runs root r that
// ended completed with its work uncommitted in worktree wt of repo (on
// branch dirtywork/<slug>, made from repo's HEAD).
func finishedRun(r, repo, wt, slug, task string) {
	base, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	check(err)
	rd, err := transcript.CreateRunDir(r, slug)
	check(err)
	now := transcript.FormatTime(time.Now())
	check(transcript.CreateRun(rd, transcript.RunStartFields{
		SchemaVersion: transcript.SchemaVersion, Status: transcript.StatusRunning, Slug: slug, Repo: repo, Worktree: wt,
		Branch: "dirtywork/" + slug, BaseCommit: strings.TrimSpace(string(base)), BaseRef: "main", Task: task,
		Model: "m", Sandbox: "none", Started: now,
	}))
	_, err = transcript.Patch(rd, transcript.EndFields{Status: transcript.StatusCompleted, Turns: 3, Ended: now})
	check(err)
}

// reviewOpen times opening the review of a run that changed files files
// (20 lines each) through the real runs store and git: from enter to the
// first diff line on screen, and to the merge forecast on screen. The
// load's commands run in the order the program starts them; each message
// is drawn as it arrives.
func reviewOpen(dir string, files int) {
	r := root(filepath.Join(dir, "home"))
	repo := filepath.Join(dir, "repo")
	check(os.MkdirAll(filepath.Join(repo, "src"), 0o755))
	gitRun(repo, "init", "-q", "-b", "main")
	body := func(i int, changed bool) string {
		var b strings.Builder
		fmt.Fprintf(&b, "package src\n\n// File %d.\nfunc F%d(x int) int {\n", i, i)
		for j := range 20 {
			if changed && j%4 == 0 {
				fmt.Fprintf(&b, "\tx = x*%d + %d // tuned\n", j+2, i)
			} else {
				fmt.Fprintf(&b, "\tx = x*%d + %d\n", j+1, i)
			}
		}
		b.WriteString("\treturn x\n}\n")
		return b.String()
	}
	for i := range files {
		check(os.WriteFile(filepath.Join(repo, "src", fmt.Sprintf("f%02d.go", i)), []byte(body(i, false)), 0o644))
	}
	gitRun(repo, "add", "-A")
	gitRun(repo, "commit", "-q", "-m", "base")
	slug := "review-1201120000-00000000"
	wt := filepath.Join(repo, ".worktrees", "dw-"+slug)
	gitRun(repo, "worktree", "add", "-q", "-b", "dirtywork/"+slug, wt)
	for i := range files {
		check(os.WriteFile(filepath.Join(wt, "src", fmt.Sprintf("f%02d.go", i)), []byte(body(i, true)), 0o644))
	}
	finishedRun(r, repo, wt, slug, "tune F")
	store := runsstore.New(runs.Open(r))
	var firsts, forecasts []time.Duration
	for range 7 {
		var m tea.Model = tui.New(tui.Options{Store: store, Feed: nopFeed{}, Keys: keys.Default(), Color: tui.ColorDark, TickEvery: -1})
		m, _ = m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
		m = drive(m)
		start := time.Now()
		m, cmd := m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
		var first, forecast time.Duration
		p := newPump(cmd)
		for first == 0 || forecast == 0 {
			msg, ok := p.next(5 * time.Second)
			if !ok {
				break
			}
			var next tea.Cmd
			m, next = m.Update(msg)
			p.add(next)
			screen := m.(tui.Model).Render()
			if first == 0 && strings.Contains(screen, "// tuned") {
				first = time.Since(start)
			}
			if forecast == 0 && first != 0 && !strings.Contains(screen, "merge forecast"+"…") {
				forecast = time.Since(start)
			}
		}
		firsts, forecasts = append(firsts, first), append(forecasts, forecast)
	}
	fmt.Printf("review of a run that changed %d files (20 lines each), medians of %d opens\n", files, len(firsts))
	fmt.Printf("  first diff line on screen:     %8s   (target <= 150 ms)\n", pct(firsts, 50).Round(time.Millisecond))
	fmt.Printf("  merge forecast on screen:      %8s   (after it; the diff is read meanwhile)\n", pct(forecasts, 50).Round(time.Millisecond))
	fmt.Println()
}

// pump runs Cmds as the program would: a batch's parts side by side,
// each message handed over as it arrives.
type pump struct{ out chan tea.Msg }

func newPump(cmd tea.Cmd) *pump {
	p := &pump{out: make(chan tea.Msg, 64)}
	p.add(cmd)
	return p
}

func (p *pump) add(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, part := range b {
				p.add(part)
			}
			return
		}
		if msg != nil {
			p.out <- msg
		}
	}()
}

// next is the next message, or false when none came within wait (what
// is left are timers: a cursor blink, a tick).
func (p *pump) next(wait time.Duration) (tea.Msg, bool) {
	select {
	case msg := <-p.out:
		return msg, true
	case <-time.After(wait):
		return nil, false
	}
}
