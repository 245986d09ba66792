package stats

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// manyModels is a view 80×24 over runs of n models, model-00 with the
// most runs so the rows keep that order.
func manyModels(n int) Model {
	var runs []backend.Run
	for i := range n {
		for range n - i {
			runs = append(runs, backend.Run{RunRecord: transcript.RunRecord{Model: fmt.Sprintf("model-%02d", i), Status: transcript.StatusCompleted}})
		}
	}
	k := keys.Default()
	m := New(theme.New(theme.NoColor), &k.Stats, runs)
	m.SetSize(80, 24)
	return m
}

func pressKeys(m Model, ks ...tea.KeyPressMsg) Model {
	for _, k := range ks {
		m, _ = m.Update(k)
	}
	return m
}

func ch(r rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: r, Text: string(r)} }

var (
	down     = tea.KeyPressMsg{Code: tea.KeyDown}
	up       = tea.KeyPressMsg{Code: tea.KeyUp}
	home     = tea.KeyPressMsg{Code: tea.KeyHome}
	end      = tea.KeyPressMsg{Code: tea.KeyEnd}
	pgdown   = tea.KeyPressMsg{Code: tea.KeyPgDown}
	pgup     = tea.KeyPressMsg{Code: tea.KeyPgUp}
	ctrlD    = tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
	ctrlU    = tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}
	viewRows = func(m Model) []string { return strings.Split(ansi.Strip(m.View()), "\n") }
)

// TestStatsScrolls: a table taller than the view moves with the list
// keys, keeps the cursor's row in sight and says where it is.
func TestStatsScrolls(t *testing.T) {
	m := manyModels(40)
	vis := m.visible() // 20 at 24 lines
	if got := viewRows(m); strings.Contains(strings.Join(got, "\n"), "model-39") || !strings.HasSuffix(got[0], "1/40") {
		t.Fatalf("start:\n%s", strings.Join(got, "\n"))
	}
	for _, c := range []struct {
		name string
		keys []tea.KeyPressMsg
		want int
	}{
		{"j", []tea.KeyPressMsg{ch('j')}, 1},
		{"down", []tea.KeyPressMsg{down, down}, 3},
		{"k", []tea.KeyPressMsg{ch('k')}, 2},
		{"up", []tea.KeyPressMsg{up, up, up}, 0},
		{"G", []tea.KeyPressMsg{ch('G')}, 39},
		{"home", []tea.KeyPressMsg{home}, 0},
		{"end", []tea.KeyPressMsg{end}, 39},
		{"ctrl+u", []tea.KeyPressMsg{ctrlU}, 39 - vis/2},
		{"ctrl+d", []tea.KeyPressMsg{home, ctrlD}, vis / 2},
		{"pgdown", []tea.KeyPressMsg{pgdown}, vis/2 + vis},
		{"pgup", []tea.KeyPressMsg{pgup, pgup}, 0},
	} {
		m = pressKeys(m, c.keys...)
		if m.Cursor() != c.want {
			t.Fatalf("%s: cursor %d, want %d", c.name, m.Cursor(), c.want)
		}
		rows := viewRows(m)
		if want := fmt.Sprintf("%d/40", c.want+1); !strings.HasSuffix(strings.TrimRight(rows[0], " "), want) {
			t.Fatalf("%s: title %q, want %s", c.name, rows[0], want)
		}
		if name := fmt.Sprintf("model-%02d", c.want); !strings.Contains(strings.Join(rows, "\n"), name) {
			t.Fatalf("%s: %s is out of sight:\n%s", c.name, name, strings.Join(rows, "\n"))
		}
		if len(rows) != 24 || !strings.Contains(rows[3], "overall") {
			t.Fatalf("%s: the head scrolled away:\n%s", c.name, strings.Join(rows, "\n"))
		}
	}
	m = pressKeys(m, ch('G'), ch('g'))
	if m.Grouping() != ByRepo || m.Cursor() != 0 {
		t.Fatalf("g: grouping %v, cursor %d", m.Grouping(), m.Cursor())
	}
}
