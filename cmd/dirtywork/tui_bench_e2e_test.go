package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/transcript"
)

// benchCaseRun makes a finished run of a bench case under the runs root,
// as a sweep leaves it: run.json, diff.patch and the acceptance output;
// its temporary repository is gone.
func benchCaseRun(t *testing.T, runsRoot, slug, acceptance string) string {
	t.Helper()
	dir, err := transcript.CreateRunDir(runsRoot, slug)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := transcript.CreateRun(dir, transcript.RunStartFields{
		SchemaVersion: transcript.SchemaVersion, Status: transcript.StatusRunning, Slug: slug,
		Repo: filepath.Join(t.TempDir(), "dwbench-py-off-by-one-gone"), Branch: "dirtywork/" + slug, BaseCommit: strings.Repeat("a", 40),
		BaseRef: "HEAD", Task: "fix the off-by-one in window()", Model: "m", Sandbox: "docker", Started: transcript.FormatTime(now.Add(-time.Minute)),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := transcript.Patch(dir, transcript.EndFields{Status: transcript.StatusCompleted, Turns: 5, Ended: transcript.FormatTime(now)},
		transcript.NoExportFields{FilesChanged: []string{"window.py"}}); err != nil {
		t.Fatal(err)
	}
	patch := "diff --git a/window.py b/window.py\n--- a/window.py\n+++ b/window.py\n@@ -1,2 +1,2 @@\n def window(xs, n):\n-    return xs[:n-1]\n+    return xs[:n]\n"
	if err := os.WriteFile(filepath.Join(dir, "diff.patch"), []byte(patch), 0o600); err != nil {
		t.Fatal(err)
	}
	out := "acceptance: " + acceptance + "\n\n3 hidden inputs checked\n"
	if err := os.WriteFile(filepath.Join(dir, bench.AcceptanceFile), []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func benchCaseRow(model, slug, dir, acceptance string) bench.Row {
	wall := bench.Seconds(42.5)
	return bench.Row{
		Stamp: "20261202T130000Z", Model: model, Task: "py-off-by-one", Slug: &slug, RunDir: &dir,
		Status: "completed", WallS: &wall, Acceptance: acceptance, Harness: &bench.Harness{},
		Serving: &bench.Serving{Server: "lmstudio", Version: "0.3.31", Slots: 2},
	}
}

// TestE2EBenchViewFollowsAResultsFile: `tui --bench FILE` shows the
// table, a row appended appears, Enter opens a case, and a verdict key in
// its review writes run.json.
func TestE2EBenchViewFollowsAResultsFile(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	runsRoot := filepath.Join(home, "runs")
	for _, d := range []string{home, runsRoot} {
		if err := transcript.EnsureDir(d); err != nil {
			t.Fatal(err)
		}
	}
	first := "bench-q-1202130000-00000001"
	second := "bench-d-1202130000-00000002"
	firstDir := benchCaseRun(t, runsRoot, first, bench.AcceptancePass)
	secondDir := benchCaseRun(t, runsRoot, second, bench.AcceptanceFail)
	results := filepath.Join(tmp, "results", "20261202T130000Z.jsonl")
	if err := os.MkdirAll(filepath.Dir(results), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := bench.AppendRow(results, benchCaseRow("qwen/qwen3-coder", first, firstDir, bench.AcceptancePass)); err != nil {
		t.Fatal(err)
	}

	p := startTUI(t, 160, 45, []string{"DIRTYWORK_HOME=" + home}, "tui", "--bench", results, "--notify", "none")
	p.waitText("Bench 20261202T130000Z.jsonl · 1 row · 1 model", 30*time.Second)
	p.waitText("qwen/qwen3-coder [lmstudio 0.3.31 slots=2]", 30*time.Second)

	// The sweep scores another case: it appears.
	row := benchCaseRow("devstral", second, secondDir, bench.AcceptanceFail)
	row.FailureClass, row.FailureEvidence = bench.FailureModel, "run_end: status completed; acceptance: exit status 1"
	if err := bench.AppendRow(results, row); err != nil {
		t.Fatal(err)
	}
	p.waitText("2 rows · 2 models", 30*time.Second)
	p.waitText("devstral [lmstudio 0.3.31 slots=2]", 30*time.Second)

	// The cursor stayed on the first case: Enter opens it.
	p.keys("Enter")
	p.waitText("Case qwen/qwen3-coder · py-off-by-one · repeat 0", 30*time.Second)
	p.waitText("3 hidden inputs checked", 30*time.Second)
	p.keys("d")
	p.waitFreshReview(home)
	p.keys("r")
	waitFor(t, func() bool { return records(t, home)[first]["verdict"] == "reject" })
	if v := records(t, home)[second]["verdict"]; v != nil {
		t.Fatalf("the other case got verdict %v", v)
	}
	// Back on the bench, the verdict counts at once: a false pass.
	p.waitText("a false pass", 30*time.Second)
	p.keys("q")
	p.waitText("0✓ 1×", 30*time.Second)
	p.keys("q")
	p.waitText("Runs 2", 30*time.Second)
	p.keys("q")
	p.waitText("[exited 0]", 20*time.Second)
}
