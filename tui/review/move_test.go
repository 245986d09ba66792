package review

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/dirtywork/dirtywork/transcript"
	"github.com/dirtywork/dirtywork/tui/backend"
	"github.com/dirtywork/dirtywork/tui/diff"
	"github.com/dirtywork/dirtywork/tui/keys"
	"github.com/dirtywork/dirtywork/tui/theme"
)

// twoFileReview is the loaded review of a finished run that changed a
// three-line file and a 500-line one.
func twoFileReview(t *testing.T) Model {
	t.Helper()
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "+line %d\n", i)
	}
	files := diff.Parse("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n" +
		"diff --git a/big.py b/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/big.py\n@@ -0,0 +1,500 @@\n" + b.String())
	if len(files) != 2 {
		t.Fatalf("parsed %d files", len(files))
	}
	run := backend.Run{RunRecord: transcript.RunRecord{Slug: "big-0101", Task: "grow", Status: transcript.StatusCompleted}}
	km := keys.Default()
	m := New(theme.New(theme.NoColor), &km, nil, nil, run, time.Now)
	m.SetSize(100, 30)
	m, _ = m.Update(LoadedMsg{Slug: run.Slug, Files: files})
	return m
}

// The diff takes the keys of every view that scrolls — j/k and arrows by
// the line, g/G and home/end to the ends, ctrl+d/ctrl+u by half a page,
// pgdown/pgup by a page — and l/h move between files; the rule under the
// header says which file and which line.
func TestDiffMovesLikeEveryOtherView(t *testing.T) {
	m := twoFileReview(t)
	if got := ansi.Strip(m.rule()); !strings.HasSuffix(got, " file 1/2 · line 5/5 ─") {
		t.Fatalf("first file's rule %q", got)
	}
	m, _ = press(m, "l")
	h, n := m.diffHeight(), m.fileLines()
	if m.file != 1 || n < 500 {
		t.Fatalf("after l: file %d of %d lines", m.file, n)
	}
	pos := func() string { return fmt.Sprintf(" file 2/2 · line %d/%d ─", m.scroll+h, n) }
	steps := []struct {
		key  string
		want int
	}{
		{"j", 1},
		{"down", 2},
		{"k", 1},
		{"ctrl+d", 1 + h/2},
		{"ctrl+u", 1},
		{"pgdown", 1 + h},
		{"G", n - h},
		{"j", n - h},
		{"g", 0},
		{"k", 0},
		{"end", n - h},
	}
	for _, s := range steps {
		m, _ = press(m, s.key)
		if m.scroll != s.want {
			t.Fatalf("%s: scrolled to %d, want %d", s.key, m.scroll, s.want)
		}
		if got := ansi.Strip(m.rule()); !strings.HasSuffix(got, pos()) {
			t.Fatalf("%s: rule %q, want it to end %q", s.key, got, pos())
		}
	}
	if !strings.Contains(ansi.Strip(m.View()), "line 499") || !strings.HasSuffix(ansi.Strip(m.rule()), fmt.Sprintf("line %d/%d ─", n, n)) {
		t.Fatalf("the end is not on screen:\n%s", m.View())
	}
	m, _ = press(m, "h")
	if m.file != 0 || m.scroll != 0 {
		t.Fatalf("after h: file %d, scroll %d", m.file, m.scroll)
	}
	m, _ = press(m, "right")
	if m.file != 1 || m.scroll != 0 {
		t.Fatalf("after right: file %d, scroll %d", m.file, m.scroll)
	}
}
