package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

// oldRun makes what dirtywork 0.9.1 left of a run: a worktree made with
// plain git worktree add (no lane manifest entry) and a run.json. It
// returns the worktree. noCheckout leaves the worktree without files.
func (e *e2e) oldRun(slug string, noCheckout bool) string {
	e.t.Helper()
	wt := filepath.Join(e.repo, ".worktrees", "dw-"+slug)
	args := []string{"worktree", "add", "-q"}
	if noCheckout {
		args = append(args, "--no-checkout")
	}
	gitOut(e.t, e.repo, append(args, "-b", "dirtywork/"+slug, wt)...)
	e.record(slug, transcript.Record{
		"slug": slug, "repo": e.repo, "worktree": wt, "branch": "dirtywork/" + slug,
		"base_commit": gitOut(e.t, e.repo, "rev-parse", "HEAD"), "status": "completed", "sandbox": "none",
		"task": "old task", "model": "m", "provider": "openai", "host_pid": 1,
	})
	return wt
}

// record writes a run dir with rec as its run.json.
func (e *e2e) record(slug string, rec transcript.Record) string {
	e.t.Helper()
	dir := filepath.Join(e.home, "runs", slug)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := transcript.WriteRecord(dir, rec); err != nil {
		e.t.Fatal(err)
	}
	return dir
}

func TestBranchFromARunWithoutALane(t *testing.T) {
	e := newE2E(t, `{"turns":[{"finish":"ok"}]}`)
	if err := os.MkdirAll(filepath.Join(e.home, "runs"), 0o700); err != nil {
		t.Fatal(err)
	}
	wt := e.oldRun("old-run-0101000000-abcdef01", false)
	if err := os.WriteFile(filepath.Join(wt, "work.txt"), []byte("done by 0.9.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := e.run("--branch-from", "@old-run-0101000000-abcdef01", "continue")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "(from @old-run-0101000000-abcdef01)") {
		t.Fatalf("no snapshot line:\n%s", stderr)
	}
	data, err := os.ReadFile(filepath.Join(out["worktree"].(string), "work.txt"))
	if err != nil || string(data) != "done by 0.9.1\n" {
		t.Fatalf("new run does not hold the old run's work: %q %v", data, err)
	}
}

// TestBranchFromGuards: every RE-4 refusal and the empty-tree refusal, each
// exit 2 with nothing created and nothing of the prior run touched.
func TestBranchFromGuards(t *testing.T) {
	e := newE2E(t, `{"turns":[{"finish":"ok"}]}`)
	if err := os.MkdirAll(filepath.Join(e.home, "runs"), 0o700); err != nil {
		t.Fatal(err)
	}
	alive := "alive-run-0101000000-00000001"
	e.oldRun(alive, false)
	lock, err := transcript.AcquireLiveness(filepath.Join(e.home, "runs", alive))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release() })

	stashed := "stash-run-0101000000-00000002"
	stashWT := e.oldRun(stashed, false)
	stash := stashWT + ".pre-resume-newer-0101000000-00000009"
	if err := os.Mkdir(stash, 0o700); err != nil {
		t.Fatal(err)
	}

	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plain, ".git"), []byte("gitdir: "+filepath.Join(e.repo, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := "foreign-run-0101000000-00000003"
	e.record(foreign, transcript.Record{
		"slug": foreign, "repo": e.repo, "worktree": plain, "branch": "dirtywork/" + foreign, "status": "completed",
	})

	empty := "empty-run-0101000000-00000004"
	e.oldRun(empty, true)

	noGit := "nogit-run-0101000000-00000005"
	e.record(noGit, transcript.Record{
		"slug": noGit, "repo": e.repo, "worktree": t.TempDir(), "branch": "dirtywork/" + noGit, "status": "completed",
	})

	for name, tc := range map[string]struct{ slug, want string }{
		"live run":        {alive, "run '" + alive + "' is still in progress; it must end before snapshotting its work"},
		"stash":           {stashed, "a pre-resume stash is beside its worktree: " + stash},
		"not linked":      {foreign, "is not a linked worktree of " + e.repo},
		"no .git":         {noGit, "is missing; nothing to snapshot"},
		"empty over head": {empty, "empty tree"},
	} {
		t.Run(name, func(t *testing.T) {
			before, _ := os.ReadDir(filepath.Join(e.repo, ".worktrees"))
			head := gitOut(t, e.repo, "rev-parse", "HEAD")
			out, stderr, code := e.run("--branch-from", "@"+tc.slug, "continue")
			if code != 2 || out != nil || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %v, stderr %q; want exit 2 naming %q", code, out, stderr, tc.want)
			}
			after, _ := os.ReadDir(filepath.Join(e.repo, ".worktrees"))
			if len(after) != len(before) {
				t.Fatalf("a refused run changed .worktrees: %d -> %d entries", len(before), len(after))
			}
			if tc.slug != foreign && tc.slug != noGit {
				if got := gitOut(t, e.repo, "rev-parse", "dirtywork/"+tc.slug); got != head {
					t.Fatalf("the prior branch moved to %s", got)
				}
			}
		})
	}
	if _, err := os.Stat(stash); err != nil {
		t.Fatalf("the stash was touched: %v", err)
	}
}
