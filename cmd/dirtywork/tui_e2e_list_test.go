package main

// Real-terminal tests of the runs list with a long root: where the cursor
// starts, how the filter ranks, and the zoomed list's column names.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// listRuns is how many runs the list tests seed: more than mission
// control reads ahead for its first frame (200), so the list arrives in
// parts.
const listRuns = 240

// seedListRuns writes listRuns finished runs under home's runs root, as
// runs leave them: run.json through the typed patches, and a transcript.
// Run i's task is "fix bug i in the parser" and its slug carries digits of
// its own (a stamp, an id). Their start times are shuffled by seed; every
// third run by age waits for review, the newest among them, so the newest
// run heads the first group. The newest run's dir is written first, so
// its dir is the oldest: the read-ahead of the most recently changed dirs
// leaves it out. It returns the newest run's task number.
func seedListRuns(t *testing.T, home string, seed uint64) int {
	t.Helper()
	root := filepath.Join(home, "runs")
	for _, d := range []string{home, root} {
		if err := transcript.EnsureDir(d); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 42))
	ago := rng.Perm(listRuns) // run i started ago[i] minutes before now
	newest := 0
	for i, a := range ago {
		if a == 0 {
			newest = i
		}
	}
	order := append([]int{newest}, rng.Perm(listRuns)...)
	now := time.Now().UTC()
	written := map[int]bool{}
	for _, i := range order {
		if written[i] {
			continue
		}
		written[i] = true
		slug := fmt.Sprintf("fix-bug-%d-1202%06d-%08x", i, 130000+ago[i], 0x33000000+i)
		dir, err := transcript.CreateRunDir(root, slug)
		if err != nil {
			t.Fatal(err)
		}
		started := now.Add(-time.Duration(ago[i]+10) * time.Minute)
		if err := transcript.CreateRun(dir, transcript.RunStartFields{
			SchemaVersion: transcript.SchemaVersion, Status: transcript.StatusRunning, Slug: slug,
			Repo: "/nonexistent/shop", Worktree: "/nonexistent/shop/.worktrees/dw-" + slug, Branch: "dirtywork/" + slug,
			BaseCommit: strings.Repeat("a", 40), BaseRef: "HEAD", Task: fmt.Sprintf("fix bug %d in the parser", i),
			Model: "devstral", Provider: "openai", ContextWindow: 32768, Sandbox: "none", Started: transcript.FormatTime(started),
		}); err != nil {
			t.Fatal(err)
		}
		done := "done"
		fields := []any{
			transcript.EndFields{
				Status: transcript.StatusCompleted, Turns: 4, LastAssistantText: &done, Ended: transcript.FormatTime(started.Add(2 * time.Minute)),
				Usage: transcript.Usage{PromptTokens: 9000, CompletionTokens: 400},
			},
			transcript.NoExportFields{FilesChanged: []string{"parser.go"}},
		}
		if ago[i]%3 != 0 {
			secs := 12.5
			fields = append(fields, transcript.VerdictFields{Verdict: transcript.VerdictAccept, ReviewSeconds: &secs})
		}
		if _, err := transcript.Patch(dir, fields...); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, transcript.TranscriptName), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return newest
}

// startListTUI seeds a root and starts mission control on it, waiting
// until the list holds every run. It returns the pane, DIRTYWORK_HOME and
// the newest run's task number.
func startListTUI(t *testing.T, seed uint64) (*tmuxPane, string, int) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	newest := seedListRuns(t, home, seed)
	// 110 columns: the list spans the width above the panes, with the
	// repo, task and model columns.
	p := startTUI(t, 110, 40, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitText(fmt.Sprintf("Runs %d", listRuns), 60*time.Second)
	return p, home, newest
}

// listLines are the screen's lines from the list's title on.
func listLines(screen string) []string {
	lines := strings.Split(screen, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Runs ") {
			return lines[i:]
		}
	}
	return nil
}

// cursorLine is the list's line with the cursor glyph, "" when none.
func cursorLine(lines []string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, "▸") {
			return l
		}
	}
	return ""
}

// TestE2EListCursorStartsOnTheNewestRun: with a root longer than the
// read-ahead, whatever order its parts arrive in, the cursor is on the
// newest run, at the top, at every start; a new run arriving after the
// user moved the cursor leaves it on the run chosen.
func TestE2EListCursorStartsOnTheNewestRun(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2} {
		p, home, newest := startListTUI(t, seed)
		want := fmt.Sprintf("fix bug %d in the parser", newest)
		p.waitFor(fmt.Sprintf("the cursor on the top row, %q (seed %d)", want, seed), 30*time.Second, func(s string) bool {
			l := listLines(s)
			// The title, the first group's heading, the first row.
			return len(l) > 2 && strings.HasPrefix(l[1], "needs review") &&
				strings.HasPrefix(l[2], "▸") && strings.Contains(l[2], want)
		})
		if seed == 2 {
			// Move the cursor, then a newer run arrives: the cursor stays
			// on the run chosen.
			p.keys("j")
			var chosen string
			p.waitFor("the cursor on the second row", 30*time.Second, func(s string) bool {
				l := listLines(s)
				if len(l) > 3 && strings.HasPrefix(l[3], "▸") {
					chosen = l[3]
					return true
				}
				return false
			})
			task := regexp.MustCompile(`fix bug \d+ in the parser`).FindString(chosen)
			addRun(t, home, "fix-bug-new-1202235959-ffffffff", "fix bug new in the parser")
			p.waitFor("the new run on top, the cursor still on "+task, 30*time.Second, func(s string) bool {
				l := listLines(s)
				return len(l) > 4 && strings.Contains(l[2], "fix bug new") && !strings.HasPrefix(l[2], "▸") &&
					cursorLine(l) != "" && strings.Contains(cursorLine(l), task)
			})
		}
		p.keys("q")
		p.waitText("[exited 0]", 30*time.Second)
	}
}

// addRun writes a run that waits for review, started now, under home's
// runs root.
func addRun(t *testing.T, home, slug, task string) {
	t.Helper()
	dir, err := transcript.CreateRunDir(filepath.Join(home, "runs"), slug)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := transcript.CreateRun(dir, transcript.RunStartFields{
		SchemaVersion: transcript.SchemaVersion, Status: transcript.StatusRunning, Slug: slug,
		Repo: "/nonexistent/shop", Branch: "dirtywork/" + slug, BaseCommit: strings.Repeat("a", 40), BaseRef: "HEAD",
		Task: task, Model: "devstral", Sandbox: "none", Started: transcript.FormatTime(now),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := transcript.Patch(dir, transcript.EndFields{Status: transcript.StatusCompleted, Turns: 2, Ended: transcript.FormatTime(now)}); err != nil {
		t.Fatal(err)
	}
}

// TestE2EListFilterRanksTheTaskFirst: `/` then "bug 3" puts "fix bug 3"
// on the top row with the cursor on it, though every slug has 3s in it;
// runs whose task has a number starting with 3 come next.
func TestE2EListFilterRanksTheTaskFirst(t *testing.T) {
	t.Parallel()
	p, _, _ := startListTUI(t, 3)
	p.keys("/")
	p.waitText("repo:, model:, status: or any text", 30*time.Second)
	p.typeText("bug 3")
	second := regexp.MustCompile(`fix bug 3\d in the parser`)
	p.waitFor(`"fix bug 3" on the top row under the cursor`, 30*time.Second, func(s string) bool {
		l := listLines(s)
		// The title, the filter, then the rows best first (no group
		// headings while ranked). Every run matches: each slug has 3s.
		return len(l) > 3 && strings.HasPrefix(l[1], "/bug 3") &&
			strings.HasPrefix(l[2], "▸") && strings.Contains(l[2], "fix bug 3 in the parser") &&
			second.MatchString(l[3])
	})
	// Kept with enter, the filter still ranks and the cursor stays on
	// the best match.
	p.keys("Enter")
	p.waitFor("the filter kept, the cursor on fix bug 3", 30*time.Second, func(s string) bool {
		l := listLines(s)
		return len(l) > 2 && strings.HasPrefix(l[1], "/bug 3") && strings.Contains(cursorLine(l), "fix bug 3 in the parser")
	})
	p.keys("q")
	p.waitText("[exited 0]", 30*time.Second)
}

// TestE2EListZoomNamesTheColumns: zoomed (z), the list has a header row
// naming its columns, over them; zoomed out, it has none.
func TestE2EListZoomNamesTheColumns(t *testing.T) {
	t.Parallel()
	p, _, _ := startListTUI(t, 4)
	header := regexp.MustCompile(`^ +status +repo +task +model +turns +tokens +elapsed +ctx`)
	if l := listLines(p.capture()); len(l) > 1 && header.MatchString(l[1]) {
		t.Fatalf("the list names its columns unzoomed:\n%s", strings.Join(l, "\n"))
	}
	p.keys("z")
	screen, _ := p.waitFor("the column names under the list's title", 30*time.Second, func(s string) bool {
		l := listLines(s)
		return len(l) > 3 && header.MatchString(l[1]) && strings.HasPrefix(l[2], "needs review")
	})
	// Each name stands over its column in the first row.
	l := listLines(screen)
	for name, val := range map[string]string{"task": "fix bug", "model": "devstral", "status": "completed"} {
		if hi, ri := strings.Index(l[1], name), strings.Index(l[3], val); hi < 0 || runeCol(l[1], hi) != runeCol(l[3], ri) {
			t.Errorf("%q is not over its column %q:\n%s\n%s", name, val, l[1], l[3])
		}
	}
	p.keys("z")
	p.waitFor("no column names zoomed out", 30*time.Second, func(s string) bool {
		l := listLines(s)
		return len(l) > 2 && !header.MatchString(l[1]) && strings.HasPrefix(l[1], "needs review")
	})
	p.keys("q")
	p.waitText("[exited 0]", 30*time.Second)
}

// runeCol is the column of byte offset i in s (the list's text is one
// cell per rune).
func runeCol(s string, i int) int {
	if i < 0 {
		return -1
	}
	return len([]rune(s[:i]))
}
