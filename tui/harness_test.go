package tui

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/backend/fake"
	"github.com/dirtywork/dirtywork/tui/feed"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/live"
)

// t0 is the tests' fixed "now".
var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// fakeFeed records what the model asks of the feed; tests deliver
// feed.BatchMsg themselves.
type fakeFeed struct {
	mu       sync.Mutex
	follows  []string
	unfollow []string
	watched  int
}

func (f *fakeFeed) Follow(slug, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.follows = append(f.follows, slug)
	return nil
}

func (f *fakeFeed) Unfollow(slug string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unfollow = append(f.unfollow, slug)
}

func (f *fakeFeed) Watch(<-chan []backend.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watched++
}

// harness drives a Model the way the program would, running the Cmds it
// returns (those that finish quickly: ticks and cursor blinks are left
// out) and feeding their messages back.
type harness struct {
	t     *testing.T
	m     Model
	store *fake.Store
	feed  *fakeFeed
	clock time.Time
	quit  bool
	raw   []string // tea.Raw payloads (bell, OSC 9)
	// wait bounds each Cmd (150 ms when 0): longer ones are timers.
	wait time.Duration
	// late receives what Cmds that outlasted wait return after all (the
	// bench view's follower); until delivers it.
	late chan tea.Msg
}

type harnessOpt func(*Options)

func newHarness(t *testing.T, w, h int, store *fake.Store, opts ...harnessOpt) *harness {
	t.Helper()
	hs := &harness{t: t, store: store, feed: &fakeFeed{}, clock: t0, late: make(chan tea.Msg, 64)}
	o := Options{
		Store: store, Launcher: store, Feed: hs.feed, Keys: keys.Default(), Color: ColorDark,
		Now: func() time.Time { return hs.clock }, TickEvery: -1,
		Notify: Notify{Bell: true, OSC9: true}, Context: t.Context(),
	}
	for _, f := range opts {
		f(&o)
	}
	hs.m = New(o)
	hs.run(hs.m.Init())
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	return hs
}

func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	m, cmd := h.m.Update(msg)
	h.m = m.(Model)
	h.run(cmd)
}

// run executes cmd and everything it leads to. Cmds run concurrently; one
// that has not returned within the bound is a timer (a tick, a cursor
// blink) and is dropped.
func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	wait := h.wait
	if wait == 0 {
		wait = 150 * time.Millisecond
	}
	for _, msg := range collect(cmd, time.Now().Add(wait), h.late) {
		h.handle(msg)
	}
}

// until delivers the messages of Cmds that outlasted the harness's wait
// until cond holds, failing after a liveness bound.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	bound := time.After(20 * time.Second)
	for !cond() {
		select {
		case msg := <-h.late:
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					h.run(c)
				}
				continue
			}
			h.handle(msg)
		case <-bound:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// collect runs cmd (a batch's parts in parallel) and returns the messages
// that arrive before the deadline, in the batch's order; what arrives
// later goes to late (when it has room).
func collect(cmd tea.Cmd, deadline time.Time, late chan<- tea.Msg) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(time.Until(deadline)):
		go func() {
			if msg := <-done; msg != nil {
				select {
				case late <- msg:
				default:
				}
			}
		}()
		return nil
	}
	batch, ok := msg.(tea.BatchMsg)
	if !ok {
		return []tea.Msg{msg}
	}
	results := make([][]tea.Msg, len(batch))
	var wg sync.WaitGroup
	for i, c := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = collect(c, deadline, late)
		}()
	}
	wg.Wait()
	var out []tea.Msg
	for _, r := range results {
		out = append(out, r...)
	}
	return out
}

func (h *harness) handle(msg tea.Msg) {
	h.t.Helper()
	switch msg := msg.(type) {
	case nil:
	case tea.QuitMsg:
		h.quit = true
	case tea.RawMsg:
		h.raw = append(h.raw, fmt.Sprint(msg.Msg))
	default:
		if strings.HasPrefix(fmt.Sprintf("%T", msg), "tea.") || strings.Contains(fmt.Sprintf("%T", msg), "cursor.") {
			return // the program's own messages (background colour, blinks)
		}
		h.send(msg)
	}
}

// key sends a key press: "a", "enter", "ctrl+c", "space".
func (h *harness) key(names ...string) {
	h.t.Helper()
	for _, n := range names {
		h.send(keyPress(n))
	}
}

// typeText sends each rune as a key press.
func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, k := range runes(s) {
		h.send(k)
	}
}

func keyPress(name string) tea.KeyPressMsg {
	switch name {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	}
	if c, ok := strings.CutPrefix(name, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: rune(c[0]), Mod: tea.ModCtrl}
	}
	r := []rune(name)[0]
	if r >= 'A' && r <= 'Z' {
		return tea.KeyPressMsg{Code: r + 32, ShiftedCode: r, Text: name, Mod: tea.ModShift}
	}
	return tea.KeyPressMsg{Code: r, Text: name}
}

// entries delivers transcript entries for slug as one batch.
func (h *harness) entries(slug string, es ...live.Entry) {
	h.t.Helper()
	h.send(feed.BatchMsg{Entries: map[string][]live.Entry{slug: es}, Order: []string{slug}})
}

// change delivers a runs root change.
func (h *harness) change(rs ...backend.Run) {
	h.t.Helper()
	var cs []backend.Change
	for _, r := range rs {
		cs = append(cs, backend.Change{Run: r})
	}
	h.send(feed.BatchMsg{Changes: cs})
}

func (h *harness) screen() string { return h.m.Render() }

func (h *harness) contains(want string) {
	h.t.Helper()
	if got := h.screen(); !strings.Contains(plain(got), want) {
		h.t.Fatalf("screen lacks %q:\n%s", want, plain(got))
	}
}

func ip(n int) *int { return &n }

// at is t as run.json records it.
func at(t time.Time) string { return transcript.FormatTime(t) }

// sampleRuns is a root with one run in every state.
func sampleRuns() []backend.Run {
	secs := 42.5
	return []backend.Run{
		{
			RunRecord: transcript.RunRecord{
				Slug: "fix-total-0101", Repo: "/src/shop", Task: "total() returns only the tax; fix it",
				Model: "qwen/qwen3-coder", Sandbox: "docker", Status: transcript.StatusRunning, Started: at(t0.Add(-3 * time.Minute)),
			},
			Transcript: "/r/fix-total-0101/transcript.jsonl", Alive: true,
		},
		{
			RunRecord: transcript.RunRecord{
				Slug: "add-export-0102", Repo: "/src/cli", Task: "make export accept --json",
				Model: "qwen/qwen3-coder", Sandbox: "none", Status: transcript.StatusRunning, Started: at(t0.Add(-90 * time.Second)),
			},
			Transcript: "/r/add-export-0102/transcript.jsonl", Alive: true,
		},
		{
			RunRecord: transcript.RunRecord{
				Slug: "rename-api-0103", Repo: "/src/shop", Task: "rename Invoice.sum to Invoice.total",
				Model: "devstral", Sandbox: "docker", Status: transcript.StatusCompleted, Started: at(t0.Add(-20 * time.Minute)), Ended: at(t0.Add(-15 * time.Minute)),
				Turns: ip(9), Usage: &transcript.Usage{PromptTokens: 40000, CompletionTokens: 2100}, Verify: &transcript.VerifyResult{Passed: true},
				Worktree: "/src/shop/.worktrees/dw-rename-api-0103",
			},
			Transcript: "/r/rename-api-0103/transcript.jsonl",
		},
		{
			RunRecord: transcript.RunRecord{
				Slug: "docs-typo-0104", Repo: "/src/docs", Task: "fix the typos in README",
				Model: "devstral", Sandbox: "docker", Status: transcript.StatusMaxTurns, Started: at(t0.Add(-40 * time.Minute)), Ended: at(t0.Add(-30 * time.Minute)), Turns: ip(40),
			},
			Transcript: "/r/docs-typo-0104/transcript.jsonl",
		},
		{
			RunRecord: transcript.RunRecord{
				Slug: "old-accepted-0001", Repo: "/src/shop", Task: "add a CHANGELOG",
				Model: "qwen/qwen3-coder", Sandbox: "docker", Status: transcript.StatusCompleted, Started: at(t0.Add(-48 * time.Hour)), Ended: at(t0.Add(-47 * time.Hour)),
				Turns: ip(5), Verdict: "accept", ReviewSeconds: &secs,
			},
			Transcript: "/r/old-accepted-0001/transcript.jsonl",
		},
		{
			RunRecord: transcript.RunRecord{
				Slug: "crashed-0099", Repo: "/src/cli", Task: "speed up the parser",
				Model: "devstral", Sandbox: "none", Status: transcript.StatusRunning, Started: at(t0.Add(-5 * time.Hour)),
			},
			Transcript: "/r/crashed-0099/transcript.jsonl", Alive: false,
		},
	}
}

// liveEntries is a short live transcript.
func liveEntries(task string) []live.Entry {
	return []live.Entry{
		{
			Kind: live.KindRunStart, Line: 1, TS: t0.Add(-3 * time.Minute), Text: task,
			Start: &live.Start{Task: task, Model: "qwen/qwen3-coder", Repo: "/src/shop", Sandbox: "docker", MaxTurns: 40, ContextWindow: 32768},
		},
		{Kind: live.KindModelRequest, Line: 2, TS: t0.Add(-170 * time.Second), Turn: 1, EstPrompt: 1200},
		{
			Kind: live.KindAssistant, Line: 3, TS: t0.Add(-160 * time.Second), Text: "Let me look around first.",
			Calls: []live.Call{{Name: "list_dir", Args: `{"path":"."}`}}, Usage: transcript.Usage{PromptTokens: 1300, CompletionTokens: 40},
		},
		{Kind: live.KindToolResult, Line: 4, TS: t0.Add(-159 * time.Second), Tool: "list_dir", Args: `{"path":"."}`, Text: "invoice.py\ntest_invoice.py"},
		{Kind: live.KindModelRequest, Line: 5, TS: t0.Add(-12 * time.Second), Turn: 2, EstPrompt: 14000},
	}
}

// typeAhead delivers keys the way a fast typist's reach a busy program:
// each before any command of the ones before it has run. The commands are
// run afterwards, in order.
func (h *harness) typeAhead(keys ...tea.KeyPressMsg) {
	h.t.Helper()
	var cmds []tea.Cmd
	for _, k := range keys {
		m, cmd := h.m.Update(k)
		h.m = m.(Model)
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		h.run(c)
	}
}

// runes is s as key presses, one a rune.
func runes(s string) []tea.KeyPressMsg {
	var out []tea.KeyPressMsg
	for _, r := range s {
		out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return out
}
