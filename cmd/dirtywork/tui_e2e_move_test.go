package main

// Real-terminal tests of moving through what scrolls: the transcript and
// the stats take the list's keys and say where they stand, the
// transcript's search goes round and counts, and a narrow help bar keeps
// ? and q.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// moveRun writes an ended run of model under home's runs root whose
// transcript holds a run start and events-1 assistant replies, "step k"
// for the k-th event, every fiftieth with "needle" in it; lines more
// lines, "line 1" to "line N", follow the last event's text.
func moveRun(t *testing.T, home, slug, model string, events int, lines ...int) {
	t.Helper()
	dir, err := transcript.CreateRunDir(filepath.Join(home, "runs"), slug)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := transcript.CreateRun(dir, transcript.RunStartFields{
		SchemaVersion: transcript.SchemaVersion, Status: transcript.StatusRunning, Slug: slug,
		Repo: "/nonexistent/shop", Branch: "dirtywork/" + slug, BaseCommit: strings.Repeat("a", 40), BaseRef: "HEAD",
		Task: "walk the long transcript", Model: model, Sandbox: "none", Started: transcript.FormatTime(now),
	}); err != nil {
		t.Fatal(err)
	}
	w, err := transcript.Create(filepath.Join(dir, transcript.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(transcript.RunStart{Task: "walk the long transcript", Model: model}); err != nil {
		t.Fatal(err)
	}
	for k := 2; k <= events; k++ {
		text := fmt.Sprintf("step %d", k)
		if k%50 == 0 {
			text += " needle"
		}
		if k == events && len(lines) > 0 {
			for n := 1; n <= lines[0]; n++ {
				text += fmt.Sprintf("\nline %d", n)
			}
		}
		if err := w.Write(transcript.Assistant{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := transcript.Patch(dir, transcript.EndFields{Status: transcript.StatusCompleted, Turns: 2, Ended: transcript.FormatTime(now)}); err != nil {
		t.Fatal(err)
	}
}

// titleLine is the screen line that starts with prefix (a view's title).
func titleLine(screen, prefix string) string {
	for l := range strings.SplitSeq(screen, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimRight(l, " ")
		}
	}
	return ""
}

// TestE2ETranscriptMovesAndSearches: in a 300-event transcript, k/j and
// the arrows move one event, g/G and ctrl+d jump, the title's corner says
// where the cursor is, and a search goes round the ends counting its
// matches.
func TestE2ETranscriptMovesAndSearches(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	moveRun(t, home, "long-0001", "devstral", 300)
	p := startTUI(t, 100, 30, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitText("Runs 1", 30*time.Second)
	p.keys("t")
	at := func(what, want string) {
		t.Helper()
		p.waitFor(what+" at "+want, 30*time.Second, func(s string) bool {
			return strings.HasSuffix(titleLine(s, "Transcript long-0001"), " "+want)
		})
	}
	at("the transcript", "300/300")
	p.keys("k", "k", "k")
	at("k k k", "297/300")
	p.keys("j")
	at("j", "298/300")
	p.keys("Up", "Up")
	at("up up", "296/300")
	p.keys("Down")
	at("down", "297/300")
	p.keys("g")
	at("g", "1/300")
	p.keys("C-d")
	p.waitFor("ctrl+d half a page on", 30*time.Second, func(s string) bool {
		title := titleLine(s, "Transcript long-0001")
		return strings.HasSuffix(title, "/300") && !strings.HasSuffix(title, " 1/300")
	})
	p.keys("G")
	at("G", "300/300")

	// Event 300 holds the needle, so the search starts on it: the last
	// of six matches; n goes round to the first.
	p.keys("/")
	p.typeText("needle")
	p.keys("Enter")
	p.waitFor("the search on the last match", 30*time.Second, func(s string) bool {
		title := titleLine(s, "Transcript long-0001")
		return strings.Contains(title, "match 6/6") && strings.HasSuffix(title, " 300/300")
	})
	p.keys("n")
	p.waitFor("n round to the first match", 30*time.Second, func(s string) bool {
		title := titleLine(s, "Transcript long-0001")
		return strings.Contains(title, "match 1/6") && strings.HasSuffix(title, " 50/300")
	})
	p.keys("N")
	p.waitFor("N back round to the last match", 30*time.Second, func(s string) bool {
		title := titleLine(s, "Transcript long-0001")
		return strings.Contains(title, "match 6/6") && strings.HasSuffix(title, " 300/300")
	})
	p.keys("/")
	p.keys("C-u")
	p.typeText("no such words")
	p.keys("Enter")
	p.waitFor("no match", 30*time.Second, func(s string) bool {
		return strings.Contains(titleLine(s, "Transcript long-0001"), "no match")
	})
}

// TestE2EExpandedEventMovesByTheLine: an expanded 400-line event moves
// with the same keys, line by line and to its ends, and the title says
// which line is the last on screen.
func TestE2EExpandedEventMovesByTheLine(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	moveRun(t, home, "long-0002", "devstral", 3, 400)
	p := startTUI(t, 100, 30, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitText("Runs 1", 30*time.Second)
	p.keys("t")
	p.waitFor("the transcript on its last event", 30*time.Second, func(s string) bool {
		return strings.HasSuffix(titleLine(s, "Transcript long-0002"), " 3/3")
	})
	p.keys("Enter")
	line := func(s string) (at, n int) {
		title := titleLine(s, "Transcript long-0002")
		if i := strings.LastIndex(title, "line "); i >= 0 {
			_, _ = fmt.Sscanf(title[i:], "line %d/%d", &at, &n)
		}
		return at, n
	}
	screen, _ := p.waitFor("the expanded event's line", 30*time.Second, func(s string) bool {
		at, n := line(s)
		return at > 0 && n > 400
	})
	top, n := line(screen)
	p.keys("j", "j")
	p.waitFor("two lines down", 30*time.Second, func(s string) bool { at, _ := line(s); return at == top+2 })
	p.keys("k")
	p.waitFor("one line up", 30*time.Second, func(s string) bool { at, _ := line(s); return at == top+1 })
	p.keys("G")
	p.waitFor("the event's end", 30*time.Second, func(s string) bool {
		at, _ := line(s)
		return at == n && strings.Contains(s, "line 400")
	})
	p.keys("g")
	p.waitFor("the event's top", 30*time.Second, func(s string) bool {
		at, _ := line(s)
		return at == top && strings.Contains(s, "step 3")
	})
	p.keys("h")
	p.waitFor("the previous event", 30*time.Second, func(s string) bool {
		return strings.Contains(titleLine(s, "Transcript long-0002"), " 2/3")
	})
}

// TestE2ENarrowMoveAndHelpBar: at 80×24 the help bar keeps ? and q on the
// dashboard, the transcript and the stats, and the stats' table, taller
// than the screen, scrolls with the list's keys and says where it is.
func TestE2ENarrowMoveAndHelpBar(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	for i := range 30 {
		moveRun(t, home, fmt.Sprintf("run-%04d", i), fmt.Sprintf("model-%02d", i), 3)
	}
	p := startTUI(t, 80, 24, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	bar := func(what, q string) {
		t.Helper()
		p.waitFor(what+" with ? and "+q+" in the help bar", 30*time.Second, func(s string) bool {
			b := helpBar(s)
			return strings.Contains(b, "? help") && strings.Contains(b, q)
		})
	}
	p.waitText("Runs 30", 30*time.Second)
	bar("the dashboard", "q/ctrl+c quit")
	p.keys("t")
	p.waitText("Transcript run-", 30*time.Second)
	bar("the transcript", "esc/q back")
	p.keys("q")
	p.waitText("Runs 30", 30*time.Second)
	p.keys("S")
	p.waitFor("the stats at its first row", 30*time.Second, func(s string) bool {
		return strings.HasSuffix(titleLine(s, "Review statistics"), " 1/30")
	})
	bar("the stats", "esc/q back")
	p.keys("j", "j")
	p.waitFor("the stats at its third row", 30*time.Second, func(s string) bool {
		return strings.HasSuffix(titleLine(s, "Review statistics"), " 3/30")
	})
	p.keys("G")
	p.waitFor("the stats at its last row", 30*time.Second, func(s string) bool {
		return strings.HasSuffix(titleLine(s, "Review statistics"), " 30/30")
	})
	// Rows are sorted by run count, then name: one run each, so the last
	// is model-29, now in sight.
	p.waitText("model-29", 30*time.Second)
	p.keys("q")
	p.waitText("Runs 30", 30*time.Second)
	// The full help fits at 80×24 in bands: nothing is cut at the right.
	p.keys("?")
	p.waitFor("the full help whole", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "4 pane 4") && strings.Contains(s, "q/ctrl+c quit") && strings.Contains(s, "drop queued")
	})
}

// TestE2EFullHelpScrolls: on a screen too short for it, the full help is
// a window that j, G and g move, its foot saying where it is.
func TestE2EFullHelpScrolls(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	moveRun(t, home, "run-0001", "devstral", 3)
	p := startTUI(t, 80, 16, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitText("Runs 1", 30*time.Second)
	foot := func(what, pos string) {
		t.Helper()
		p.waitFor(what, 30*time.Second, func(s string) bool {
			b := helpBar(s)
			return strings.Contains(b, "scroll the help") && strings.HasSuffix(strings.TrimRight(b, " "), " "+pos)
		})
	}
	p.keys("?")
	foot("the help's window at its start", "7/10")
	p.keys("j")
	foot("j a line on", "8/10")
	p.keys("G")
	foot("G at its end", "10/10")
	p.waitText("q/ctrl+c quit", 30*time.Second)
	p.keys("g")
	foot("g at its start", "7/10")
	p.keys("?")
	p.waitFor("the help closed", 30*time.Second, func(s string) bool { return strings.Contains(helpBar(s), "? help") })
}
