package pane

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/runinfo"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// The focused pane of a live run shows the end of the reply being
// streamed, inert; other panes and ended runs do not.
func TestFocusedPaneShowsTheStreamTail(t *testing.T) {
	s := theme.New(theme.Dark)
	st := &live.State{}
	st.Apply(live.Entry{Kind: live.KindModelRequest, Turn: 1})
	st.Apply(live.Entry{Kind: live.KindProgress, Tokens: 40, Text: "so the fix is to change\nthe slice \x1b]0;title\x07end"})
	run := backend.Run{RunRecord: transcript.RunRecord{Status: transcript.StatusRunning, Task: "fix it"}, Alive: true}
	it := runinfo.Item{Key: "r", Run: run, State: st}
	now := time.Now()

	text := func(focused bool, r backend.Run) string {
		it := it
		it.Run = r
		return ansi.Strip(strings.Join(Lines(s, it, 60, 14, now, 0, focused), "\n"))
	}
	focused := text(true, run)
	if !strings.Contains(focused, "the slice ␛]0;title␇end") || !strings.Contains(focused, "› …so the fix is to change") {
		t.Fatalf("the focused pane shows no stream tail:\n%s", focused)
	}
	if strings.Contains(focused, "\x1b]") || strings.Contains(focused, "\x07") {
		t.Fatalf("the tail reached the terminal raw:\n%q", focused)
	}
	if other := text(false, run); strings.Contains(other, "the slice") {
		t.Fatalf("an unfocused pane shows the tail:\n%s", other)
	}
	ended := run
	ended.Status = transcript.StatusCompleted
	if done := text(true, ended); strings.Contains(done, "the slice") {
		t.Fatalf("an ended run shows a tail:\n%s", done)
	}
	// Only the last two lines of a long tail, ending where the model is.
	long := StreamTail(s, strings.Repeat("word ", 100)+"LAST", 30, 2)
	if len(long) != 2 || !strings.HasSuffix(ansi.Strip(long[1]), "LAST") {
		t.Fatalf("long tail %q", long)
	}
}
