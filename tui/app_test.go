package tui

import (
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/backend/fake"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/live"
)

const samplePatch = `diff --git a/invoice.py b/invoice.py
index 1111111..2222222 100644
--- a/invoice.py
+++ b/invoice.py
@@ -7,4 +7,5 @@ def subtotal(lines):
 
 def total(lines, tax_rate):
-    return round(subtotal(lines) * tax_rate, 2)
+    net = subtotal(lines)
+    return round(net + net * tax_rate, 2)
diff --git a/test_invoice.py b/test_invoice.py
index 3333333..4444444 100644
--- a/test_invoice.py
+++ b/test_invoice.py
@@ -6,3 +6,6 @@ class TestInvoice(unittest.TestCase):
     def test_subtotal(self):
         self.assertEqual(subtotal([(2, 1.50), (1, 4.00)]), 7.00)
+
+    def test_total_adds_tax(self):
+        self.assertEqual(total([(2, 1.50), (1, 4.00)], 0.10), 7.70)
`

func newSample(t *testing.T, w, h int, opts ...harnessOpt) *harness {
	t.Helper()
	st := fake.New(sampleRuns()...)
	st.SetReview("rename-api-0103", backend.Review{
		Patch: samplePatch, Summary: "Renamed sum to total everywhere.", MergeReady: true, MergeInto: "main", MergeCheckedOutAt: "/src/shop",
		Verify:   &backend.Verify{Command: "python3 -m unittest -q", ExitCode: ip(0), Passed: true},
		Warnings: []backend.Warning{{Kind: backend.WarnBaseMoved, Text: "main moved 2 commits since the run began"}},
	})
	st.SetReview("docs-typo-0104", backend.Review{Patch: samplePatch, MergeBlockers: []string{"merging would conflict in README.md"}})
	bench := sampleBench(t)
	return newHarness(t, w, h, st, append([]harnessOpt{func(o *Options) { o.BenchDir = bench }}, opts...)...)
}

func TestLoadGroupsRunsAndFollowsLiveOnes(t *testing.T) {
	h := newSample(t, 120, 40)
	if !h.m.loaded {
		t.Fatal("runs not loaded")
	}
	var order []string
	for _, it := range h.m.list.Items() {
		order = append(order, it.Key)
	}
	want := []string{"rename-api-0103", "docs-typo-0104", "add-export-0102", "fix-total-0101", "crashed-0099", "old-accepted-0001"}
	if !slices.Equal(order, want) {
		t.Fatalf("list order = %v, want %v", order, want)
	}
	// Live runs get panes first (oldest start first); the free ones show
	// the newest runs waiting for review.
	if h.m.panes[0] == "" || h.m.panes[1] == "" {
		t.Fatalf("panes = %v", h.m.panes)
	}
	for _, live := range []string{"fix-total-0101", "add-export-0102"} {
		if !slices.Contains(h.m.panes[:], live) {
			t.Fatalf("live run %s has no pane: %v", live, h.m.panes)
		}
		if !slices.Contains(h.feed.follows, live) {
			t.Fatalf("live run %s not followed: %v", live, h.feed.follows)
		}
	}
	if slices.Contains(h.feed.follows, "old-accepted-0001") {
		t.Fatal("a judged run that is on no pane is followed")
	}
	if h.feed.watched != 1 {
		t.Fatalf("runs root watched %d times", h.feed.watched)
	}
	h.contains("needs review (2)")
	h.contains("dead (1)")
	h.contains("2 running")
}

func TestPaneShowsWaitingStreamingAndContextFill(t *testing.T) {
	h := newSample(t, 120, 40)
	h.entries("fix-total-0101", liveEntries("total() returns only the tax; fix it")...)
	h.contains("waiting for model 12s")
	h.contains("ctx 43%") // 14000 of 32768
	h.contains("turn 2/40")
	h.entries("fix-total-0101", live.Entry{Kind: live.KindProgress, Turn: 2, Tokens: 340, TokensPerS: 25.1})
	h.contains("streaming 340 tok · 25.1 tok/s")
	h.entries("fix-total-0101", live.Entry{Kind: live.KindAssistant, Text: "Found it.", Calls: []live.Call{{Name: "bash", Args: `{"command":"python3 -m unittest -q"}`}}})
	h.contains("bash: python3 -m unittest -q")
}

func TestRunEndingNotifiesWithBellAndOSC9(t *testing.T) {
	h := newSample(t, 120, 40)
	r, _ := h.store.Run("fix-total-0101")
	r.Status, r.Alive, r.Ended = transcript.StatusCompleted, false, at(t0)
	h.change(r)
	if len(h.raw) != 2 || h.raw[0] != "\a" || !strings.HasPrefix(h.raw[1], "\x1b]9;") {
		t.Fatalf("notifications = %q", h.raw)
	}
	if !strings.Contains(h.m.status, "needs review") {
		t.Fatalf("status = %q", h.m.status)
	}
	h.contains("needs review (3)")
}

func TestNotificationsOff(t *testing.T) {
	h := newSample(t, 120, 40, func(o *Options) { o.Notify = Notify{} })
	r, _ := h.store.Run("fix-total-0101")
	r.Status, r.Alive = transcript.StatusCompleted, false
	h.change(r)
	if len(h.raw) != 0 {
		t.Fatalf("notified although off: %q", h.raw)
	}
}

func TestRunsStartedElsewhereAppear(t *testing.T) {
	h := newSample(t, 120, 40)
	h.change(backend.Run{
		RunRecord: transcript.RunRecord{
			Slug: "orchestrated-0200", Repo: "/src/api", Task: "from an orchestrator", Status: transcript.StatusRunning, Started: at(t0),
		},
		Transcript: "/r/o/transcript.jsonl", Alive: true,
	})
	h.contains("from an orchestrator")
	if !slices.Contains(h.feed.follows, "orchestrated-0200") {
		t.Fatal("a run started elsewhere is not followed")
	}
}

// openReview selects slug in the list and presses enter.
func (h *harness) openReview(slug string) {
	h.t.Helper()
	if !h.m.list.SelectKey(slug) {
		h.t.Fatalf("%s not in the list", slug)
	}
	// Loading and colouring the diff are Cmds with no timer in them: wait
	// for them however busy the machine is.
	h.wait = 10 * time.Second
	h.key("enter")
	h.wait = 0
	if h.m.screen != screenReview || h.m.review == nil || !h.m.review.Loaded() {
		h.t.Fatalf("review of %s not open (screen %s)", slug, h.m.screen)
	}
}

func lastCall(t *testing.T, st *fake.Store, method string) fake.Call {
	t.Helper()
	calls := st.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Method == method {
			return calls[i]
		}
	}
	t.Fatalf("no %s call in %+v", method, calls)
	return fake.Call{}
}

func TestAcceptRecordsReviewSeconds(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.contains("base moved")
	h.contains("verify")
	h.clock = h.clock.Add(7500 * time.Millisecond)
	h.key("a")
	c := lastCall(t, h.store, "Accept")
	if c.Slug != "rename-api-0103" || c.Files != nil || c.ReviewSeconds != 7.5 {
		t.Fatalf("accept call = %+v", c)
	}
	if h.m.screen != screenDashboard {
		t.Fatalf("screen after accept = %s", h.m.screen)
	}
	if e := h.m.runs["rename-api-0103"]; e.run.Verdict != transcript.VerdictAccept {
		t.Fatalf("verdict not shown: %+v", e.run)
	}
}

func TestAcceptSelectedFiles(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("space") // leave invoice.py out
	h.key("a")
	c := lastCall(t, h.store, "Accept")
	if !slices.Equal(c.Files, []string{"test_invoice.py"}) {
		t.Fatalf("files = %v", c.Files)
	}
}

func TestAcceptWithEveryFileLeftOutRefuses(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("space", "l", "space", "a")
	for _, c := range h.store.Calls() {
		if c.Method == "Accept" {
			t.Fatal("accepted an empty selection")
		}
	}
	if h.m.review.Modal() != "alert" {
		t.Fatalf("modal = %q", h.m.review.Modal())
	}
}

func TestRejectRecordsVerdict(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.clock = h.clock.Add(3 * time.Second)
	h.key("r")
	c := lastCall(t, h.store, "Verdict")
	if c.Verdict != transcript.VerdictReject || c.ReviewSeconds != 3 {
		t.Fatalf("verdict call = %+v", c)
	}
}

func TestRejectWithFeedbackResumes(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.clock = h.clock.Add(2 * time.Second)
	h.key("R")
	if h.m.review.Modal() != "feedback" {
		t.Fatalf("modal = %q", h.m.review.Modal())
	}
	h.clock = h.clock.Add(30 * time.Second) // typing is not review time
	h.typeText("keep the old name as an alias")
	h.key("ctrl+s", "y")
	v := lastCall(t, h.store, "Verdict")
	if v.Verdict != transcript.VerdictReject || v.Note != "keep the old name as an alias" || v.ReviewSeconds != 2 {
		t.Fatalf("verdict = %+v", v)
	}
	r := lastCall(t, h.store, "Resume")
	if r.Slug != "rename-api-0103" || r.Note != "keep the old name as an alias" {
		t.Fatalf("resume = %+v", r)
	}
	if !strings.Contains(h.m.status, "resumed as") {
		t.Fatalf("status = %q", h.m.status)
	}
}

func TestCleanConfirmsWithParkedRefs(t *testing.T) {
	h := newSample(t, 120, 40)
	h.store.SetPlan("rename-api-0103", backend.CleanPlan{
		Actions: []string{"remove worktree /src/shop/.worktrees/dw-rename-api-0103"},
		Parked:  []string{"refs/dirtywork/parked/rename-api-0103"},
	})
	h.openReview("rename-api-0103")
	h.clock = h.clock.Add(4 * time.Second)
	h.key("c")
	if h.m.review.Modal() != "confirm-clean" {
		t.Fatalf("modal = %q", h.m.review.Modal())
	}
	h.contains("refs/dirtywork/parked/rename-api-0103")
	h.clock = h.clock.Add(10 * time.Second)
	h.key("y")
	c := lastCall(t, h.store, "Clean")
	if c.ReviewSeconds != 4 {
		t.Fatalf("clean = %+v", c)
	}
}

func TestCleanCancelledDoesNothing(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("c", "n")
	for _, c := range h.store.Calls() {
		if c.Method == "Clean" || c.Method == "Verdict" {
			t.Fatalf("cancelled clean called %s", c.Method)
		}
	}
}

func TestMergeRefusedShowsReasons(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("docs-typo-0104")
	h.key("m")
	if h.m.review.Modal() != "alert" || !strings.Contains(h.m.review.AlertText(), "conflict in README.md") {
		t.Fatalf("modal %q: %q", h.m.review.Modal(), h.m.review.AlertText())
	}
	for _, c := range h.store.Calls() {
		if c.Method == "Merge" {
			t.Fatal("merged a blocked run")
		}
	}
}

func TestMergeWhenReady(t *testing.T) {
	h := newSample(t, 120, 40)
	h.openReview("rename-api-0103")
	h.key("m", "y")
	lastCall(t, h.store, "Merge")
}

func TestNextReviewIsOldestFirst(t *testing.T) {
	h := newSample(t, 120, 40)
	h.key("n")
	if h.m.review == nil || h.m.review.Slug() != "docs-typo-0104" {
		t.Fatalf("next review opened %v", h.m.review)
	}
	h.key("n")
	if h.m.review == nil || h.m.review.Slug() != "rename-api-0103" {
		t.Fatalf("second next opened %v", h.m.review)
	}
}

func TestQueueWaitsForAFreeSlot(t *testing.T) {
	h := newSample(t, 120, 40, func(o *Options) { o.MaxParallel = 2 })
	h.key("L")
	if h.m.screen != screenLaunch {
		t.Fatalf("screen = %s", h.m.screen)
	}
	h.m.form.Fill(backend.LaunchSpec{Repo: "/src/shop", Task: "add a discount", Model: "m", Sandbox: "docker", MaxTurns: 20})
	h.key("ctrl+s")
	if len(h.m.queue) != 1 {
		t.Fatalf("queue = %d", len(h.m.queue))
	}
	for _, c := range h.store.Calls() {
		if c.Method == "Launch" {
			t.Fatal("launched with no free slot")
		}
	}
	h.contains("queued (1)")
	// A slot frees: the queued launch starts.
	r, _ := h.store.Run("fix-total-0101")
	r.Status, r.Alive = transcript.StatusCompleted, false
	h.change(r)
	c := lastCall(t, h.store, "Launch")
	if c.Spec.Task != "add a discount" || c.Spec.MaxTurns != 20 {
		t.Fatalf("launch = %+v", c.Spec)
	}
	if len(h.m.queue) != 0 {
		t.Fatalf("queue after launch = %d", len(h.m.queue))
	}
	if e := h.m.runs["launched-1"]; e == nil || !e.run.Live() {
		t.Fatal("the launched run is not shown as running")
	}
	if h.m.liveCount() != 2 {
		t.Fatalf("live = %d", h.m.liveCount())
	}
}

func TestLaunchRefusedShowsRefusalAndHint(t *testing.T) {
	h := newSample(t, 120, 40)
	h.store.Err["Launch"] = &backend.RefusedError{Msg: "not a git repository: /tmp/x", Hint: "give --repo a git work tree"}
	h.key("L")
	h.m.form.Fill(backend.LaunchSpec{Repo: "/tmp/x", Task: "t", Sandbox: "docker", MaxTurns: 5})
	h.key("ctrl+s")
	if h.m.screen != screenLaunch {
		t.Fatalf("screen = %s", h.m.screen)
	}
	h.contains("refused: not a git repository: /tmp/x")
	h.contains("hint: give --repo a git work tree")
}

func TestSlowStoreNeverBlocksUpdate(t *testing.T) {
	h := newSample(t, 120, 40)
	// The store answers nothing until the test is over: an Update that
	// called it would never return.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	h.store.Hold = hold
	h.m.list.SelectKey("rename-api-0103")
	update := func(m Model, k string) (Model, tea.Cmd) {
		t.Helper()
		type result struct {
			m   tea.Model
			cmd tea.Cmd
		}
		done := make(chan result, 1)
		go func() {
			m2, cmd := m.Update(keyPress(k))
			done <- result{m2, cmd}
		}()
		select {
		case r := <-done:
			return r.m.(Model), r.cmd
		case <-time.After(30 * time.Second):
			t.Fatalf("key %q: Update waited on the store", k)
			return m, nil
		}
	}
	mm, cmd := update(h.m, "enter")
	if cmd == nil {
		t.Fatal("enter asked for no load")
	}
	// While the review loads, keys still answer.
	for _, k := range []string{"esc", "j", "k", "/", "x", "esc"} {
		mm, _ = update(mm, k)
	}
}

var escapeRE = regexp.MustCompile("\x1b(\\[[0-9;:]*m)?")

// assertInert fails if the screen holds any escape sequence but SGR
// (colour and attributes), or any other control character but newline.
func assertInert(t *testing.T, screen string) {
	t.Helper()
	for _, m := range escapeRE.FindAllString(screen, -1) {
		if m == "\x1b" {
			t.Fatalf("a raw ESC reached the screen:\n%q", screen)
		}
	}
	rest := escapeRE.ReplaceAllString(screen, "")
	for _, r := range rest {
		if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			t.Fatalf("control character %U reached the screen:\n%q", r, rest)
		}
	}
}

const hostile = "pwned\x1b]52;c;ZWNobyBoaQ==\x07 \x1b[2J\x1b]0;title\x07 \x1b]8;;http://evil\x07link\x1b]8;;\x07 \u009b31m \r\x1b[1A\x08 bell\x07 \u202eevil"

func TestHostileTranscriptRendersInert(t *testing.T) {
	h := newSample(t, 120, 40)
	es := liveEntries(hostile)
	es = append(es,
		live.Entry{Kind: live.KindAssistant, Text: hostile, Calls: []live.Call{{Name: "bash", Args: `{"command":"echo \u001b[31m"}`}}},
		live.Entry{Kind: live.KindToolResult, Tool: "bash\x1b[5m", Args: `{"command":"x"}`, Text: hostile},
		live.Entry{Kind: live.KindGuardrail, Tool: "bash", Args: hostile, Text: "BLOCKED: " + hostile},
	)
	h.entries("fix-total-0101", es...)
	assertInert(t, h.screen())
	if !strings.Contains(plain(h.screen()), "␛") {
		t.Fatal("escape characters are not shown visibly")
	}
	h.m.list.SelectKey("fix-total-0101")
	h.key("t")
	assertInert(t, h.screen())
	h.key("h", "enter")
	assertInert(t, h.screen())
	// A hostile file name and diff lines in a review.
	h.key("esc", "esc")
	h.store.SetReview("rename-api-0103", backend.Review{Patch: "diff --git a/x\x1b[2J b/x\x1b[2J\n--- a/x\x1b[2J\n+++ b/x\x1b[2J\n@@ -1 +1 @@\n-" + hostile + "\n+" + hostile + "\n", Summary: hostile})
	h.openReview("rename-api-0103")
	assertInert(t, h.screen())
}

func TestFilterByRepo(t *testing.T) {
	h := newSample(t, 120, 40)
	h.key("/")
	h.typeText("repo:cli")
	h.key("enter")
	if n := h.m.list.Len(); n != 2 {
		t.Fatalf("filter kept %d rows", n)
	}
	h.key("esc")
	if n := h.m.list.Len(); n != 6 {
		t.Fatalf("esc kept %d rows", n)
	}
}

func TestFilterByStatusAndText(t *testing.T) {
	h := newSample(t, 120, 40)
	h.key("/")
	h.typeText("status:dead")
	if n := h.m.list.Len(); n != 1 {
		t.Fatalf("status:dead kept %d", n)
	}
	h.key("esc", "/")
	h.typeText("typos")
	if it, ok := h.m.list.Selected(); !ok || it.Key != "docs-typo-0104" || h.m.list.Len() != 1 {
		t.Fatalf("text filter: %d rows", h.m.list.Len())
	}
}

func TestReboundKeysWorkAndShowInHelp(t *testing.T) {
	km := keys.Default()
	if err := km.Rebind(map[string][]string{"review.accept": {"y"}}); err != nil {
		t.Fatal(err)
	}
	h := newSample(t, 120, 40, func(o *Options) { o.Keys = km })
	h.openReview("rename-api-0103")
	h.contains("y accept")
	h.key("a")
	for _, c := range h.store.Calls() {
		if c.Method == "Accept" {
			t.Fatal("the old key still accepts")
		}
	}
	h.key("y")
	lastCall(t, h.store, "Accept")
}

func TestRebindRefusesCollisionsAndUnknownNames(t *testing.T) {
	km := keys.Default()
	if err := km.Rebind(map[string][]string{"review.accept": {"r"}}); err == nil || !strings.Contains(err.Error(), "review.reject") {
		t.Fatalf("collision: %v", err)
	}
	if err := km.Rebind(map[string][]string{"review.nope": {"z"}}); err == nil {
		t.Fatal("unknown name accepted")
	}
	if km.Review.Accept.Keys()[0] != "a" {
		t.Fatal("a failed rebind changed the map")
	}
}

func TestTranscriptStepsSearchesAndFollows(t *testing.T) {
	h := newSample(t, 120, 40)
	h.entries("fix-total-0101", liveEntries("t")...)
	h.m.list.SelectKey("fix-total-0101")
	h.key("t")
	tv := h.m.transcript
	if tv == nil || !tv.Following() || tv.Cursor() != 4 {
		t.Fatalf("transcript: %+v", tv)
	}
	h.key("h", "h")
	if h.m.transcript.Following() || h.m.transcript.Cursor() != 2 {
		t.Fatalf("after h h: cursor %d", h.m.transcript.Cursor())
	}
	h.entries("fix-total-0101", live.Entry{Kind: live.KindAssistant, Text: "more"})
	if h.m.transcript.Cursor() != 2 {
		t.Fatal("a new event moved the cursor while not following")
	}
	h.key("/")
	h.typeText("test_invoice")
	h.key("enter")
	if h.m.transcript.Cursor() != 3 {
		t.Fatalf("search landed on %d", h.m.transcript.Cursor())
	}
	h.key("F")
	if !h.m.transcript.Following() || h.m.transcript.Cursor() != 5 {
		t.Fatalf("follow: cursor %d", h.m.transcript.Cursor())
	}
	h.key("esc")
	if h.m.screen != screenDashboard {
		t.Fatalf("screen = %s", h.m.screen)
	}
}

func TestTranscriptShowsAnEditsOwnChange(t *testing.T) {
	h := newSample(t, 120, 40)
	es := append(liveEntries("t"),
		live.Entry{Kind: live.KindAssistant, Calls: []live.Call{{Name: "edit_file", Args: `{"path":"invoice.py","old_string":"return a * b","new_string":"return a + a * b"}`}}},
		live.Entry{Kind: live.KindToolResult, Tool: "edit_file", Args: `{"path":"invoice.py","old_string":"return a * b","new_string":"return a + a * b"}`, Text: "edited invoice.py"})
	h.entries("fix-total-0101", es...)
	h.m.list.SelectKey("fix-total-0101")
	h.key("t")
	h.contains("- return a * b")
	h.contains("+ return a + a * b")
}

func TestQuitWithQueuedLaunchesAsksTwice(t *testing.T) {
	h := newSample(t, 120, 40, func(o *Options) { o.MaxParallel = 2 })
	h.m.enqueue(backend.LaunchSpec{Task: "waits", Repo: "/r"})
	h.key("q")
	if h.quit {
		t.Fatal("quit at once with a queued launch")
	}
	h.key("q")
	if !h.quit {
		t.Fatal("second q did not quit")
	}
}

func TestStopAsksTheStore(t *testing.T) {
	h := newSample(t, 120, 40)
	h.m.list.SelectKey("fix-total-0101")
	h.key("s", "y")
	if c := lastCall(t, h.store, "Stop"); c.Slug != "fix-total-0101" {
		t.Fatalf("stop = %+v", c)
	}
	h.m.list.SelectKey("rename-api-0103")
	h.key("s")
	if n := len(h.store.Calls()); h.store.Calls()[n-1].Method == "Stop" && h.store.Calls()[n-1].Slug == "rename-api-0103" {
		t.Fatal("stopped a finished run")
	}
}

func TestStatsView(t *testing.T) {
	h := newSample(t, 120, 40)
	h.key("S")
	h.contains("Review statistics")
	h.contains("overall")
	h.key("g")
	h.contains("by repository")
	h.key("esc")
	if h.m.screen != screenDashboard {
		t.Fatal("esc did not leave the stats")
	}
}

func TestStoreErrorShowsInStatusBar(t *testing.T) {
	st := fake.New()
	st.Err["List"] = errors.New("runs root unreadable")
	h := newHarness(t, 100, 30, st)
	h.contains("cannot list the runs: runs root unreadable")
}

func TestZoomAndFocus(t *testing.T) {
	h := newSample(t, 120, 40)
	h.key("2")
	if h.m.focusPane != 1 {
		t.Fatalf("focus = %d", h.m.focusPane)
	}
	h.key("z")
	if !h.m.zoom {
		t.Fatal("not zoomed")
	}
	if _, panes, showList := h.m.dashboardRects(); showList || panes[1].w != 120 {
		t.Fatalf("zoomed layout: %+v", panes)
	}
	h.key("esc")
	if h.m.zoom {
		t.Fatal("esc did not unzoom")
	}
	h.key("esc", "z") // the list zoomed shows every column
	if list, _, showList := h.m.dashboardRects(); !showList || list.w != 120 {
		t.Fatalf("list zoom: %+v", list)
	}
	h.send(teaSize(200, 50))
	h.contains("qwen/qwen3-coder")
	h.contains("its process is gone") // the activity column
}

func TestQuickRunStartedElsewhereIsAnnounced(t *testing.T) {
	h := newSample(t, 120, 40)
	h.change(backend.Run{RunRecord: transcript.RunRecord{
		Slug: "quick-0300", Repo: "/src/api", Task: "quick", Status: transcript.StatusCompleted,
		Started: at(t0), Ended: at(t0.Add(time.Second)), Turns: ip(2),
	}})
	if len(h.raw) == 0 {
		t.Fatal("a run that ended unseen was not announced")
	}
	h.raw = nil
	h.change(backend.Run{RunRecord: transcript.RunRecord{
		Slug: "old-0301", Status: transcript.StatusCompleted, Started: at(t0.Add(-time.Hour)), Ended: at(t0.Add(-time.Minute)),
	}})
	if len(h.raw) != 0 {
		t.Fatalf("a run that ended before mission control started was announced: %q", h.raw)
	}
}

func TestTranscriptReadsATrimmedEntryWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "transcript.jsonl")
	w, err := transcript.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("line of output\n", 300) + "THE END OF IT"
	for _, ev := range []transcript.Event{transcript.RunStart{Task: "t"}, transcript.ToolResult{Tool: "bash", Args: "{}", Result: long}} {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := fake.New(backend.Run{
		RunRecord:  transcript.RunRecord{Slug: "big-0400", Status: transcript.StatusCompleted, Started: at(t0), Ended: at(t0), Turns: ip(1)},
		Transcript: path,
	})
	h := newHarness(t, 120, 40, st)
	h.m.list.SelectKey("big-0400")
	h.key("t")
	trimmed := live.Entry{Kind: live.KindToolResult, Line: 2, Tool: "bash", Args: "{}", Text: long[:160], Trimmed: true}
	h.entries("big-0400", live.Entry{Kind: live.KindReset}, live.Entry{Kind: live.KindRunStart, Line: 1, Text: "t"}, trimmed)
	h.key("enter") // expand: the whole result, read back from the file
	for range 20 {
		h.key("ctrl+d")
	}
	h.contains("THE END OF IT")
}

// TestKeysTypedAheadReachTheNextScreen: a submit, cancel or close takes
// effect before the next key is read, so keys typed right after it are not
// lost in the closed screen and never reach the dashboard's run keys (s
// stops a run, x drops a queued launch).
func TestKeysTypedAheadReachTheNextScreen(t *testing.T) {
	h := newSample(t, 120, 40, func(o *Options) { o.MaxParallel = 2; o.Launch.Repo = "/src/shop" })
	h.key("L")
	h.typeText("fifth")
	// ctrl+s, then at once L and a second task.
	h.typeAhead(append([]tea.KeyPressMsg{keyPress("ctrl+s"), keyPress("L")}, runes("sixth: fix total")...)...)
	if h.m.screen != screenLaunch || len(h.m.queue) != 1 {
		t.Fatalf("after ctrl+s and L: screen %s, %d queued", h.m.screen, len(h.m.queue))
	}
	h.key("ctrl+s")
	if len(h.m.queue) != 2 {
		t.Fatalf("queue = %d, want 2 (screen %s)", len(h.m.queue), h.m.screen)
	}
	if got := h.m.queue[1].Spec.Task; got != "sixth: fix total" {
		t.Fatalf("second queued task = %q", got)
	}
	if h.m.screen != screenDashboard {
		t.Fatalf("screen = %s", h.m.screen)
	}
	for _, c := range h.store.Calls() {
		if c.Method == "Stop" {
			t.Fatal("a key typed into the form stopped a run")
		}
	}

	// esc out of the form, then L at once: a fresh form, not the dashboard.
	h.key("L")
	h.typeAhead(keyPress("esc"), keyPress("L"))
	if h.m.screen != screenLaunch {
		t.Fatalf("after esc and L the screen is %s", h.m.screen)
	}
	h.key("esc")

	// The transcript's esc, then L at once: the launch form (L means
	// nothing in the transcript).
	h.m.list.SelectKey("fix-total-0101")
	h.key("t")
	if h.m.screen != screenTranscript {
		t.Fatalf("t opened %s", h.m.screen)
	}
	h.typeAhead(keyPress("esc"), keyPress("L"))
	if h.m.screen != screenLaunch {
		t.Fatalf("after the transcript's esc and L the screen is %s", h.m.screen)
	}
}
