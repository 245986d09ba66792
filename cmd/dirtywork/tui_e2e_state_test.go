package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// stateRun makes an ended run under the runs root with task and the
// patches given (its status and verdict among them).
func stateRun(t *testing.T, runsRoot, slug, task string, patches ...any) string {
	t.Helper()
	dir, err := transcript.CreateRunDir(runsRoot, slug)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := transcript.CreateRun(dir, transcript.RunStartFields{
		SchemaVersion: transcript.SchemaVersion, Status: transcript.StatusRunning, Slug: slug,
		Repo: filepath.Join(t.TempDir(), "shop"), Branch: "dirtywork/" + slug, BaseCommit: strings.Repeat("a", 40),
		BaseRef: "HEAD", Task: task, Model: "m", Sandbox: "none", Started: transcript.FormatTime(now.Add(-time.Minute)),
	}); err != nil {
		t.Fatal(err)
	}
	if len(patches) > 0 {
		if _, err := transcript.Patch(dir, patches...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestE2ERunStatesAreHonest: a dead run that was cleaned reads cleaned
// (not dead, and its review not running), accepted and merged runs say so
// with their commit, and an unreadable run.json names its directory and
// the error.
func TestE2ERunStatesAreHonest(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	root := filepath.Join(home, "runs")
	now := transcript.FormatTime(time.Now().UTC())
	verdict := func(v transcript.Verdict) transcript.VerdictFields {
		return transcript.VerdictFields{Verdict: v, VerdictAt: now, Reviewer: "e2e"}
	}
	ended := transcript.EndFields{Status: transcript.StatusCompleted, Turns: 3, Ended: now}

	// Its process died before it recorded an end; then it was cleaned.
	stateRun(t, root, "cleaned-dead-run", "the cleaned dead one",
		verdict(transcript.VerdictCleanup), transcript.ParkedFields{ParkedRef: "refs/dirtywork/parked/cleaned-dead-run"})
	stateRun(t, root, "still-dead-run", "the dead one")
	stateRun(t, root, "accepted-run", "the accepted one", ended, verdict(transcript.VerdictAccept),
		transcript.AcceptFields{AcceptedCommit: "1a2b3c4d5e6f7a8b9c0d", AcceptedAt: now})
	stateRun(t, root, "merged-run", "the merged one", ended, verdict(transcript.VerdictAccept),
		transcript.AcceptFields{AcceptedCommit: "1a2b3c4d5e6f7a8b9c0d", AcceptedAt: now},
		transcript.MergeFields{MergedInto: "main", MergeCommit: "9f8e7d6c5b4a3f2e1d0c", MergedAt: now})
	bad := stateRun(t, root, "broken-record-run", "never shown")
	if err := os.WriteFile(filepath.Join(bad, transcript.RecordName), []byte(`{"status": "completed",`), 0o600); err != nil {
		t.Fatal(err)
	}

	p := startTUI(t, 200, 40, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitFor("every run listed", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "the merged one") && strings.Contains(s, "broken-record-run")
	})
	// Zoomed, the list is wide enough for what each run did.
	p.keys("z")
	screen, _ := p.waitFor("the zoomed list", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "merged into main") && !strings.Contains(s, "1  free")
	})
	line := func(text string) string {
		for l := range strings.SplitSeq(screen, "\n") {
			if strings.Contains(l, text) {
				return l
			}
		}
		t.Fatalf("no line with %q:\n%s", text, screen)
		return ""
	}
	if l := line("the cleaned dead one"); !strings.Contains(l, "× cleaned") || strings.Contains(l, "✗") || !strings.Contains(l, "work parked at refs/dirtywork/parked/cleaned") {
		t.Errorf("the cleaned dead run: %q", l)
	}
	if l := line("the dead one"); !strings.Contains(l, "✗ dead") {
		t.Errorf("the dead run: %q", l)
	}
	if l := line("the accepted one"); !strings.Contains(l, "accepted") || !strings.Contains(l, "accepted as 1a2b3c4") {
		t.Errorf("the accepted run: %q", l)
	}
	if l := line("the merged one"); !strings.Contains(l, "merged") || !strings.Contains(l, "merged into main · 9f8e7d6") {
		t.Errorf("the merged run: %q", l)
	}
	if l := line("broken-record-run"); !strings.Contains(l, "unreadable") || !strings.Contains(l, "broken-record-run: run.json: ") || !strings.Contains(l, "JSON") {
		t.Errorf("the unreadable run: %q", l)
	}
	if strings.Contains(screen, "dead (2)") || !strings.Contains(screen, "dead (1)") {
		t.Errorf("only the uncleaned dead run is in the dead group:\n%s", screen)
	}
}

// TestE2EStoppedShortRunResumesFromItsReview: a run out of turns that
// left a compiled file behind shows its state in the review, leaves the
// generated file out of the accept, and resumes from the review with
// feedback (no verdict recorded).
func TestE2EStoppedShortRunResumesFromItsReview(t *testing.T) {
	e := newE2E(t, `{"turns":[
		{"tool_calls":[
			{"name":"write_file","arguments":{"path":"src/app.py","content":"def main():\n    return 2\n"}},
			{"name":"write_file","arguments":{"path":"src/__pycache__/app.cpython-311.pyc","content":"compiled"}}
		]},
		{"finish":"done after the feedback"}
	]}`)
	payload, stderr, code := e.run("--max-turns", "1")
	if code != 1 || payload["status"] != "max_turns" {
		t.Fatalf("run: exit %d, %v\n%s", code, payload, stderr)
	}
	var slug string
	for s := range records(t, e.home) {
		slug = s
	}
	p := startTUI(t, 160, 40, []string{"DIRTYWORK_HOME=" + e.home, "TMPDIR=" + filepath.Dir(e.home)},
		"tui", "--notify", "none", "--base-url", e.base)
	p.waitText("needs review (1)", 30*time.Second)
	p.keys("Enter")
	screen, _ := p.waitFor("the review with its forecast", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "Review") && strings.Contains(s, "in the accept") && !strings.Contains(s, "merge forecast…")
	})
	for _, want := range []string{"max turns", "1 in the accept (1 generated left out)", "generated", "u resume with feedback"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the review lacks %q:\n%s", want, screen)
		}
	}
	p.keys("u")
	p.waitText("feedback", 30*time.Second)
	p.typeText("finish it")
	p.keys("C-s")
	p.waitText("no verdict is recorded", 30*time.Second)
	p.keys("y")
	// "resumed as" shows until the next message; on a busy machine the
	// resumed run may end (and say so) before the screen is read, so the
	// resumed run itself is the evidence.
	p.waitFor("the resumed run ended", 2*time.Minute, func(s string) bool {
		return strings.Contains(s, "needs review (1)") && strings.Contains(s, "finished (1)") ||
			strings.Contains(s, "needs review (2)")
	})
	recs := records(t, e.home)
	if v, _ := recs[slug]["verdict"].(string); v != "" {
		t.Fatalf("resuming recorded verdict %q", v)
	}
	var resumed []string
	for s, r := range recs {
		if from, _ := r["resumed_from"].(string); from == slug {
			resumed = append(resumed, s)
		}
	}
	if len(resumed) != 1 || recs[resumed[0]]["status"] != "completed" {
		t.Fatalf("runs resumed from %s: %v", slug, resumed)
	}
}
