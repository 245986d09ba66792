package host

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/seal"
)

func TestFinalizeReportsChanges(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	run(t, w, "echo changed >> tracked.txt && rm README.md && mkdir -p newdir/deep && echo n > newdir/deep/n.txt && "+
		"echo s > src/new.go && echo x > debug.log && echo top > top.txt")
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"README.md", "newdir/deep/n.txt", "src/new.go", "top.txt", "tracked.txt"}
	if !slices.Equal(fin.FilesChanged, wantFiles) || fin.FilesChangedTruncated {
		t.Errorf("files_changed %q, want %q (ignored debug.log left out)", fin.FilesChanged, wantFiles)
	}
	if fin.Untracked != "newdir/\nsrc/new.go\ntop.txt" {
		t.Errorf("untracked %q", fin.Untracked)
	}
	if !strings.Contains(fin.DiffStat, "tracked.txt       | 1 +") || !strings.Contains(fin.DiffStat, "5 files changed") {
		t.Errorf("diff_stat %q", fin.DiffStat)
	}
	if fin.PatchPath == nil || !strings.Contains(readFile(t, *fin.PatchPath), "+changed") {
		t.Errorf("patch %v", fin.PatchPath)
	}
	if fin.WorktreeFiles == 0 || fin.WorktreeBytes == 0 || fin.ExportStatus != "n/a" || fin.WatchdogViolation != nil {
		t.Errorf("finalization %+v", fin)
	}
	// The lane's index is the base's: host git sees the worker's change
	// as a change to the base, no more.
	status := r.git(t, r.worktree, "status", "--porcelain")
	for _, want := range []string{" M tracked.txt", " D README.md", "?? newdir/", "?? top.txt"} {
		if !strings.Contains(status, want) {
			t.Errorf("host git status lacks %q:\n%s", want, status)
		}
	}
}

func TestFinalizeDropsNestedRepositories(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	out, code := run(t, w, unsetGit+"mkdir -p vendor/lib bare && git -C vendor/lib init -q && echo x > vendor/lib/f && "+
		"git init -q --bare bare/repo.git && mkdir -p sub && echo 'gitdir: /tmp' > sub/.GIT && "+
		"mkdir shaped && touch shaped/HEAD && mkdir shaped/objects shaped/refs")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bare/repo.git", "shaped", "sub/.GIT", "vendor/lib/.git"}
	if !slices.Equal(fin.DroppedGitEntries, want) {
		t.Errorf("dropped_git_entries %q, want %q", fin.DroppedGitEntries, want)
	}
	for _, p := range want {
		if exists(filepath.Join(r.worktree, p)) {
			t.Errorf("%s is still in the worktree", p)
		}
		if !exists(filepath.Join(r.runDir, quarantineDir, p)) {
			t.Errorf("%s was not kept in the run dir", p)
		}
	}
	if !exists(filepath.Join(r.worktree, "vendor", "lib", "f")) {
		t.Error("the nested repository's files went too")
	}
}

func TestFinalizeRestoresTheLanesGitFile(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	evil := filepath.Join(t.TempDir(), "evil")
	r.git(t, t.TempDir(), "init", "-q", evil)
	// Only a run without the jail can reach the host's .git file: the
	// jail covers it with a read-only one.
	writeFile(t, filepath.Join(r.worktree, ".git"), "gitdir: "+filepath.Join(evil, ".git")+"\n")
	if _, err := w.Finalize(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(r.worktree, ".git")); got != "gitdir: "+r.admin+"\n" {
		t.Errorf(".git is %q", got)
	}
}

func TestCollapseUntracked(t *testing.T) {
	got := collapseUntracked([]string{"a/b/c", "a/b/d", "src/x", "top", "src/deep/y"}, []string{"src/lib.go", "README"})
	want := []string{"a/", "src/deep/", "src/x", "top"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCapChars(t *testing.T) {
	s := strings.Repeat("é", maxReportChars+5)
	got := capChars(s)
	if !strings.HasSuffix(got, "\n[truncated at 64000 chars]") || strings.Count(got, "é") != maxReportChars {
		t.Errorf("capChars kept %d characters", strings.Count(got, "é"))
	}
	if capChars("short") != "short" {
		t.Error("short text changed")
	}
}

func TestFinalizeWithNothingChanged(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(fin.FilesChanged) != 0 || fin.DiffStat != "" || fin.Untracked != "" || len(fin.DroppedGitEntries) != 0 {
		t.Errorf("finalization of an untouched tree: %+v", fin)
	}
	if out := r.git(t, r.worktree, "status", "--porcelain"); out != "" {
		t.Errorf("host git status: %q", out)
	}
	_ = os.Remove(*fin.PatchPath)
}

// unsetGit starts a command that makes repositories of its own: without
// the jail the worker's git is pointed at its repository by GIT_DIR.
const unsetGit = "unset GIT_DIR GIT_WORK_TREE; "

// TestFinalizeKeepsTheBasesOwnRepository: a directory the base commit
// holds that has a repository's shape (a test fixture) stays while the
// worker leaves it as checked out, and goes once the worker changed it.
func TestFinalizeKeepsTheBasesOwnRepository(t *testing.T) {
	for _, touch := range []bool{false, true} {
		r := newTestRepo(t)
		for _, f := range []string{"fixture/HEAD", "fixture/objects/keep", "fixture/refs/keep"} {
			writeFile(t, filepath.Join(r.repo, f), "x\n")
		}
		r.git(t, r.repo, "add", "fixture")
		r.git(t, r.repo, "commit", "-q", "-m", "fixture")
		r.base = strings.TrimSpace(r.git(t, r.repo, "rev-parse", "HEAD"))
		r.git(t, r.repo, "update-ref", "refs/heads/"+r.branch, r.base)
		w := open(t, r.config())
		if touch {
			run(t, w, "echo 'ref: refs/heads/evil' > fixture/HEAD")
		}
		fin, err := w.Finalize(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		moved := slices.Contains(fin.DroppedGitEntries, "fixture")
		if moved != touch || exists(filepath.Join(r.worktree, "fixture", "HEAD")) == touch {
			t.Errorf("touched %v: dropped %q", touch, fin.DroppedGitEntries)
		}
		if !touch && len(fin.FilesChanged) != 0 {
			t.Errorf("untouched fixture: files_changed %q", fin.FilesChanged)
		}
	}
}

// The worktree's files are read ahead of the seal while the worker works;
// the seal takes those digests for the files nobody changed and names
// the tree as a seal reading every file does.
func TestFinalizeTakesTheDigestsReadAhead(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	run(t, w, "echo changed >> tracked.txt && echo n > new.txt")
	w.mu.Lock()
	pre := w.pre
	w.mu.Unlock()
	if pre == nil {
		t.Fatal("no reading ahead began with the baseline")
	}
	<-pre.done // left to finish: nothing stops it before the seal
	for _, rel := range []string{"README.md", "src/lib.go"} {
		if !pre.digest.Has(rel) {
			t.Errorf("%s, untouched, was not read ahead", rel)
		}
	}
	if pre.digest.Has("new.txt") {
		t.Error("new.txt, the worker's, has a digest taken ahead")
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m, err := seal.Snapshot(t.Context(), w.worktree, true)
	if err != nil {
		t.Fatal(err)
	}
	if fin.TreeHash != m.Hash() {
		t.Errorf("tree hash %s, a seal reading every file says %s", fin.TreeHash, m.Hash())
	}
}
