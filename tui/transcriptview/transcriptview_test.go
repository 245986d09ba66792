package transcriptview

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/live"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// newView is a 100×40 transcript of n assistant events, every tenth
// saying "needle", following.
func newView(t *testing.T, n int) Model {
	t.Helper()
	st := &live.State{}
	for i := range n {
		text := fmt.Sprintf("event number %d", i+1)
		if (i+1)%10 == 0 {
			text += " needle"
		}
		st.Entries = append(st.Entries, live.Entry{Kind: live.KindAssistant, Line: i + 1, Text: text})
	}
	k := keys.Default()
	m := New(theme.New(theme.NoColor), &k.Transcript, "long-0001", "", st)
	m.SetSize(100, 40)
	return m
}

func press(t *testing.T, m Model, ks ...string) Model {
	t.Helper()
	for _, k := range ks {
		var msg tea.KeyPressMsg
		switch k {
		case "up":
			msg = tea.KeyPressMsg{Code: tea.KeyUp}
		case "down":
			msg = tea.KeyPressMsg{Code: tea.KeyDown}
		case "home":
			msg = tea.KeyPressMsg{Code: tea.KeyHome}
		case "end":
			msg = tea.KeyPressMsg{Code: tea.KeyEnd}
		case "pgdown":
			msg = tea.KeyPressMsg{Code: tea.KeyPgDown}
		case "pgup":
			msg = tea.KeyPressMsg{Code: tea.KeyPgUp}
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "ctrl+d":
			msg = tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
		case "ctrl+u":
			msg = tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}
		default:
			r := []rune(k)[0]
			msg = tea.KeyPressMsg{Code: r, Text: k}
		}
		if msg.String() != k {
			t.Fatalf("key %q reads as %q", k, msg.String())
		}
		m, _ = m.Update(msg)
	}
	return m
}

func search(t *testing.T, m Model, q string) Model {
	t.Helper()
	m = press(t, m, "/", "ctrl+u") // the box holds the last search
	for _, r := range q {
		m, _ = m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return press(t, m, "enter")
}

func title(m Model) string { return ansi.Strip(strings.SplitN(m.View(), "\n", 2)[0]) }

// TestMoveKeys: every key that moves through a list moves through the
// events, and the title's corner says where the cursor stands.
func TestMoveKeys(t *testing.T) {
	m := newView(t, 300)
	if m.Cursor() != 299 || !strings.HasSuffix(title(m), "300/300") {
		t.Fatalf("start: cursor %d, title %q", m.Cursor(), title(m))
	}
	page := m.listHeight()
	for _, c := range []struct {
		keys []string
		want int
	}{
		{[]string{"k"}, 298},
		{[]string{"up", "up"}, 296},
		{[]string{"j"}, 297},
		{[]string{"down"}, 298},
		{[]string{"h"}, 297},
		{[]string{"l"}, 298},
		{[]string{"g"}, 0},
		{[]string{"j", "j", "j"}, 3},
		{[]string{"G"}, 299},
		{[]string{"home"}, 0},
		{[]string{"end"}, 299},
		{[]string{"g", "ctrl+d"}, page / 2},
		{[]string{"ctrl+d", "ctrl+u"}, page / 2},
		{[]string{"pgdown"}, page/2 + page},
		{[]string{"pgup", "pgup"}, 0},
		{[]string{"k"}, 0},
		{[]string{"G", "j"}, 299},
	} {
		m = press(t, m, c.keys...)
		if m.Cursor() != c.want {
			t.Fatalf("after %v: cursor %d, want %d", c.keys, m.Cursor(), c.want)
		}
		want := fmt.Sprintf("%d/300", c.want+1)
		if got := title(m); !strings.HasSuffix(got, want) {
			t.Fatalf("after %v: title %q, want it to end in %s", c.keys, got, want)
		}
	}
	if m.Following() {
		t.Fatal("moving kept the view following")
	}
	m = press(t, m, "g", "F")
	if !m.Following() || m.Cursor() != 299 {
		t.Fatalf("F: following %v, cursor %d", m.Following(), m.Cursor())
	}
}

// TestPositionUsesThousands: a long transcript's corner reads 1,000/2,000.
func TestPositionUsesThousands(t *testing.T) {
	m := newView(t, 2000)
	m = press(t, m, "g")
	for range 999 {
		m = press(t, m, "j")
	}
	if got := title(m); !strings.HasSuffix(got, "1,000/2,000") {
		t.Fatalf("title %q", got)
	}
}

// TestExpandedScrollsTheEvent: expanded, the event fills the view, and
// the page keys scroll it rather than moving to another event.
func TestExpandedScrollsTheEvent(t *testing.T) {
	st := &live.State{Entries: []live.Entry{
		{Kind: live.KindRunStart, Line: 1, Text: "t"},
		{Kind: live.KindAssistant, Line: 2, Text: strings.Repeat("a line\n", 100) + "THE LAST LINE"},
	}}
	k := keys.Default()
	m := New(theme.New(theme.NoColor), &k.Transcript, "x", "", st)
	m.SetSize(80, 20)
	m = press(t, m, "enter")
	if strings.Contains(m.View(), "THE LAST LINE") {
		t.Fatal("the end shows before scrolling")
	}
	for range 10 {
		m = press(t, m, "pgdown")
	}
	if m.Cursor() != 1 || !strings.Contains(m.View(), "THE LAST LINE") {
		t.Fatalf("pgdown expanded: cursor %d\n%s", m.Cursor(), m.View())
	}
	for range 20 {
		m = press(t, m, "ctrl+u")
	}
	if strings.Contains(m.View(), "THE LAST LINE") || m.Cursor() != 1 {
		t.Fatal("ctrl+u did not scroll back")
	}
}

// TestExpandedEventMovesLikeAText: expanded, the event is what j/k, g/G
// and the page keys move through, stopping at its ends (one key back from
// past the end shows an earlier part at once), the title says which line
// is the last on screen, and h/l step to the other events.
func TestExpandedEventMovesLikeAText(t *testing.T) {
	st := &live.State{Entries: []live.Entry{
		{Kind: live.KindRunStart, Line: 1, Text: "t"},
		{Kind: live.KindAssistant, Line: 2, Text: strings.Repeat("a line\n", 100) + "THE LAST LINE"},
		{Kind: live.KindAssistant, Line: 3, Text: "the next event"},
	}}
	k := keys.Default()
	m := New(theme.New(theme.NoColor), &k.Transcript, "x", "", st)
	m.SetSize(80, 20)
	m = press(t, m, "g", "j", "enter")
	if m.Cursor() != 1 || !m.Expanded() {
		t.Fatalf("cursor %d, expanded %v", m.Cursor(), m.Expanded())
	}
	n := m.detailLen()
	at := func() int {
		var line, of int
		if _, err := fmt.Sscanf(title(m)[strings.LastIndex(title(m), "line "):], "line %d/%d", &line, &of); err != nil || of != n {
			t.Fatalf("title %q: %v (want a line of %d)", title(m), err, n)
		}
		return line
	}
	if at() != 19 || !strings.Contains(title(m), "2/3 · line 19/") {
		t.Fatalf("title %q", title(m))
	}
	m = press(t, m, "j", "j", "down")
	if at() != 22 {
		t.Fatalf("three lines down: %q", title(m))
	}
	m = press(t, m, "k")
	if at() != 21 {
		t.Fatalf("one line up: %q", title(m))
	}
	m = press(t, m, "G")
	if at() != n || !strings.Contains(m.View(), "THE LAST LINE") || m.Cursor() != 1 {
		t.Fatalf("G: %q, cursor %d", title(m), m.Cursor())
	}
	m = press(t, m, "pgdown", "pgdown", "j", "pgup")
	if at() != n-19 {
		t.Fatalf("past the end and one page back: %q", title(m))
	}
	m = press(t, m, "g")
	if at() != 19 || m.Cursor() != 1 {
		t.Fatalf("g: %q, cursor %d", title(m), m.Cursor())
	}
	m = press(t, m, "l")
	if m.Cursor() != 2 || !strings.Contains(m.View(), "the next event") {
		t.Fatalf("l: cursor %d", m.Cursor())
	}
	m = press(t, m, "h")
	if m.Cursor() != 1 || at() != 19 {
		t.Fatalf("h: cursor %d, %q", m.Cursor(), title(m))
	}
}

// TestSearchWrapsAndCounts: n and N go round past the ends, and the title
// counts the matches and says which one is selected.
func TestSearchWrapsAndCounts(t *testing.T) {
	m := newView(t, 300) // matches at events 10, 20, …, 300: 30 of them
	m = press(t, m, "g")
	m = search(t, m, "needle")
	if m.Cursor() != 9 || !strings.Contains(title(m), "match 1/30") {
		t.Fatalf("search: cursor %d, title %q", m.Cursor(), title(m))
	}
	m = press(t, m, "N") // back past the start: the last match
	if m.Cursor() != 299 || !strings.Contains(title(m), "match 30/30") {
		t.Fatalf("N from the first: cursor %d, title %q", m.Cursor(), title(m))
	}
	m = press(t, m, "n") // on past the end: the first again
	if m.Cursor() != 9 || !strings.Contains(title(m), "match 1/30") {
		t.Fatalf("n from the last: cursor %d, title %q", m.Cursor(), title(m))
	}
	m = press(t, m, "n")
	if m.Cursor() != 19 || !strings.Contains(title(m), "match 2/30") {
		t.Fatalf("n: cursor %d, title %q", m.Cursor(), title(m))
	}
	m = press(t, m, "j")
	if !strings.Contains(title(m), "30 matches") {
		t.Fatalf("off a match: title %q", title(m))
	}
	// From the end, a search finds the first match by going round.
	m = press(t, m, "G")
	m = search(t, m, "number 12")
	if m.Cursor() != 11 || !strings.Contains(title(m), "match 1/11") {
		t.Fatalf("search from the end: cursor %d, title %q", m.Cursor(), title(m))
	}
	m = search(t, m, "no such words")
	if m.Cursor() != 11 || !strings.Contains(title(m), "no match") {
		t.Fatalf("no match: cursor %d, title %q", m.Cursor(), title(m))
	}
}
