package runs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dirtywork/dirtywork/gitops"
)

// gitMovingRef is a git for the store that, just before the store's first
// update-ref of ref, runs move: someone else moves the branch in the very
// window between the store reading its tip and the store moving it. moved
// reports whether move ran.
func gitMovingRef(ref string, move func()) (g *gitops.Git, moved func() bool) {
	var done atomic.Bool
	g = gitops.New()
	g.Command = func(ctx context.Context, name string, args ...string) *exec.Cmd {
		if slices.Contains(args, "update-ref") && slices.Contains(args, ref) && done.CompareAndSwap(false, true) {
			move()
		}
		return exec.CommandContext(ctx, name, args...)
	}
	return g, done.Load
}

// commitOn makes a commit on top of rev with rev's tree (another
// process's work on the branch) and returns it, referenced by nothing.
func commitOn(t *testing.T, repo, rev string) string {
	t.Helper()
	return git(t, repo, "commit-tree", "-p", rev, "-m", "someone else's commit", rev+"^{tree}")
}

// A branch that moves while Accept commits onto it is not clobbered: the
// compare-and-swap refuses, the other commit stays the tip, and no accept
// verdict is recorded for a commit that is on no branch.
func TestAcceptRefusesWhenItsBranchMovesMeanwhile(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ref := "refs/heads/dirtywork/raced"
	var other string
	g, moved := gitMovingRef(ref, func() {
		other = commitOn(t, repo, ref)
		git(t, repo, "update-ref", ref, other)
	})
	e := newEnv(t)
	e.store = Open(e.root, WithDocker(e.docker), WithGit(g))
	wt := e.addLaneRun(repo, "raced", nil)
	workerChanges(t, wt)

	res, err := e.store.Accept(t.Context(), "raced", AcceptOptions{})
	if !moved() {
		t.Fatal("the accept never moved its branch: the race was not staged")
	}
	if err == nil || !strings.Contains(err.Error(), "moved meanwhile") {
		t.Fatalf("accept over a moved branch: %+v, %v; want a refusal", res, err)
	}
	if tip := git(t, repo, "rev-parse", ref); tip != other {
		t.Errorf("the branch is at %s, want the other commit %s kept", tip, other)
	}
	rec := readJSON(t, filepath.Join(e.root, "raced", "run.json"))
	if rec["verdict"] != nil || rec["accepted_commit"] != nil {
		t.Errorf("a refused accept was recorded: verdict %v, accepted_commit %v", rec["verdict"], rec["accepted_commit"])
	}
	if data, _ := os.ReadFile(filepath.Join(wt, "a.txt")); string(data) != "alpha\nmore\n" {
		t.Errorf("the worktree's work was touched: a.txt = %q", data)
	}
}

// A target branch that moves while Merge brings a run into it is not
// clobbered, checked out or not: the compare-and-swap refuses, the other
// commit stays the tip, a checkout switched for the merge is switched
// back, and no merge is recorded.
func TestMergeRefusesWhenTheTargetMovesMeanwhile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		into string // "" merges into main, checked out in the repository
		// baseMoved commits on the target before the merge, so the merge
		// makes a merge commit instead of fast-forwarding.
		baseMoved bool
	}{
		{name: "fast-forward of the checked-out branch"},
		{name: "merge commit into the checked-out branch", baseMoved: true},
		{name: "fast-forward of a branch nobody has out", into: "release"},
		{name: "merge commit into a branch nobody has out", into: "release", baseMoved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			target := "main"
			if tt.into != "" {
				target = tt.into
				git(t, repo, "branch", target)
			}
			ref := "refs/heads/" + target
			var other string
			g, moved := gitMovingRef(ref, func() {
				other = commitOn(t, repo, ref)
				git(t, repo, "update-ref", ref, other)
			})
			e := newEnv(t)
			e.store = Open(e.root, WithDocker(e.docker), WithGit(g))
			wt := e.addLaneRun(repo, "raced", nil)
			writeFile(t, filepath.Join(wt, "a.txt"), "alpha\nfrom the run\n")
			if tt.baseMoved {
				// The operator's commit touches another file: no conflict.
				writeFile(t, filepath.Join(repo, "c.txt"), "operator\n")
				git(t, repo, "add", "c.txt")
				git(t, repo, "commit", "-q", "-m", "operator work")
				if tt.into != "" {
					git(t, repo, "branch", "-f", tt.into, "main")
					git(t, repo, "reset", "-q", "--hard", "HEAD~1")
				}
			}
			before := git(t, repo, "rev-parse", ref)
			checkoutBefore := git(t, repo, "status", "--porcelain", "--untracked-files=no")

			res, err := e.store.Merge(t.Context(), "raced", MergeOptions{Into: tt.into})
			if !moved() {
				t.Fatalf("the merge never moved %s (%+v, %v): the race was not staged", target, res, err)
			}
			if err == nil || !strings.Contains(err.Error(), "moved meanwhile") {
				t.Fatalf("merge into a moved %s: %+v, %v; want a refusal", target, res, err)
			}
			if tip := git(t, repo, "rev-parse", ref); tip != other {
				t.Errorf("%s is at %s, want the other commit %s kept (it was %s)", target, tip, other, before)
			}
			if got := git(t, repo, "status", "--porcelain", "--untracked-files=no"); got != checkoutBefore {
				t.Errorf("the main checkout changed under a refused merge: %q, was %q", got, checkoutBefore)
			}
			if data, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(data) != "alpha\n" {
				t.Errorf("the run's work reached the main checkout: a.txt = %q", data)
			}
			rec := readJSON(t, filepath.Join(e.root, "raced", "run.json"))
			if rec["merged_into"] != nil || rec["merge_commit"] != nil {
				t.Errorf("a refused merge was recorded: merged_into %v, merge_commit %v", rec["merged_into"], rec["merge_commit"])
			}
		})
	}
}
