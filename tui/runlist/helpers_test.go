package runlist

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/runinfo"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// t0 is the tests' now.
var t0 = time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)

// spec is a run for the tests: its slug, task, minutes before t0 it
// started, and its verdict ("" for a run waiting for review).
type spec struct {
	slug, task string
	ago        int
	verdict    transcript.Verdict
}

func item(s spec) runinfo.Item {
	started := t0.Add(-time.Duration(s.ago) * time.Minute)
	turns := 7
	rec := transcript.RunRecord{
		Slug: s.slug, Task: s.task, Repo: "/src/shop", Model: "qwen/qwen3-coder", Sandbox: "docker",
		Status: transcript.StatusCompleted, Verdict: s.verdict, Turns: &turns,
		Started: transcript.FormatTime(started), Ended: transcript.FormatTime(started.Add(3 * time.Minute)),
	}
	return runinfo.Item{Key: s.slug, Run: backend.Run{RunRecord: rec}}
}

func items(specs ...spec) []runinfo.Item {
	out := make([]runinfo.Item, len(specs))
	for i, s := range specs {
		out[i] = item(s)
	}
	return out
}

// slug is a slug as runs get them: the task's words, a timestamp and a
// hex id (digits of their own).
func slug(words string, stamp int) string {
	return fmt.Sprintf("%s-12021%05d-%08x", strings.ReplaceAll(words, " ", "-"), stamp, stamp*0x3131)
}

func newList(t *testing.T, w, h int) Model {
	t.Helper()
	km := keys.Default()
	m := New(theme.New(theme.Dark), &km.Runs)
	m.SetSize(w, h)
	m.SetFocused(true)
	return m
}

func press(t *testing.T, m Model, names ...string) Model {
	t.Helper()
	for _, n := range names {
		var k tea.KeyPressMsg
		switch n {
		case "esc":
			k = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "enter":
			k = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "backspace":
			k = tea.KeyPressMsg{Code: tea.KeyBackspace}
		default:
			r := []rune(n)[0]
			k = tea.KeyPressMsg{Code: r, Text: n}
		}
		m, _ = m.Update(k)
	}
	return m
}

// typeText types s into the focused filter box.
func typeText(t *testing.T, m Model, s string) Model {
	t.Helper()
	for _, r := range s {
		if r == ' ' {
			m, _ = m.Update(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
			continue
		}
		m, _ = m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return m
}

// shown are the keys of the rows in the order shown.
func shown(m Model) []string {
	out := make([]string, len(m.visible))
	for i, idx := range m.visible {
		out[i] = m.items[idx].Key
	}
	return out
}

func selectedKey(m Model) string {
	it, ok := m.Selected()
	if !ok {
		return "(none)"
	}
	return it.Key
}
