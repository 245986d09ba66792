package runlist

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The list moves like every view that scrolls: a line, half a page
// (ctrl+d/ctrl+u), a page (pgdn/pgup), the ends (g/G); its title says
// where the cursor stands.
func TestListPagesAndSaysWhere(t *testing.T) {
	t.Parallel()
	specs := make([]spec, 1200)
	for i := range specs {
		specs[i] = spec{slug: fmt.Sprintf("run-%04d", i), task: fmt.Sprintf("task %d", i), ago: i, verdict: "accept"}
	}
	m := newList(t, 80, 22)
	m.SetItems(items(specs...))
	title := func() string { return ansi.Strip(strings.SplitN(m.View(t0), "\n", 2)[0]) }
	if !strings.HasSuffix(strings.TrimSpace(title()), "1/1,200") {
		t.Fatalf("title %q", title())
	}
	keysOf := map[string]tea.KeyPressMsg{
		"ctrl+d": {Code: 'd', Mod: tea.ModCtrl}, "ctrl+u": {Code: 'u', Mod: tea.ModCtrl},
		"pgdown": {Code: tea.KeyPgDown}, "pgup": {Code: tea.KeyPgUp},
	}
	step := func(k string) int {
		before := m.cursor
		m, _ = m.Update(keysOf[k])
		return m.cursor - before
	}
	h := m.rowsHeight()
	if d := step("ctrl+d"); d != h/2 {
		t.Fatalf("ctrl+d moved %d, want %d", d, h/2)
	}
	if d := step("pgdown"); d != h-1 {
		t.Fatalf("pgdown moved %d, want %d", d, h-1)
	}
	if d := step("pgup"); d != -(h - 1) {
		t.Fatalf("pgup moved %d", d)
	}
	if d := step("ctrl+u"); d != -h/2 {
		t.Fatalf("ctrl+u moved %d", d)
	}
	m = press(t, m, "G")
	if !strings.HasSuffix(strings.TrimSpace(title()), "1,200/1,200") {
		t.Fatalf("at the bottom, title %q", title())
	}
	if !strings.Contains(m.View(t0), "task 1199") {
		t.Fatal("the last row is not on screen at the bottom")
	}
}
