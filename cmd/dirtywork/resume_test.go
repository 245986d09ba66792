package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/transcript"
)

// appendScript appends a line to log.txt, then finishes: every run (each
// starts the script from its first turn) adds one line to the tree it works
// on, so the lines count the runs that worked on that tree.
const appendScript = `{"turns":[
	{"tool_calls":[{"name":"bash","arguments":{"command":"echo line >> log.txt"}}]},
	{"finish":"appended"}
]}`

// resume runs dirtywork resume with the scripted model and returns the
// parsed stdout object (nil when none), stderr and the exit code.
func (e *e2e) resume(args ...string) (map[string]any, string, int) {
	e.t.Helper()
	args = append([]string{"resume", "--base-url", e.base, "--context-window", "32768"}, args...)
	out, errOut, code, err := runCLIProcess(e.t, "", []string{"DIRTYWORK_HOME=" + e.home}, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	if out == "" {
		return nil, errOut, code
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out), &payload); err != nil {
		e.t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	return payload, errOut, code
}

// userTask is the task text of the last chat request: its first user message.
func (e *e2e) userTask() string {
	e.t.Helper()
	reqs := e.srv.ChatRequests()
	if len(reqs) == 0 {
		e.t.Fatal("no chat request")
	}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "user" && m.Content != nil {
			return *m.Content
		}
	}
	e.t.Fatal("no user message")
	return ""
}

func TestResumeHostMode(t *testing.T) {
	e := newE2E(t, appendScript)
	first, stderr, code := e.run("--max-turns", "1", "append a line to the log")
	if code != 1 || first["status"] != "max_turns" {
		t.Fatalf("first run: exit %d, %v\n%s", code, first, stderr)
	}
	firstSlug := filepath.Base(first["run_dir"].(string))
	wt := first["worktree"].(string)

	second, stderr, code := e.resume(firstSlug)
	if code != 0 || second["status"] != "completed" {
		t.Fatalf("resume: exit %d, %v\n%s", code, second, stderr)
	}
	if second["worktree"] != wt || second["branch"] != first["branch"] || second["base_commit"] != first["base_commit"] {
		t.Fatalf("the resume works elsewhere: %v on %v from %v", second["worktree"], second["branch"], second["base_commit"])
	}
	if second["resumed_from"] != firstSlug {
		t.Fatalf("resumed_from %v, want %s", second["resumed_from"], firstSlug)
	}
	secondSlug := filepath.Base(second["run_dir"].(string))
	if !strings.HasPrefix(secondSlug, "append-a-line-to-the-") {
		t.Fatalf("new slug %q is not made from the prior task", secondSlug)
	}
	if data, err := os.ReadFile(filepath.Join(wt, "log.txt")); err != nil || string(data) != "line\nline\n" {
		t.Fatalf("log.txt = %q, %v: the resume did not continue the prior tree", data, err)
	}
	task := e.userTask()
	for _, want := range []string{
		"append a line to the log\n\n--- RESUMED RUN ---\n",
		"ended with status 'max_turns' after 1 turns",
		"`git status`", "`git diff`",
		"assistant:  [tools: bash]", "tool_result bash: ", "run_end: max_turns",
		"call finish(summary=...).",
	} {
		if !strings.Contains(task, want) {
			t.Errorf("resumed task lacks %q:\n%s", want, task)
		}
	}
	prior, err := transcript.ReadRecord(first["run_dir"].(string))
	if err != nil || prior["resumed_by"] != secondSlug || prior["status"] != "max_turns" {
		t.Fatalf("prior run.json: resumed_by %v status %v (%v)", prior["resumed_by"], prior["status"], err)
	}
	rec, err := transcript.ReadRecord(second["run_dir"].(string))
	if err != nil || rec["resumed_from"] != firstSlug || rec["feedback"] != nil || rec["worktree"] != wt {
		t.Fatalf("new run.json: %v (%v)", rec, err)
	}
	evs := events(t, second["transcript"].(string))
	if evs[0]["resumed_from"] != firstSlug || !strings.Contains(evs[0]["task"].(string), "--- RESUMED RUN ---") {
		t.Fatalf("run_start %v", evs[0])
	}

	// A completed run takes feedback, here from a file given by run dir;
	// the task is cut at the earlier marker, not stacked.
	fb := filepath.Join(t.TempDir(), "feedback.md")
	if err := os.WriteFile(fb, []byte("Please also sort the log.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	third, stderr, code := e.resume(second["run_dir"].(string), "--feedback-file", fb)
	if code != 0 || third["status"] != "completed" || third["resumed_from"] != secondSlug {
		t.Fatalf("feedback resume: exit %d, %v\n%s", code, third, stderr)
	}
	task = e.userTask()
	if strings.Count(task, "--- RESUMED RUN") != 1 ||
		!strings.HasPrefix(task, "append a line to the log\n\n--- RESUMED RUN: REVIEW FEEDBACK ---\n") ||
		!strings.Contains(task, "ended with status 'completed' after 2 turns") ||
		!strings.Contains(task, "Please also sort the log.\n") || !strings.Contains(task, "apply only what the feedback asks") {
		t.Fatalf("feedback task:\n%s", task)
	}
	rec, _ = transcript.ReadRecord(third["run_dir"].(string))
	if rec["feedback"] != "Please also sort the log.\n" {
		t.Fatalf("feedback recorded as %v", rec["feedback"])
	}
	if data, _ := os.ReadFile(filepath.Join(wt, "log.txt")); string(data) != "line\nline\nline\n" {
		t.Fatalf("log.txt = %q after the third run", data)
	}
	// The resumes held the prior runs alive while they ran, and let go.
	for _, dir := range []string{first["run_dir"].(string), second["run_dir"].(string)} {
		if alive, err := transcript.IsAlive(dir); err != nil || alive {
			t.Fatalf("%s alive=%v after its resume ended (%v)", dir, alive, err)
		}
	}
}

// TestResumeRefusals: every refusal of RE-2, RE-3 and RE-4, each exit 2
// with nothing created and the prior run's record and tree untouched.
func TestResumeRefusals(t *testing.T) {
	e := newE2E(t, appendScript)
	done, _, code := e.run("append a line to the log")
	if code != 0 {
		t.Fatalf("setup run: exit %d", code)
	}
	doneSlug := filepath.Base(done["run_dir"].(string))
	stopped, _, _ := e.run("--max-turns", "1", "append a line to the log")
	stoppedSlug := filepath.Base(stopped["run_dir"].(string))
	stoppedWT := stopped["worktree"].(string)

	// Records made by hand for the RE-2 and RE-4 cases.
	base := gitOut(t, e.repo, "rev-parse", "HEAD")
	full := func(slug string, over map[string]any) transcript.Record {
		rec := transcript.Record{
			"slug": slug, "repo": e.repo, "worktree": stoppedWT, "branch": stopped["branch"],
			"base_commit": base, "sandbox": "none", "status": "max_turns", "task": "t", "model": scripted.DefaultModel,
		}
		for k, v := range over {
			if v == nil {
				delete(rec, k)
			} else {
				rec[k] = v
			}
		}
		return rec
	}
	noBase := "nobase-0101000000-00000001"
	e.record(noBase, full(noBase, map[string]any{"base_commit": nil}))
	noTask := "notask-0101000000-00000002"
	e.record(noTask, full(noTask, map[string]any{"task": nil}))
	gone := "gone-0101000000-00000003"
	e.record(gone, full(gone, map[string]any{"worktree": filepath.Join(e.repo, ".worktrees", "dw-gone")}))
	plain := t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, ".git"), []byte("gitdir: "+filepath.Join(e.repo, ".git")), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := "foreign-0101000000-00000004"
	e.record(foreign, full(foreign, map[string]any{"worktree": plain}))
	badBase := "badbase-0101000000-00000005"
	e.record(badBase, full(badBase, map[string]any{"base_commit": strings.Repeat("e", 40)}))
	dockerRun := "docker-0101000000-00000007"
	e.record(dockerRun, full(dockerRun, map[string]any{"sandbox": "docker"}))
	live := "live-0101000000-00000006"
	liveDir := e.record(live, full(live, nil))
	lock, err := transcript.AcquireLiveness(liveDir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()

	long := strings.Repeat("x", 64001)
	fb := filepath.Join(t.TempDir(), "fb.txt")
	if err := os.WriteFile(fb, []byte("fix it"), 0o600); err != nil {
		t.Fatal(err)
	}
	stash := stoppedWT + ".pre-resume-other-0101000000-00000009"

	cases := []struct {
		name  string
		args  []string
		want  string
		setup func()
	}{
		{"invalid slug", []string{"bad slug!"}, "invalid run slug 'bad slug!'", nil},
		{"unknown slug", []string{"no-such-run"}, "no such run 'no-such-run'", nil},
		{"no run dir at a path", []string{filepath.Join(t.TempDir(), "nope")}, "no run directory at", nil},
		{"missing key", []string{noBase}, "run.json of '" + noBase + "' is missing 'base_commit'", nil},
		{"no task and no run_start", []string{noTask}, "the transcript has no run_start", nil},
		{"live run", []string{live}, "is still in progress; it must end before resuming its work", nil},
		{"missing worktree", []string{gone}, "is missing; nothing to resume", nil},
		{"not a linked worktree", []string{foreign}, "is not a linked worktree of", nil},
		{"pre-resume stash", []string{stoppedSlug}, "a pre-resume stash is beside its worktree: " + stash, func() {
			if err := os.Mkdir(stash, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"other provider", []string{stoppedSlug, "--provider", "anthropic"}, "a resume cannot switch to anthropic", func() {
			_ = os.Remove(stash)
		}},
		{"both feedbacks", []string{stoppedSlug, "--feedback", "a", "--feedback-file", fb}, "give --feedback or --feedback-file, not both", nil},
		{"unreadable feedback file", []string{stoppedSlug, "--feedback-file", filepath.Join(plain, "none")}, "cannot read the feedback file", nil},
		{"feedback too long", []string{stoppedSlug, "--feedback", long}, "the feedback is 64001 characters; at most 64000 are allowed", nil},
		{"completed without feedback", []string{doneSlug}, "run '" + doneSlug + "' completed; resuming it needs reviewer feedback", nil},
		{"base not a commit", []string{badBase}, "its base commit " + strings.Repeat("e", 40) + " is not a commit", nil},
		{"carried flag", []string{stoppedSlug, "--repo", e.repo}, "unknown flag: --repo", nil},
		{"docker preflight", []string{dockerRun}, "(a docker run is resumed in the docker sandbox)", nil},
		{"allow-commit with docker", []string{dockerRun, "--allow-commit"}, "--allow-commit requires --sandbox none: docker export carries files, not commits", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			runsBefore, _ := os.ReadDir(filepath.Join(e.home, "runs"))
			recBefore, _ := os.ReadFile(filepath.Join(stopped["run_dir"].(string), "run.json"))
			logBefore, _ := os.ReadFile(filepath.Join(stoppedWT, "log.txt"))
			out, stderr, code := e.resume(tc.args...)
			if code != 2 || out != nil || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %v, stderr %q; want exit 2 naming %q", code, out, stderr, tc.want)
			}
			runsAfter, _ := os.ReadDir(filepath.Join(e.home, "runs"))
			if len(runsAfter) != len(runsBefore) {
				t.Fatalf("a refused resume made a run dir: %d -> %d", len(runsBefore), len(runsAfter))
			}
			recAfter, _ := os.ReadFile(filepath.Join(stopped["run_dir"].(string), "run.json"))
			logAfter, _ := os.ReadFile(filepath.Join(stoppedWT, "log.txt"))
			if string(recAfter) != string(recBefore) || string(logAfter) != string(logBefore) {
				t.Fatalf("a refused resume touched the prior run")
			}
		})
	}
	if _, err := os.Stat(stash); err == nil {
		t.Fatal("stash left by the test")
	}
	// And after all that, the stopped run still resumes.
	if out, stderr, code := e.resume(stoppedSlug); code != 0 || out["status"] != "completed" {
		t.Fatalf("resume after the refusals: exit %d %v\n%s", code, out, stderr)
	}
}

// TestResumeTakesTheInheritedFlags: resume takes --verify, --verify-rounds,
// --verify-timeout and --allow-commit as 0.9.1 did. Without them the new run
// has the resumed run's recorded values; given, they override those (an
// empty --verify turns verify off); run.json records what the run used.
func TestResumeTakesTheInheritedFlags(t *testing.T) {
	e := newE2E(t, appendScript)
	first, stderr, code := e.run("--max-turns", "1", "--verify", "test -f log.txt", "--verify-rounds", "2", "--verify-timeout", "60",
		"append a line to the log")
	if code != 1 || first["status"] != "max_turns" {
		t.Fatalf("first run: exit %d, %v\n%s", code, first, stderr)
	}
	recorded := func(payload map[string]any) transcript.Record {
		t.Helper()
		rec, err := transcript.ReadRecord(payload["run_dir"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	check := func(what string, rec transcript.Record, verify any, rounds, timeout int, allow bool) {
		t.Helper()
		if rec["verify_command"] != verify || rec["verify_rounds"] != json.Number(fmt.Sprint(rounds)) ||
			rec["verify_timeout"] != json.Number(fmt.Sprint(timeout)) || rec["allow_commit"] != allow {
			t.Errorf("%s: run.json verify_command %v, verify_rounds %v, verify_timeout %v, allow_commit %v; want %v, %d, %d, %v",
				what, rec["verify_command"], rec["verify_rounds"], rec["verify_timeout"], rec["allow_commit"], verify, rounds, timeout, allow)
		}
	}
	check("first run", recorded(first), "test -f log.txt", 2, 60, false)

	// Nothing given: the resumed run's settings.
	inherited, stderr, code := e.resume(filepath.Base(first["run_dir"].(string)))
	if code != 0 || inherited["status"] != "completed" {
		t.Fatalf("resume: exit %d, %v\n%s", code, inherited, stderr)
	}
	if v, _ := inherited["verify"].(map[string]any); v == nil || v["command"] != "test -f log.txt" || v["passed"] != true {
		t.Errorf("the inherited verify did not run: %v", inherited["verify"])
	}
	check("inheriting resume", recorded(inherited), "test -f log.txt", 2, 60, false)

	// Given: they override, and the next resume inherits them.
	given, stderr, code := e.resume(filepath.Base(inherited["run_dir"].(string)), "--feedback", "check again",
		"--verify", "test -f nothing-here", "--verify-rounds", "0", "--verify-timeout", "30", "--allow-commit")
	if code != 1 || given["status"] != "verify_failed" {
		t.Fatalf("resume with flags: exit %d, %v\n%s", code, given, stderr)
	}
	if v, _ := given["verify"].(map[string]any); v == nil || v["command"] != "test -f nothing-here" {
		t.Errorf("--verify did not override: %v", given["verify"])
	}
	check("resume with flags", recorded(given), "test -f nothing-here", 0, 30, true)

	off, stderr, code := e.resume(filepath.Base(given["run_dir"].(string)), "--verify", "")
	if code != 0 || off["status"] != "completed" || off["verify"] != nil {
		t.Fatalf("resume with an empty --verify: exit %d, %v\n%s", code, off, stderr)
	}
	check("resume with an empty --verify", recorded(off), nil, 0, 30, true)
}
