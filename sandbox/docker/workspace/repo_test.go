package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testRepo is a host repository with one lane, as the engine makes them.
type testRepo struct {
	root, worktree, branch, base, runDir string
	env                                  []string
}

// newTestRepo makes a repository holding files (path → content), commits
// them with fixed identities and dates, and adds a --no-checkout lane.
func newTestRepo(t testing.TB, slug string, files map[string]string) testRepo {
	t.Helper()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(cfgFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := testRepo{
		root:   filepath.Join(dir, "repo"),
		branch: "dirtywork/" + slug,
		runDir: filepath.Join(dir, "run"),
		env: append(os.Environ(), "GIT_CONFIG_GLOBAL="+cfgFile, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE=2020-01-01T00:00:00Z",
			"GIT_COMMITTER_DATE=2020-01-01T00:00:00Z"),
	}
	for _, d := range []string{r.root, r.runDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r.git(t, r.root, "init", "-q", "-b", "main")
	for p, c := range files {
		full := filepath.Join(r.root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.git(t, r.root, "add", "-A")
	r.git(t, r.root, "commit", "-q", "-m", "first")
	// A second commit, so history exists that the worker must not see.
	if err := os.WriteFile(filepath.Join(r.root, "later.txt"), []byte("later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git(t, r.root, "add", "-A")
	r.git(t, r.root, "commit", "-q", "-m", "second")
	r.base = r.git(t, r.root, "rev-parse", "HEAD")
	r.worktree = filepath.Join(r.root, ".worktrees", "dw-"+slug)
	if err := os.WriteFile(filepath.Join(r.root, ".git", "info", "exclude"), []byte(".worktrees/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git(t, r.root, "worktree", "add", "-q", "--no-checkout", "-b", r.branch, r.worktree, r.base)
	return r
}

// git runs git in dir and returns its trimmed output.
func (r testRepo) git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
