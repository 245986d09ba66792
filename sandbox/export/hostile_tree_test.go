package export

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A worker's repositories in the quarantine: a nested .git with a
// core.fsmonitor, a bare-looking directory with core.worktree, a gitfile
// leading to one, a submodule's git dir inside a .git. After Disarm no
// git run anywhere in the quarantine takes anything for a repository, so
// nothing of the worker's config runs; the files stay for review.
func TestDisarmedQuarantineRunsNoGit(t *testing.T) {
	l := newLayout(t)
	marker := filepath.Join(t.TempDir(), "MARKER")
	gitRun(t, l.dest, "init", "-q", "evil")
	gitRun(t, l.dest, "-C", "evil", "config", "core.fsmonitor", "touch "+marker)
	gitRun(t, l.dest, "init", "-q", "--bare", "sub")
	gitRun(t, l.dest, "-C", "sub", "config", "core.bare", "false")
	gitRun(t, l.dest, "-C", "sub", "config", "core.worktree", "..")
	gitRun(t, l.dest, "-C", "sub", "config", "core.fsmonitor", "touch "+marker)
	gitRun(t, l.dest, "init", "-q", "--bare", "evil/.git/modules/m")
	gitRun(t, l.dest, "-C", "evil/.git/modules/m", "config", "core.worktree", "../../..")
	gitRun(t, l.dest, "-C", "evil/.git/modules/m", "config", "core.fsmonitor", "touch "+marker)
	must(t, os.MkdirAll(filepath.Join(l.dest, "link"), 0o755))
	must(t, os.WriteFile(filepath.Join(l.dest, "link", ".git"), []byte("gitdir: ../sub\n"), 0o644))
	q := filepath.Join(t.TempDir(), "q")
	moved, err := QuarantineRepositories(l.dest, q)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"evil/.git", "link/.git", "sub"}; !slices.Equal(moved, want) {
		t.Fatalf("moved %q, want %q", moved, want)
	}
	must(t, Disarm(q, moved))
	for _, dir := range []string{"evil", "evil/.git", "evil/.git/modules/m", "sub", "sub/objects", "link"} {
		cmd := exec.Command("git", "status")
		cmd.Dir = filepath.Join(q, dir)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+filepath.Dir(q))
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("git status in %s found a repository:\n%s", dir, out)
		}
		if _, err := os.Lstat(marker); err == nil {
			t.Fatalf("the worker's fsmonitor ran for git status in quarantine/%s", dir)
		}
	}
	// What was there is kept, HEAD beside its old name.
	for _, p := range []string{"evil/.git/config", "evil/.git/HEAD" + DisarmedSuffix, "sub/HEAD" + DisarmedSuffix, "link/.git"} {
		if _, err := os.Lstat(filepath.Join(q, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A tree over its budget may hold far more than was ever written: sparse
// files cost the worker nothing. The diff reads at most MaxReadBytes of
// them; the rest are listed and counted by size, unread, the patch cut.
func TestDiffReadsAtMostMaxReadBytes(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, n := range []string{"a", "b", "c", "d"} {
		f, err := os.Create(filepath.Join(dir, n))
		must(t, err)
		must(t, f.Truncate(8<<20))
		must(t, f.Close())
		paths = append(paths, n)
	}
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer func() { _ = root.Close() }()
	var patch strings.Builder
	d, err := DiffPaths(t.Context(), root, nil, paths, &patch, DiffOptions{MaxPatchMB: 10, MaxReadBytes: 20 << 20})
	must(t, err)
	if !slices.Equal(d.Files, paths) {
		t.Errorf("files %q, want %q", d.Files, paths)
	}
	if !d.PatchTruncated {
		t.Error("the patch is not marked cut")
	}
	if strings.Count(d.Stat, "Bin 0 -> 8388608 bytes") != 4 {
		t.Errorf("stat:\n%s", d.Stat)
	}
	if strings.Contains(patch.String(), "diff --git a/c b/c") {
		t.Errorf("c was read past the bound:\n%s", patch.String())
	}
}
