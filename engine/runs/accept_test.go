package runs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

func TestAcceptCommitsEveryChangeWithTrailersAndWarnings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "acc", nil)
	workerChanges(t, wt)
	res, err := e.store.Accept(t.Context(), "acc", AcceptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertNothingRan(t)
	if !res.Committed || git(t, repo, "rev-parse", "dirtywork/acc") != res.Commit {
		t.Fatalf("branch not moved to %s: %+v", res.Commit, res)
	}
	msg := git(t, repo, "log", "-1", "--format=%B", res.Commit)
	if msg != "fix the thing\n\nDirtywork-Run: acc\nDirtywork-Model: test-model" {
		t.Errorf("message %q", msg)
	}
	if who := git(t, repo, "log", "-1", "--format=%an <%ae> / %cn <%ce>", res.Commit); who != "Operator Name <operator@example.com> / Operator Name <operator@example.com>" {
		t.Errorf("identity %q", who)
	}
	files := git(t, repo, "ls-tree", "-r", "--name-only", res.Commit)
	for _, want := range []string{"a.txt", "new.txt", "run.sh", "link", "inner/inside.txt", ".gitattributes"} {
		if !strings.Contains(files, want) {
			t.Errorf("%s not committed: %s", want, files)
		}
	}
	if strings.Contains(files, "b.txt") || strings.Contains(files, "ignored.log") || strings.Contains(files, "inner/.git") {
		t.Errorf("deleted, ignored or .git entries committed: %s", files)
	}
	if mode := git(t, repo, "ls-tree", res.Commit, "run.sh"); !strings.HasPrefix(mode, "100755") {
		t.Errorf("run.sh lost its executable bit: %s", mode)
	}
	if len(res.Risks) < 3 {
		t.Errorf("warnings %+v", res.Risks)
	}
	if st := git(t, wt, "status", "--porcelain"); st != "" {
		t.Errorf("worktree not clean after accepting everything: %q", st)
	}
	rec := readJSON(t, filepath.Join(e.root, "acc", "run.json"))
	if rec["verdict"] != "accept" || rec["accepted_commit"] != res.Commit || rec["reviewer"] != "Operator Name" {
		t.Errorf("record %v", rec)
	}
}

func TestAcceptWithFilesCommitsExactlyThose(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "some", nil)
	workerChanges(t, wt)
	res, err := e.store.Accept(t.Context(), "some", AcceptOptions{Files: []string{"a.txt", "b.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	changed := git(t, repo, "diff-tree", "-r", "--name-status", "--no-commit-id", res.Parent, res.Commit)
	if changed != "M\ta.txt\nD\tb.txt" {
		t.Errorf("committed %q, want exactly a.txt and b.txt", changed)
	}
	if !equal(res.Files, []string{"a.txt", "b.txt"}) {
		t.Errorf("files %v", res.Files)
	}
	if st := git(t, wt, "status", "--porcelain"); !strings.Contains(st, "new.txt") || strings.Contains(st, "a.txt") {
		t.Errorf("status after a partial accept: %q", st)
	}
	if _, err := e.store.Accept(t.Context(), "some", AcceptOptions{Files: []string{"nope.txt"}}); err == nil || !strings.Contains(err.Error(), "nope.txt") {
		t.Errorf("a file the run did not change: %v", err)
	}
}

func TestAcceptRefusesALiveRunAndAnEmptyWorktree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "alive", map[string]any{"status": "running"})
	lock, err := transcript.AcquireLiveness(filepath.Join(e.root, "alive"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release() }()
	if _, err := e.store.Accept(t.Context(), "alive", AcceptOptions{}); !errors.Is(err, ErrStillRunning) {
		t.Errorf("live run: %v", err)
	}
	_ = lock.Release()
	for _, n := range []string{"a.txt", "b.txt"} {
		_ = os.Remove(filepath.Join(wt, n))
	}
	if _, err := e.store.Accept(t.Context(), "alive", AcceptOptions{}); err == nil || !strings.Contains(err.Error(), "export") {
		t.Errorf("worktree with only .git: %v", err)
	}
}

func TestMergeFastForwardsTheCheckedOutBranchWithoutFiltersOrHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "ff", nil)
	workerChanges(t, wt)
	res, err := e.store.Merge(t.Context(), "ff", MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertNothingRan(t)
	if !res.FastForward || res.Into != "main" || git(t, repo, "rev-parse", "main") != res.Commit || res.UpdatedCheckout != repo {
		t.Fatalf("merge %+v", res)
	}
	if data, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(data) != "alpha\nmore\n" {
		t.Errorf("checkout not updated: a.txt = %q", data)
	}
	if st := git(t, repo, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("checkout not clean after the merge: %q", st)
	}
	again, err := e.store.Merge(t.Context(), "ff", MergeOptions{})
	if err != nil || !again.AlreadyMerged {
		t.Errorf("merging twice: %+v, %v", again, err)
	}
}

func TestMergeMakesAMergeCommitWhenTheBaseMoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "moved", nil)
	writeFile(t, filepath.Join(wt, "a.txt"), "alpha\nfrom run\n")
	writeFile(t, filepath.Join(repo, "c.txt"), "operator\n")
	git(t, repo, "add", "c.txt")
	git(t, repo, "commit", "-q", "-m", "operator work")
	f, err := e.store.Forecast(t.Context(), "moved", "")
	if err != nil || !f.OK() || !f.BaseMoved || f.FastForward || !f.Pending {
		t.Fatalf("forecast %+v, %v", f, err)
	}
	res, err := e.store.Merge(t.Context(), "moved", MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if parents := git(t, repo, "log", "-1", "--format=%P", "main"); len(strings.Fields(parents)) != 2 || res.FastForward {
		t.Errorf("not a merge commit: parents %q", parents)
	}
	if data, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(data) != "alpha\nfrom run\n" {
		t.Errorf("a.txt = %q", data)
	}
}

func TestMergeRefusesConflictsAndADirtyCheckout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "clash", nil)
	writeFile(t, filepath.Join(wt, "a.txt"), "run's alpha\n")
	writeFile(t, filepath.Join(repo, "a.txt"), "operator's alpha\n")
	git(t, repo, "commit", "-q", "-am", "operator edits a")
	before := git(t, repo, "rev-parse", "main")
	_, err := e.store.Merge(t.Context(), "clash", MergeOptions{})
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "conflicts in a.txt") {
		t.Fatalf("conflicting merge: %v", err)
	}
	if git(t, repo, "rev-parse", "main") != before {
		t.Error("main moved on a refused merge")
	}

	wt2 := e.addLaneRun(repo, "dirty", nil)
	writeFile(t, filepath.Join(wt2, "b.txt"), "run's beta\n")
	writeFile(t, filepath.Join(repo, "a.txt"), "uncommitted\n")
	_, err = e.store.Merge(t.Context(), "dirty", MergeOptions{})
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("dirty checkout: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(data) != "uncommitted\n" {
		t.Error("the operator's uncommitted change was touched")
	}
}

func TestMergeBringsOnlyWhatWasAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "part", nil)
	writeFile(t, filepath.Join(wt, "a.txt"), "accepted\n")
	writeFile(t, filepath.Join(wt, "left-out.txt"), "not accepted\n")
	if _, err := e.store.Accept(t.Context(), "part", AcceptOptions{Files: []string{"a.txt"}}); err != nil {
		t.Fatal(err)
	}
	f, err := e.store.Forecast(t.Context(), "part", "")
	if err != nil || f.Pending {
		t.Fatalf("forecast after a partial accept: %+v %v", f, err)
	}
	if _, err := e.store.Merge(t.Context(), "part", MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	files := git(t, repo, "ls-tree", "-r", "--name-only", "main")
	if strings.Contains(files, "left-out.txt") || git(t, repo, "show", "main:a.txt") != "accepted" {
		t.Errorf("main has %s", files)
	}
	if _, err := os.Stat(filepath.Join(wt, "left-out.txt")); err != nil {
		t.Error("the file left out was removed from the worktree")
	}
}

func TestMergeIntoABranchNobodyHasCheckedOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	git(t, repo, "branch", "release")
	wt := e.addLaneRun(repo, "rel", nil)
	writeFile(t, filepath.Join(wt, "r.txt"), "r\n")
	res, err := e.store.Merge(t.Context(), "rel", MergeOptions{Into: "release"})
	if err != nil {
		t.Fatal(err)
	}
	if res.UpdatedCheckout != "" || git(t, repo, "rev-parse", "release") != res.Commit || git(t, repo, "show", "release:r.txt") != "r" {
		t.Errorf("merge %+v", res)
	}
	if _, err := os.Stat(filepath.Join(repo, "r.txt")); err == nil {
		t.Error("the main checkout (on main) was changed")
	}
	if _, err := e.store.Merge(t.Context(), "rel", MergeOptions{Into: "nope"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("unknown target: %v", err)
	}
}

// A merge says what it brings into the operator's branch, a link out of
// the repository included, also when the run was accepted before.
func TestMergeWarnsOfALinkOutOfTheRepository(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "linked", nil)
	workerChanges(t, wt)
	if _, err := e.store.Accept(t.Context(), "linked", AcceptOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := e.store.Merge(t.Context(), "linked", MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, r := range res.Warnings {
		kinds[r.Path] = r.Kind
	}
	if kinds["link"] != RiskLink || kinds["run.sh"] != RiskExecutable {
		t.Fatalf("merge warnings %+v: want the link to /etc/passwd and the new executable", res.Warnings)
	}
}
