package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dirtywork/dirtywork/engine/runs"
	"github.com/dirtywork/dirtywork/transcript"
)

// Four runs on one repository, five rounds, with verdicts landing over and
// over while each run writes its end: no git error, no run.json field lost.
func TestFourRunsFiveRoundsWithVerdictsLandingAtTheirEnd(t *testing.T) {
	e := newE2E(t, `{"turns":[
		{"tool_calls":[{"name":"write_file","arguments":{"path":"notes/out.txt","content":"done\n"}}]},
		{"finish":"wrote the note"}]}`)
	root := filepath.Join(e.home, "runs")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	store := runs.Open(root)
	const perRound, rounds = 4, 5
	for round := range rounds {
		var wg sync.WaitGroup
		var done atomic.Bool
		verdicts := map[string]int{}
		var mu sync.Mutex
		// The reviewer: records a verdict on every run it can see, as fast
		// as it can, until the round's runs have all exited.
		wg.Go(func() {
			for !done.Load() {
				entries, _ := os.ReadDir(root)
				for _, en := range entries {
					if _, err := os.Stat(filepath.Join(root, en.Name(), transcript.RecordName)); err != nil {
						continue
					}
					if _, err := store.Verdict(t.Context(), en.Name(), runs.VerdictOptions{Verdict: transcript.VerdictReject, Reviewer: "racer"}); err == nil {
						mu.Lock()
						verdicts[en.Name()]++
						mu.Unlock()
					}
				}
			}
		})
		type result struct {
			payload map[string]any
			stderr  string
			code    int
		}
		results := make([]result, perRound)
		var runsWG sync.WaitGroup
		for i := range perRound {
			runsWG.Go(func() {
				p, stderr, code := e.run()
				results[i] = result{p, stderr, code}
			})
		}
		runsWG.Wait()
		done.Store(true)
		wg.Wait()
		mu.Lock()
		landed := len(verdicts)
		mu.Unlock()
		if landed < perRound {
			t.Errorf("round %d: verdicts landed on %d runs, want all %d (the race was not run)", round, landed, perRound)
		}
		for i, r := range results {
			if r.code != 0 || r.payload == nil {
				t.Fatalf("round %d run %d: exit %d\n%s", round, i, r.code, r.stderr)
			}
			if strings.Contains(r.stderr, "fatal:") || strings.Contains(r.stderr, "index.lock") {
				t.Errorf("round %d run %d: git error\n%s", round, i, r.stderr)
			}
			dir := r.payload["run_dir"].(string)
			rec, err := transcript.ReadRecord(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{
				"status", "turns", "ended", "files_changed", "diff_stat", "export_status", "usage",
				"slug", "repo", "worktree", "branch", "base_commit", "task", "started", "host_pid",
			} {
				if _, ok := rec[k]; !ok {
					t.Errorf("round %d %s: run.json lost %q", round, filepath.Base(dir), k)
				}
			}
			if s, _ := rec.String("status"); s != "completed" {
				t.Errorf("round %d %s: status %q", round, filepath.Base(dir), s)
			}
			// The last verdict may have landed before or after the end; the
			// record must have it, whichever it was.
			if v, _ := rec.String("verdict"); v != "reject" {
				mu.Lock()
				n := verdicts[filepath.Base(dir)]
				mu.Unlock()
				if n > 0 {
					t.Errorf("round %d %s: %d verdicts recorded, but run.json has verdict %q", round, filepath.Base(dir), n, v)
				}
			}
		}
	}
	list, err := store.List(t.Context(), runs.ListOptions{Leftovers: true})
	if err != nil || len(list) != perRound*rounds {
		t.Fatalf("listed %d runs, want %d (%v)", len(list), perRound*rounds, err)
	}
	for _, r := range list {
		if r.Err != nil || r.Alive || r.Leftovers.Worktree != runs.Present {
			t.Errorf("%s: err %v alive %v worktree %v", r.Slug, r.Err, r.Alive, r.Leftovers.Worktree)
		}
	}
}
