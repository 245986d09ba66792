package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

// runsHome points the runs root at a fresh directory and returns it.
func runsHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv(transcript.HomeEnv, home)
	root, err := transcript.EnsureRunsRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func putRun(t *testing.T, root, slug string, rec transcript.Record) string {
	t.Helper()
	dir, err := transcript.CreateRunDir(root, slug)
	if err != nil {
		t.Fatal(err)
	}
	rec["slug"] = slug
	if err := transcript.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	return dir
}

// compatRuns are the runs of the spec's examples: a run resumed by
// another, and a record that cannot be read.
func compatRuns(t *testing.T, root string) {
	t.Helper()
	first, second := "add-a-flag-0102030405-aaaaaaaa", "fix-the-flag-0102040506-bbbbbbbb"
	putRun(t, root, first, transcript.Record{
		"status": "completed", "started": "2026-01-02T03:04:05.000000+00:00", "branch": "dirtywork/" + first,
		"repo": "/nonexistent", "worktree": "/nonexistent/.worktrees/dw-" + first, "resumed_by": second, "sandbox": "none",
	})
	putRun(t, root, second, transcript.Record{
		"status": "max_turns", "started": "2026-01-02T04:05:06.000000+00:00", "ended": "2026-01-02T04:15:06.000000+00:00",
		"branch": "dirtywork/" + first, "repo": "/nonexistent", "worktree": "/nonexistent/.worktrees/dw-" + first,
		"resumed_from": first, "sandbox": "docker", "container": "dw-" + second + "-gone", "volume": "dw-" + second + "-gone-work",
		"task": "make the export command accept --json\nand document it", "model": "qwen/qwen3-coder-next", "provider": "openai",
		"context_window": 65536, "context_window_source": "provider:openai:server", "turns": 30, "trimmed_turns": 3, "timeouts": 1,
		"files_changed": []string{"a.ts", "b.ts", "c.ts", "d.ts"}, "stuck_on": nil,
		"verify": map[string]any{"command": "npm test", "exit_code": 2, "output_tail": "", "rounds": 1, "passed": false},
	})
	bad := filepath.Join(root, "broken-0102030405-cccccccc")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "run.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRunsListJSONKeepsThe091RowShape(t *testing.T) {
	root := runsHome(t)
	compatRuns(t, root)
	out, errOut, code := runMain(t, "runs", "list", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got, want []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	data, err := os.ReadFile("testdata/runs-list-0.9.1.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d: %s", len(got), len(want), out)
	}
	for i := range want {
		for k, w := range want[i] {
			g, ok := got[i][k]
			switch {
			case !ok:
				t.Errorf("row %d lacks %q", i, k)
			case w == "*":
				if s, _ := g.(string); s == "" {
					t.Errorf("row %d %s empty", i, k)
				}
			case g != w:
				t.Errorf("row %d %s = %v, want %v", i, k, g, w)
			}
		}
		if _, ok := got[i]["alive"]; !ok {
			t.Errorf("row %d has no alive", i)
		}
	}
	if got[0]["alive"] != false {
		t.Errorf("a run without its liveness lock is alive: %v", got[0]["alive"])
	}
}

func TestRunsListTextAndEmpty(t *testing.T) {
	root := runsHome(t)
	out, _, code := runMain(t, "runs", "list")
	if code != ExitOK || out != "no runs found\n" {
		t.Errorf("empty: exit %d %q", code, out)
	}
	out, _, _ = runMain(t, "runs", "list", "--json")
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("empty --json: %q", out)
	}
	compatRuns(t, root)
	out, _, code = runMain(t, "runs", "list")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != ExitOK || len(lines) != 4 || !strings.HasPrefix(lines[0], "SLUG  ") || !strings.Contains(lines[0], "  RESUMED  ") {
		t.Fatalf("table:\n%s", out)
	}
	if !strings.Contains(out, "from add-a-flag") || !strings.Contains(out, "by fix-the-flag") || !strings.Contains(lines[2], "error: ") {
		t.Errorf("table cells:\n%s", out)
	}
	for _, l := range lines {
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space in %q", l)
		}
	}
}

func TestRunsShowKeyLinesMatchThe091Example(t *testing.T) {
	root := runsHome(t)
	compatRuns(t, root)
	out, errOut, code := runMain(t, "runs", "show", "fix-the-flag-0102040506-bbbbbbbb")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want, err := os.ReadFile("testdata/runs-show-0.9.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, string(want)+"\n{") {
		t.Errorf("show:\n%s\nwant the key lines:\n%s", out, want)
	}
	if !strings.Contains(out, `"context_window": 65536`) {
		t.Errorf("run.json not shown:\n%s", out)
	}
	jsonOut, _, code := runMain(t, "runs", "show", "fix-the-flag-0102040506-bbbbbbbb", "--json")
	var rec map[string]any
	if code != ExitOK || json.Unmarshal([]byte(jsonOut), &rec) != nil || rec["turns"] != 30.0 {
		t.Errorf("--json: exit %d %s", code, jsonOut)
	}
}

func TestRunsShowRefusals(t *testing.T) {
	root := runsHome(t)
	compatRuns(t, root)
	if _, errOut, code := runMain(t, "runs", "show", "nope"); code != ExitUsage || !strings.Contains(errOut, "no such run 'nope'") {
		t.Errorf("unknown: exit %d %q", code, errOut)
	}
	if _, errOut, code := runMain(t, "runs", "show", "../etc"); code != ExitUsage || !strings.Contains(errOut, "invalid run slug") {
		t.Errorf("bad slug: exit %d %q", code, errOut)
	}
	if _, _, code := runMain(t, "runs", "show", "fix-the-flag-0102040506-bbbbbbbb", "--out", "x.md"); code != ExitUsage {
		t.Errorf("--out without --markdown: exit %d", code)
	}
	if _, _, code := runMain(t, "runs", "show", "broken-0102030405-cccccccc"); code != ExitUsage {
		t.Errorf("unreadable run.json: exit %d", code)
	}
	out, _, code := runMain(t, "runs", "show", "fix-the-flag-0102040506-bbbbbbbb", "--diff")
	if code != ExitOK || !strings.Contains(out, "diff:\nno diff.patch for this run (host mode, or the export never ran)\n") {
		t.Errorf("--diff without any: exit %d\n%s", code, out)
	}
	md := filepath.Join(t.TempDir(), "r.md")
	out, _, code = runMain(t, "runs", "show", "fix-the-flag-0102040506-bbbbbbbb", "--markdown", "--out", md)
	data, _ := os.ReadFile(md)
	if code != ExitOK || out != "wrote "+md+"\n" || !strings.HasPrefix(string(data), "# fix-the-flag-0102040506-bbbbbbbb\n") {
		t.Errorf("--markdown --out: exit %d %q\n%s", code, out, data)
	}
}

func TestRunsVerdictRecordsAndRefuses(t *testing.T) {
	root := runsHome(t)
	dir := putRun(t, root, "judged", transcript.Record{"status": "completed", "ended": "2026-01-02T03:04:05+00:00"})
	out, errOut, code := runMain(t, "runs", "verdict", "judged", "reject", "--note", "wrong file", "--review-seconds", "12")
	if code != ExitOK || out != "recorded verdict 'reject' for 'judged'\n" {
		t.Fatalf("exit %d %q %q", code, out, errOut)
	}
	rec, err := transcript.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := rec.String("verdict"); v != "reject" {
		t.Errorf("verdict %v", rec["verdict"])
	}
	if n, _ := rec.String("note"); n != "wrong file" {
		t.Errorf("note %v", rec["note"])
	}
	if _, ok := rec["time_to_verdict_s"]; !ok {
		t.Error("no time_to_verdict_s")
	}
	if r, _ := rec.String("reviewer"); r == "" {
		t.Error("no reviewer")
	}
	if _, _, code := runMain(t, "runs", "verdict", "judged", "maybe"); code != ExitUsage {
		t.Errorf("bad verdict: exit %d", code)
	}
	if _, _, code := runMain(t, "runs", "verdict", "nope", "accept"); code != ExitUsage {
		t.Errorf("unknown run: exit %d", code)
	}
	if _, _, code := runMain(t, "runs", "verdict", "judged", "accept", "--review-seconds", "-1"); code != ExitUsage {
		t.Errorf("negative review seconds: exit %d", code)
	}
}

func TestRunsCleanActionLinesAndExitCodes(t *testing.T) {
	root := runsHome(t)
	putRun(t, root, "gone-0102030405-dddddddd", transcript.Record{"status": "completed"})
	out, errOut, code := runMain(t, "runs", "clean", "gone-0102030405-dddddddd")
	if code != ExitOK || out != "removed-rundir: "+filepath.Join(root, "gone-0102030405-dddddddd")+"\n" {
		t.Errorf("exit %d %q %q", code, out, errOut)
	}
	out, _, code = runMain(t, "runs", "clean", "gone-0102030405-dddddddd")
	if code != ExitRunNotCompleted || !strings.HasPrefix(out, "skip: no such run") {
		t.Errorf("unknown run: exit %d %q", code, out)
	}
	if _, _, code := runMain(t, "runs", "clean"); code != ExitUsage {
		t.Errorf("neither slug nor --all: exit %d", code)
	}
	if _, _, code := runMain(t, "runs", "clean", "x", "--all"); code != ExitUsage {
		t.Errorf("both: exit %d", code)
	}
	if out, _, code := runMain(t, "runs", "clean", "../victim", "--force"); code != ExitRunNotCompleted || !strings.HasPrefix(out, "skip: invalid run slug") {
		t.Errorf("bad slug: exit %d %q", code, out)
	}
}

// A real run, then the review loop from the command line: show, accept
// with a warning, merge into the branch it started from.
func TestRunThenAcceptAndMergeFromTheCommandLine(t *testing.T) {
	e := newE2E(t, `{"turns":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"notes/new.txt","content":"hello\n"}},
		               {"name":"write_file","arguments":{"path":".github/workflows/ci.yml","content":"on: push\n"}}]},
		{"finish":"added a note"}]}`)
	payload, stderr, code := e.run("add a note\n\nmore words")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	slug := filepath.Base(payload["run_dir"].(string))
	env := []string{"DIRTYWORK_HOME=" + e.home}
	cli := func(args ...string) (string, string, int) {
		t.Helper()
		out, errOut, code, err := runCLIProcess(t, "", env, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out, errOut, code
	}
	rec, err := transcript.ReadRecord(payload["run_dir"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := rec.String("base_branch"); b != "main" {
		t.Errorf("base_branch %v", rec["base_branch"])
	}
	out, errOut, code := cli("runs", "show", slug, "--diff")
	if code != 0 || !strings.Contains(out, "+hello") || !strings.Contains(out, "warning: .github/workflows/ci.yml") {
		t.Fatalf("show --diff: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli("runs", "accept", slug, "--json")
	if code != 0 || !strings.Contains(errOut, "warning: .github/workflows/ci.yml: a CI workflow") || !strings.Contains(out, `"warnings":[{"path":".github/workflows/ci.yml"`) {
		t.Fatalf("accept: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli("runs", "merge", slug)
	if code != 0 || !strings.Contains(out, "into main: fast-forward") {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := gitOut(t, e.repo, "show", "main:notes/new.txt"); got != "hello\n" && got != "hello" {
		t.Errorf("main lacks the note: %q", got)
	}
	if subject := gitOut(t, e.repo, "log", "-1", "--format=%s", "main"); strings.TrimSpace(subject) != "add a note" {
		t.Errorf("subject %q", subject)
	}
	out, _, code = cli("runs", "clean", slug)
	if code != 0 || !strings.Contains(out, "removed-worktree: ") || !strings.Contains(out, "removed-branch: ") {
		t.Errorf("clean after merge: exit %d\n%s", code, out)
	}
}

// Cleaning with --force is idempotent: a run clean already removed is gone,
// which is what was asked (exit 0). A slug that never was a run stays an
// error, and without --force a removed run is still 0.9.1's skip.
func TestRunsCleanForceOfARunAlreadyCleaned(t *testing.T) {
	root := runsHome(t)
	slug := "twice-0102030405-eeeeeeee"
	dir := filepath.Join(root, slug)
	putRun(t, root, slug, transcript.Record{"status": "completed"})
	if out, errOut, code := runMain(t, "runs", "clean", slug, "--force"); code != ExitOK || out != "removed-rundir: "+dir+"\n" {
		t.Fatalf("first clean: exit %d %q %q", code, out, errOut)
	}
	out, errOut, code := runMain(t, "runs", "clean", slug, "--force")
	if code != ExitOK || !strings.HasPrefix(out, "absent-rundir: "+dir+" (cleaned already, at ") || strings.Count(out, "\n") != 1 {
		t.Errorf("second clean --force: exit %d %q %q", code, out, errOut)
	}
	if out, _, code := runMain(t, "runs", "clean", slug); code != ExitRunNotCompleted || !strings.HasPrefix(out, "skip: no such run") {
		t.Errorf("second clean without --force: exit %d %q", code, out)
	}
	if out, _, code := runMain(t, "runs", "clean", "never-0102030405-ffffffff", "--force"); code != ExitRunNotCompleted || !strings.HasPrefix(out, "skip: no such run 'never-0102030405-ffffffff'") {
		t.Errorf("a slug that never was: exit %d %q", code, out)
	}
	if out, _, code := runMain(t, "runs", "list", "--json"); code != ExitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("runs list after the clean: exit %d %q", code, out)
	}
}

// Refusals whose 0.9.1 wording is as clear as ours keep 0.9.1's words
// (docs/compatibility.md lists the others, with both texts).
func TestRunsRefusalsIn091Words(t *testing.T) {
	root := runsHome(t)
	putRun(t, root, "words-0102030405-aaaaaaaa", transcript.Record{"status": "completed"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "show", "words-0102030405-aaaaaaaa", "--out", "x.md"}, "error: --out requires --markdown\n"},
		{[]string{"runs", "clean"}, "error: 'runs clean' needs a slug or --all\n"},
		{[]string{"runs", "clean", "words-0102030405-aaaaaaaa", "--all"}, "error: 'runs clean' takes a slug or --all, not both\n"},
	} {
		if _, errOut, code := runMain(t, tc.args...); code != ExitUsage || !strings.HasPrefix(errOut, tc.want) {
			t.Errorf("%s: exit %d %q, want exit 2 %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}
