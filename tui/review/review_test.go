package review

import (
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/backend/fake"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

func press(m Model, names ...string) (Model, tea.Cmd) {
	var cmd tea.Cmd
	for _, n := range names {
		k := tea.KeyPressMsg{Code: []rune(n)[0], Text: n}
		switch n {
		case "enter":
			k = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			k = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "ctrl+d":
			k = tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
		case "ctrl+u":
			k = tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}
		case "down":
			k = tea.KeyPressMsg{Code: tea.KeyDown}
		case "end":
			k = tea.KeyPressMsg{Code: tea.KeyEnd}
		case "pgdown":
			k = tea.KeyPressMsg{Code: tea.KeyPgDown}
		case "right":
			k = tea.KeyPressMsg{Code: tea.KeyRight}
		}
		m, cmd = m.Update(k)
	}
	return m, cmd
}

// liveReview is the review of a run still going (a stop is its one
// action).
func liveReview(t *testing.T) (Model, *fake.Store) {
	t.Helper()
	run := backend.Run{RunRecord: transcript.RunRecord{Slug: "fix-total-0101", Task: "fix total()\nmore", Status: transcript.StatusRunning}, Alive: true}
	st := fake.New(run)
	km := keys.Default()
	m := New(theme.New(theme.Dark), &km, st, st, run, time.Now)
	m.SetSize(100, 30)
	m, _ = m.Update(LoadedMsg{Slug: run.Slug})
	return m, st
}

func TestStopInTheReviewAsksFirst(t *testing.T) {
	m, st := liveReview(t)
	m, cmd := press(m, "s")
	if m.Modal() != "confirm-stop" || cmd != nil {
		t.Fatalf("s: modal %q, cmd %v", m.Modal(), cmd)
	}
	if want := "Stop fix-total-0101 (fix total()) now? It ends interrupted; its worktree and transcript are kept."; m.ConfirmText() != want {
		t.Fatalf("question = %q, want %q", m.ConfirmText(), want)
	}
	m, cmd = press(m, "x", "a")
	if m.Modal() != "confirm-stop" || cmd != nil {
		t.Fatalf("another key answered: modal %q", m.Modal())
	}
	m, cmd = press(m, "n")
	if m.Modal() != "" || cmd != nil || m.Busy() != "" {
		t.Fatalf("n: modal %q, busy %q", m.Modal(), m.Busy())
	}
	m, _ = press(m, "s")
	m, cmd = press(m, "y")
	if cmd == nil || m.Busy() != "stop" {
		t.Fatalf("y: no stop (busy %q)", m.Busy())
	}
	msg := cmd()
	if d, ok := msg.(DoneMsg); !ok || d.Action != "stop" {
		t.Fatalf("stop Cmd returned %#v", msg)
	}
	if calls := st.Calls(); len(calls) != 1 || calls[0].Method != "Stop" || calls[0].Slug != "fix-total-0101" {
		t.Fatalf("calls = %+v", calls)
	}
}

func TestConfirmAnswers(t *testing.T) {
	km := keys.Default()
	c := NewConfirm(&km.Confirm)
	if c.Answer(tea.KeyPressMsg{Code: 'y', Text: "y"}) != Ignored {
		t.Fatal("a closed question took an answer")
	}
	for _, tc := range []struct {
		key  tea.KeyPressMsg
		want Answer
	}{
		{tea.KeyPressMsg{Code: 'y', Text: "y"}, Yes},
		{tea.KeyPressMsg{Code: tea.KeyEnter}, Yes},
		{tea.KeyPressMsg{Code: 'n', Text: "n"}, No},
		{tea.KeyPressMsg{Code: tea.KeyEscape}, No},
		{tea.KeyPressMsg{Code: 'Y', Text: "Y"}, Ignored},
		{tea.KeyPressMsg{Code: 'q', Text: "q"}, Ignored},
	} {
		c.Ask("Stop it now?", "stop")
		if got := c.Answer(tc.key); got != tc.want || c.Open() != (tc.want == Ignored) {
			t.Errorf("%s: answer %v (open %v), want %v", tc.key, got, c.Open(), tc.want)
		}
	}
}

func TestWrapKeepsWordsWhole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want []string
	}{
		{"Stop add-discount-0101 (a task) now", 20, []string{"Stop", "add-discount-0101 (a", "task) now"}},
		{"ab abcdefghij", 4, []string{"ab", "abcd", "efgh", "ij"}},
		{"one line", 40, []string{"one line"}},
	} {
		if got := wrap(tc.in, tc.w); !slices.Equal(got, tc.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
	}
}
