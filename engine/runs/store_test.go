package runs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

func TestListReadsEveryRunAndKeepsBrokenOnes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addRun("b-run", map[string]any{"status": "max_turns", "turns": 7, "files_changed": []string{"x.go"}, "worktree_files": 12})
	e.addRun("a-run", map[string]any{"status": 5}) // wrong type: a warning, not a failure
	bad := filepath.Join(e.root, "c-bad")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(bad, "run.json"), "[1, 2]")
	if err := os.Mkdir(filepath.Join(e.root, "d-empty"), 0o700); err != nil { // no run.json: not a run
		t.Fatal(err)
	}
	if err := os.Symlink(bad, filepath.Join(e.root, "e-link")); err != nil { // a symlink is never a run dir
		t.Fatal(err)
	}

	runs, err := e.store.List(t.Context(), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var slugs []string
	for _, r := range runs {
		slugs = append(slugs, r.Slug)
	}
	if got, want := slugs, []string{"a-run", "b-run", "c-bad"}; !equal(got, want) {
		t.Fatalf("slugs = %v, want %v", got, want)
	}
	if runs[0].Err != nil || runs[0].Warning == "" || runs[0].Record.Slug != "a-run" {
		t.Errorf("a-run: err %v warning %q slug %q", runs[0].Err, runs[0].Warning, runs[0].Record.Slug)
	}
	b := runs[1].Record
	if b.Status != transcript.StatusMaxTurns || b.Turns == nil || *b.Turns != 7 || b.WorktreeFiles != 12 || !equal(b.FilesChanged, []string{"x.go"}) {
		t.Errorf("b-run decoded as %+v", b)
	}
	if !errors.Is(runs[2].Err, transcript.ErrCorruptRecord) {
		t.Errorf("c-bad: err = %v, want a corrupt record", runs[2].Err)
	}
}

func TestGetRefusesBadAndUnknownSlugs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, slug := range []string{"../escape", "/etc", ".", "..", "a/b", "", "-x"} {
		if _, err := e.store.Get(slug); !errors.Is(err, ErrInvalidSlug) {
			t.Errorf("Get(%q) = %v, want an invalid slug", slug, err)
		}
	}
	if _, err := e.store.Get("nope"); !errors.Is(err, ErrNoSuchRun) {
		t.Errorf("Get(nope) = %v, want no such run", err)
	}
}

func TestAliveOnlyWhileTheLockIsHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.addRun("live", map[string]any{"status": "running", "host_pid": os.Getpid()})
	run, err := e.store.Get("live")
	if err != nil {
		t.Fatal(err)
	}
	if run.Alive || !run.Crashed() {
		t.Fatalf("without the lock: alive %v crashed %v, want false true (host_pid is never a liveness test)", run.Alive, run.Crashed())
	}
	lock, err := transcript.AcquireLiveness(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run, _ = e.store.Get("live"); !run.Alive || run.Crashed() {
		t.Fatalf("with the lock held: alive %v crashed %v", run.Alive, run.Crashed())
	}
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	if run, _ = e.store.Get("live"); run.Alive {
		t.Fatal("alive after the lock was released")
	}
}

func TestLeftoversAskTheDaemonOncePerCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	e.addLaneRun(repo, "one", map[string]any{"container": "dw-one", "volume": "dw-one-work", "sandbox": "docker"})
	e.addLaneRun(repo, "two", map[string]any{"container": "dw-two", "volume": "dw-two-work", "sandbox": "docker"})
	git(t, repo, "worktree", "remove", "--force", filepath.Join(repo, ".worktrees", "dw-two"))
	e.docker.addContainer("dw-one", "exited", "one", repo)
	e.docker.addVolume("dw-one-work", "one", repo)
	e.docker.addVolume("dw-one-tools", "one", repo)

	runs, err := e.store.List(t.Context(), ListOptions{Leftovers: true})
	if err != nil {
		t.Fatal(err)
	}
	if e.docker.lists != 1 {
		t.Errorf("%d daemon listings for 2 runs, want 1", e.docker.lists)
	}
	one, two := runs[0].Leftovers, runs[1].Leftovers
	if one.Worktree != Present || one.Branch != Present || one.Container != "exited" || one.Volume != Present || !equal(one.OtherObjects, []string{"dw-one-tools"}) {
		t.Errorf("one: %+v", one)
	}
	if two.Worktree != Absent || two.Branch != Present || two.Container != "" || two.Volume != Absent {
		t.Errorf("two: %+v", two)
	}

	e.docker.down = errors.New("daemon down")
	runs, _ = e.store.List(t.Context(), ListOptions{Leftovers: true})
	if l := runs[0].Leftovers; l.DockerErr == nil || l.Container != "" || l.Volume != Unknown {
		t.Errorf("daemon down: %+v", l)
	}
}

func TestWatchSeesRunsOfOtherProcesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addRun("old", nil)
	ch, err := e.store.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	next := func(want EventKind, slug string) Event {
		t.Helper()
		// A liveness bound only: the events come from fsnotify and the
		// liveness tick, the rescan catches the rest.
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev := <-ch:
				if ev.Kind == want && ev.Slug == slug {
					return ev
				}
			case <-timeout:
				t.Fatalf("no %v event for %s within 30 s", want, slug)
			}
		}
	}
	next(RunAdded, "old")

	dir := e.addRun("new", map[string]any{"status": "running"})
	next(RunAdded, "new")
	lock, err := transcript.AcquireLiveness(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(RunChanged, "new"); !ev.Run.Alive {
		t.Error("liveness taken, but the run is not alive")
	}
	if _, err := transcript.MergeRecord(dir, transcript.Record{"status": "completed"}); err != nil {
		t.Fatal(err)
	}
	if ev := next(RunChanged, "new"); ev.Run.Record.Status != transcript.StatusCompleted {
		t.Errorf("status %q after the end was written", ev.Run.Record.Status)
	}
	// A crash drops the lock without any file event.
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	if ev := next(RunChanged, "new"); ev.Run.Alive {
		t.Error("still alive after the lock was dropped")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	next(RunRemoved, "new")
}

func TestVerdictWritesTheFieldsAndKeepsUnknownKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := time.Date(2026, 1, 2, 4, 4, 5, 0, time.UTC)
	e.store = Open(e.root, WithDocker(e.docker), WithClock(func() time.Time { return now }))
	dir := e.addRun("judged", map[string]any{"ended": "2026-01-02T03:04:05", "future_key": map[string]any{"x": 1}})
	note, secs := "looks right", 42.5
	res, err := e.store.Verdict(t.Context(), "judged", VerdictOptions{Verdict: transcript.VerdictAccept, Note: &note, ReviewSeconds: &secs, Reviewer: "rita"})
	if err != nil {
		t.Fatal(err)
	}
	if res.TimeToVerdictS == nil || *res.TimeToVerdictS != 3600 {
		t.Errorf("time_to_verdict_s = %v, want 3600 (a naive ended is UTC)", res.TimeToVerdictS)
	}
	rec := readJSON(t, filepath.Join(dir, "run.json"))
	for k, want := range map[string]any{
		"verdict": "accept", "note": "looks right", "review_seconds": 42.5,
		"time_to_verdict_s": 3600.0, "reviewer": "rita", "verdict_at": "2026-01-02T04:04:05.000000+00:00",
	} {
		if rec[k] != want {
			t.Errorf("%s = %v, want %v", k, rec[k], want)
		}
	}
	if _, ok := rec["future_key"]; !ok {
		t.Error("an unknown key was lost")
	}

	e.addRun("unended", nil)
	res, err = e.store.Verdict(t.Context(), "unended", VerdictOptions{Verdict: transcript.VerdictReject})
	if err != nil || res.TimeToVerdictS != nil {
		t.Errorf("no ended: %v, %v; want null", res, err)
	}
	if _, err := e.store.Verdict(t.Context(), "nope", VerdictOptions{Verdict: transcript.VerdictReject}); !errors.Is(err, ErrNoSuchRun) {
		t.Errorf("unknown slug: %v", err)
	}
	if _, err := e.store.Verdict(t.Context(), "unended", VerdictOptions{Verdict: "maybe"}); err == nil {
		t.Error("a verdict that is none of accept, reject, cleanup was recorded")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
