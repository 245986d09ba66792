package runs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// workerChanges makes the changes a hostile worker might leave in wt.
func workerChanges(t *testing.T, wt string) {
	t.Helper()
	writeFile(t, filepath.Join(wt, "a.txt"), "alpha\nmore\n")
	if err := os.Remove(filepath.Join(wt, "b.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(wt, "new.txt"), "new\n")
	writeFile(t, filepath.Join(wt, ".gitattributes"), "* filter=evil\n*.bin -diff\n")
	writeFile(t, filepath.Join(wt, ".github", "workflows", "ci.yml"), "on: push\n")
	writeFile(t, filepath.Join(wt, "run.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(wt, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(wt, "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(wt, "nested", "kept.txt"), "kept\n")
	writeFile(t, filepath.Join(wt, "nested", ".git", "HEAD"), "ref: refs/heads/main\n")
	git(t, wt, "init", "-q", "inner") // a nested repository: its files count, its .git never
	writeFile(t, filepath.Join(wt, "inner", "inside.txt"), "inside\n")
	writeFile(t, filepath.Join(wt, "ignored.log"), "noise\n")
	writeFile(t, filepath.Join(wt, ".gitignore"), "*.log\n")
}

func TestDiffFromTheWorktreeReadsNoWorkerGitAndRunsNoFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "diffed", nil)
	workerChanges(t, wt)

	d, err := e.store.Diff(t.Context(), "diffed", DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertNothingRan(t)
	if d.Source != DiffFromWorktree {
		t.Fatalf("source %s", d.Source)
	}
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status + " " + f.NewMode
	}
	want := map[string]string{
		"a.txt": "M 100644", "b.txt": "D 000000", "new.txt": "A 100644", ".gitattributes": "A 100644",
		".github/workflows/ci.yml": "A 100644", "run.sh": "A 100755", "link": "A 120000", "nested/kept.txt": "A 100644",
		".gitignore": "A 100644", "inner/inside.txt": "A 100644",
	}
	if len(got) != len(want) {
		t.Errorf("files %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %q, want %q", p, got[p], w)
		}
	}
	if !equal(d.Dropped, []string{"inner/.git"}) {
		t.Errorf("dropped %v", d.Dropped)
	}
	kinds := map[string]string{}
	for _, r := range d.Risks {
		kinds[r.Path] = r.Kind
	}
	for p, k := range map[string]string{
		".gitattributes": RiskAttributes, ".github/workflows/ci.yml": RiskCI, "run.sh": RiskExecutable,
		// A link to /etc/passwd used to merge without a word.
		"link": RiskLink,
	} {
		if kinds[p] != k {
			t.Errorf("risk of %s = %q, want %q (all: %+v)", p, kinds[p], k, d.Risks)
		}
	}
	patch := string(d.Patch)
	if !strings.Contains(patch, "+more") || !strings.Contains(patch, "+/etc/passwd") || strings.Contains(patch, "root:") {
		t.Errorf("patch does not show the change, or followed the link:\n%s", patch)
	}
	if a := git(t, wt, "status", "--porcelain"); !strings.Contains(a, "a.txt") {
		t.Errorf("the worktree's own index was touched: status %q", a)
	}
}

func TestDiffFallsBackToTheRunsPatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	wt := e.addLaneRun(repo, "dock", map[string]any{"sandbox": "docker", "files_changed": []string{"a.txt"}})
	// A docker lane whose export never ran holds only its .git file.
	for _, n := range []string{"a.txt", "b.txt"} {
		if err := os.Remove(filepath.Join(wt, n)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(e.root, "dock", "diff.patch"), "diff --git a/a.txt b/a.txt\n")
	d, err := e.store.Diff(t.Context(), "dock", DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Source != DiffFromPatch || string(d.Patch) != "diff --git a/a.txt b/a.txt\n" || len(d.Files) != 1 {
		t.Errorf("diff %+v", d)
	}
}

// The operator's global config really defines a filter that leaves the
// marker, so the tests that find no marker prove the store ran none.
func TestTheMarkerCatchesAFilterTheOperatorDefined(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	writeFile(t, filepath.Join(repo, ".gitattributes"), "* filter=evil\n")
	writeFile(t, filepath.Join(repo, "a.txt"), "changed\n")
	cmd := exec.Command("git", "-C", repo, "add", "a.txt")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	defer func() { _ = os.Remove(filterMarker()) }()
	if _, err := os.Stat(filterMarker()); err != nil {
		t.Fatal("the operator's filter did not leave its marker: the no-filter tests prove nothing")
	}
}

// A worker that swaps a tracked directory for a link to a host directory
// must not get host files into the diff or a commit.
func TestALinkedDirectoryNeverLeaksHostFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := newRepo(t)
	writeFile(t, filepath.Join(repo, "etc", "hostname"), "repo's own\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "etc")
	wt := e.addLaneRun(repo, "leak", nil)
	if err := os.RemoveAll(filepath.Join(wt, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(wt, "etc")); err != nil {
		t.Fatal(err)
	}
	res, err := e.store.Accept(t.Context(), "leak", AcceptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, repo, "ls-tree", "-r", res.Commit); strings.Contains(got, "etc/hostname") || !strings.Contains(got, "120000 blob") {
		t.Errorf("tree after the swap:\n%s", got)
	}
	if got := git(t, repo, "cat-file", "-p", res.Commit+":etc"); got != "/etc" {
		t.Errorf("etc is %q, want the link itself", got)
	}
	// Not even written into the object store: the host file was never read.
	host := git(t, repo, "hash-object", "/etc/hostname")
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", host).Run(); err == nil {
		t.Error("the host's /etc/hostname was read into the repository's objects")
	}
}
