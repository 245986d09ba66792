package main

// Real-terminal tests of the guarded keys: q goes back and quits only from
// the dashboard, ctrl+c closes a text box keeping its text, and stop,
// merge, clean and reject with resume ask once, saying what they will do.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// helpBar is the screen's last non-empty line.
func helpBar(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return lines[len(lines)-1]
}

// TestE2EQGoesBackAndQuitsOnlyFromTheDashboard: q leaves the diff, the
// transcript and the stats for the dashboard, whose q quits; each of those
// screens shows q as back.
func TestE2EQGoesBackAndQuitsOnlyFromTheDashboard(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	headlessRun(t, tmp, home)
	p := startTUI(t, 160, 45, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitText("needs review (1)", 30*time.Second)

	back := func(screen string) {
		t.Helper()
		if bar := helpBar(screen); !strings.Contains(bar, "esc/q back") || !strings.Contains(bar, "ctrl+c quit") || strings.Contains(bar, "q/ctrl+c quit") {
			t.Fatalf("the help bar does not show q as back:\n%s", bar)
		}
		p.keys("q")
		p.waitFor("the dashboard", 30*time.Second, func(s string) bool {
			return strings.Contains(s, "Runs 1") && strings.Contains(helpBar(s), "q/ctrl+c quit")
		})
	}
	p.keys("Enter")
	screen, _ := p.waitFor("the review", 30*time.Second, func(s string) bool { return strings.Contains(s, "in the accept") })
	back(screen)
	p.keys("t")
	screen, _ = p.waitFor("the transcript", 30*time.Second, func(s string) bool { return strings.Contains(helpBar(s), "prev event") })
	back(screen)
	p.keys("S")
	screen, _ = p.waitFor("the stats", 30*time.Second, func(s string) bool { return strings.Contains(s, "Review statistics") })
	back(screen)
	if s := p.capture(); strings.Contains(s, "[exited") {
		t.Fatalf("mission control quit off the dashboard:\n%s", s)
	}
	p.keys("q")
	p.waitText("[exited 0]", 20*time.Second)
}

// TestE2ECtrlCInATextBoxKeepsTheText: in the filter, the launch form, the
// feedback box and the transcript search, ctrl+c closes the box and the
// next open shows what was typed; outside a text box it still quits.
func TestE2ECtrlCInATextBoxKeepsTheText(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	headlessRun(t, tmp, home)
	p := startTUI(t, 160, 45, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitText("needs review (1)", 30*time.Second)

	// The filter: ctrl+c leaves the box with its text in place.
	p.keys("/")
	p.typeText("zzz")
	p.waitText("no run matches the filter", 30*time.Second)
	p.keys("C-c")
	p.waitFor("the filter box closed", 30*time.Second, func(s string) bool {
		return strings.Contains(helpBar(s), "/ filter") && strings.Contains(s, "/zzz")
	})
	p.keys("/")
	p.waitFor("the filter box open again", 30*time.Second, func(s string) bool { return strings.Contains(helpBar(s), "keep filter") })
	p.typeText("y")
	p.waitText("/zzzy", 30*time.Second)
	p.keys("Escape")
	p.waitText("Runs 1 ", 30*time.Second)

	// The launch form: ctrl+c closes it; the next L opens it as it was.
	p.keys("L")
	p.waitText("Launch a run", 30*time.Second)
	p.typeText("a task worth keeping")
	p.waitText("a task worth keeping", 30*time.Second)
	p.keys("C-c")
	p.waitFor("the form closed", 30*time.Second, func(s string) bool {
		return !strings.Contains(s, "Launch a run") && strings.Contains(s, "launch form closed")
	})
	p.keys("L")
	p.waitFor("the form open again with its task", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "Launch a run") && strings.Contains(s, "a task worth keeping")
	})
	p.keys("Escape")
	p.waitText("Runs 1 ", 30*time.Second)

	// The feedback box of a review.
	p.keys("Enter")
	p.waitFreshReview(home)
	p.keys("R")
	p.waitText("Reject with feedback", 30*time.Second)
	p.typeText("keep the old name")
	p.waitText("keep the old name", 30*time.Second)
	p.keys("C-c")
	p.waitFor("the feedback box closed", 30*time.Second, func(s string) bool { return !strings.Contains(s, "Reject with feedback") })
	p.keys("R")
	p.waitFor("the feedback box open again with its text", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "Reject with feedback") && strings.Contains(s, "keep the old name")
	})
	p.keys("Escape")
	p.waitFor("the feedback box closed", 30*time.Second, func(s string) bool { return !strings.Contains(s, "Reject with feedback") })
	for slug, r := range records(t, home) {
		if r["verdict"] != nil {
			t.Fatalf("%s got verdict %v from a closed box", slug, r["verdict"])
		}
	}

	// The transcript's search box.
	p.keys("t")
	p.waitFor("the transcript", 30*time.Second, func(s string) bool { return strings.Contains(helpBar(s), "prev event") })
	p.keys("/")
	p.waitFor("the search box", 30*time.Second, func(s string) bool { return strings.Contains(helpBar(s), "enter search") })
	p.typeText("needle")
	p.waitText("/needle", 30*time.Second)
	p.keys("C-c")
	p.waitFor("the search box closed", 30*time.Second, func(s string) bool { return strings.Contains(helpBar(s), "prev event") })
	p.keys("/")
	p.waitFor("the search box open again with its text", 30*time.Second, func(s string) bool {
		return strings.Contains(helpBar(s), "enter search") && strings.Contains(s, "/needle")
	})
	p.keys("Escape")
	p.waitFor("the search box closed", 30*time.Second, func(s string) bool { return strings.Contains(helpBar(s), "prev event") })
	if s := p.capture(); strings.Contains(s, "[exited") {
		t.Fatalf("ctrl+c in a text box quit:\n%s", s)
	}

	// Outside a text box ctrl+c still quits.
	p.keys("C-c")
	p.waitText("[exited 0]", 20*time.Second)
}

var stopRE = regexp.MustCompile(`[│┃] Stop (\S+)`)

// TestE2EConsequentialKeysAsk: stop (from a pane and from the list),
// merge and clean each ask once with a line saying what will happen; n or
// esc does nothing, y or enter does it. The reject with resume's question
// is in TestE2EDemoCockpit.
func TestE2EConsequentialKeysAsk(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	// Two finished runs to merge and clean, then the demo's four live ones
	// to stop (each scripted turn takes 20 s: they outlast the stops even
	// on a loaded machine; at 8 s one finished before its stop in CI).
	slugOf := func(payload map[string]any) string {
		return filepath.Base(filepath.Dir(payload["transcript"].(string)))
	}
	merged := slugOf(headlessRun(t, tmp, home))
	cleaned := slugOf(headlessRun(t, tmp, home))
	p := startTUI(t, 160, 45, []string{"TMPDIR=" + tmp, "DIRTYWORK_HOME=" + home},
		"demo", "--sandbox", "none", "--pace", "20s", "--max-parallel", "4")
	t.Cleanup(func() {
		// The demo's runs end once its scripted model is gone; their
		// processes hold the runs' liveness locks until they exit.
		waitFor(t, func() bool {
			for slug := range records(t, home) {
				if alive, err := transcript.IsAlive(filepath.Join(home, "runs", slug)); err != nil || alive {
					return false
				}
			}
			return true
		})
	})
	p.waitFor("four runs running", 60*time.Second, func(s string) bool {
		r, rv, _, ok := counts(s)
		return ok && r == 4 && rv == 2
	})
	status := func(slug string) any { return records(t, home)[slug]["status"] }
	asked := func(what string) string {
		t.Helper()
		s, _ := p.waitFor(what+"'s question", 30*time.Second, func(s string) bool { return strings.Contains(s, "y/enter "+what) })
		return s
	}
	closed := func(what string) {
		t.Helper()
		p.waitFor(what+"'s question closed", 30*time.Second, func(s string) bool { return !strings.Contains(s, "y/enter "+what) })
	}

	// Stop from a pane: n leaves the run alone, y stops it.
	p.keys("1")
	p.keys("s")
	m := stopRE.FindStringSubmatch(asked("stop"))
	if m == nil {
		t.Fatalf("the stop question names no run:\n%s", p.capture())
	}
	fromPane := m[1]
	p.keys("n")
	closed("stop")
	if st := status(fromPane); st != "running" {
		t.Fatalf("after n, %s is %v", fromPane, st)
	}
	p.keys("s")
	asked("stop")
	p.keys("y")
	waitFor(t, func() bool { return status(fromPane) == "interrupted" })
	// Back to the list: tab cycles the four panes, then the list (an
	// escape could reach the program with the next key, as alt+key).
	p.keys("Tab", "Tab", "Tab", "Tab")

	// Stop from the list: esc leaves it alone, enter stops it.
	p.keys("/")
	p.typeText("status:running")
	p.waitFor("the running runs alone", 30*time.Second, func(s string) bool { return regexp.MustCompile(`Runs \d of 6`).MatchString(s) })
	p.keys("Enter")
	p.keys("s")
	m = stopRE.FindStringSubmatch(asked("stop"))
	if m == nil || m[1] == fromPane {
		t.Fatalf("the list's stop question: %v\n%s", m, p.capture())
	}
	fromList := m[1]
	p.keys("Escape")
	closed("stop")
	if st := status(fromList); st != "running" {
		t.Fatalf("after esc, %s is %v", fromList, st)
	}
	p.keys("s")
	asked("stop")
	p.keys("Enter")
	waitFor(t, func() bool { return status(fromList) == "interrupted" })
	p.keys("Escape")
	p.waitText("Runs 6 ", 30*time.Second)

	// Merge: the question names the branch and the files.
	p.keys("n")
	p.waitFreshReview(home)
	if !strings.Contains(p.capture(), "Review "+merged) {
		t.Fatalf("the next review is not %s:\n%s", merged, p.capture())
	}
	p.keys("m")
	screen := asked("merge")
	if !regexp.MustCompile(`Merge `+regexp.QuoteMeta(merged)+` into \S+`).MatchString(screen) || !strings.Contains(screen, "files") {
		t.Fatalf("the merge question:\n%s", screen)
	}
	p.keys("n")
	closed("merge")
	if v := records(t, home)[merged]["verdict"]; v != nil {
		t.Fatalf("after n, %s has verdict %v", merged, v)
	}
	p.keys("m")
	asked("merge")
	p.keys("y")
	p.waitText("merged "+merged, 60*time.Second)
	if v := records(t, home)[merged]["verdict"]; v != "accept" {
		t.Fatalf("merged run's verdict %v", v)
	}

	// Clean: the question says what the clean does — the run dir keeps
	// run.json and the transcript.
	p.keys("n")
	p.waitFreshReview(home)
	if !strings.Contains(p.capture(), "Review "+cleaned) {
		t.Fatalf("the next review is not %s:\n%s", cleaned, p.capture())
	}
	p.keys("c")
	screen = asked("clean")
	flat := strings.Join(strings.Fields(strings.NewReplacer("│", " ", "┃", " ").Replace(screen)), " ")
	if !strings.Contains(flat, "records verdict cleanup") || !strings.Contains(flat, "keep-transcript:") || strings.Contains(flat, "remove-rundir") {
		t.Fatalf("the clean question:\n%s", screen)
	}
	p.keys("n")
	closed("clean")
	if v := records(t, home)[cleaned]["verdict"]; v != nil {
		t.Fatalf("after n, %s has verdict %v", cleaned, v)
	}
	p.keys("c")
	asked("clean")
	p.keys("y")
	p.waitText("cleaned "+cleaned, 60*time.Second)
	dir := filepath.Join(home, "runs", cleaned)
	for _, name := range []string{transcript.RecordName, transcript.TranscriptName} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("the clean promised to keep %s: %v", name, err)
		}
	}
	if v := records(t, home)[cleaned]["verdict"]; v != "cleanup" {
		t.Fatalf("cleaned run's verdict %v", v)
	}
	p.keys("q")
	p.waitText("[exited 0]", 20*time.Second)
}
