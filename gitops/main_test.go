package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// holdLockEnv makes the test binary a helper process that takes the repo
// lock of the common dir named in the variable, says "locked" on stdout and
// waits to be killed.
const holdLockEnv = "GITOPS_TEST_HOLD_LOCK"

// TestMain isolates every git the tests run (this process and its
// children) from the machine's configuration, with a fixed identity and
// fixed dates.
func TestMain(m *testing.M) {
	if dir := os.Getenv(holdLockEnv); dir != "" {
		holdLock(dir)
		return
	}
	home, err := os.MkdirTemp("", "gitops-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for k, v := range isolatedGitEnv(home, cfg) {
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"} {
		if err := os.Unsetenv(k); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if err := os.RemoveAll(home); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// isolatedGitEnv is the environment that keeps test gits away from the
// user's configuration.
func isolatedGitEnv(home, cfg string) map[string]string {
	return map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_GLOBAL":   cfg,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "Test Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_AUTHOR_DATE":     "2026-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME":  "Test Committer",
		"GIT_COMMITTER_EMAIL": "committer@example.com",
		"GIT_COMMITTER_DATE":  "2026-01-02T03:04:05Z",
	}
}

// holdLock is the body of the lock-holding helper process.
func holdLock(commonDir string) {
	//nolint:forbidigo // a helper process, not a test: there is no t.Context here
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := LockRepo(ctx, Repo{CommonDir: commonDir}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("locked")
	<-ctx.Done() // the test kills us long before this
	os.Exit(2)
}

// gitT runs real git in dir and returns its trimmed stdout, failing the
// test on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitE(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// gitE runs real git in dir and returns trimmed stdout or an error with
// stderr.
func gitE(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// newRepo makes a repository with one commit (README.md) in a temp dir and
// returns its resolved path.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	gitT(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	writeFile(t, filepath.Join(dir, "README.md"), "hello\n")
	gitT(t, dir, "add", "README.md")
	gitT(t, dir, "commit", "-q", "-m", "initial")
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return resolved
}

// commitFile writes and commits one file in dir and returns the commit.
func commitFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	writeFile(t, filepath.Join(dir, name), content)
	gitT(t, dir, "add", "--", name)
	gitT(t, dir, "commit", "-q", "-m", "add "+name)
	return gitT(t, dir, "rev-parse", "HEAD")
}

// removePath removes path, which may already be absent.
func removePath(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// writeFile writes content to path, creating parent directories.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixedNow is the clock of test managers.
var fixedNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// newManager resolves dir and returns a manager with a fixed clock.
func newManager(t *testing.T, dir string) *Manager {
	t.Helper()
	repo, err := ResolveRepo(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(nil, repo)
	m.now = func() time.Time { return fixedNow }
	return m
}

// branchExists reports whether a local branch exists in dir.
func branchExists(t *testing.T, dir, branch string) bool {
	t.Helper()
	_, err := gitE(dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// worktreeCount is how many worktrees git lists for dir (the main one
// included).
func worktreeCount(t *testing.T, dir string) int {
	t.Helper()
	return strings.Count(gitT(t, dir, "worktree", "list", "--porcelain"), "worktree ")
}

// manifestLanes reads the lane manifest of the repository at dir.
func manifestLanes(t *testing.T, m *Manager) []Lane {
	t.Helper()
	mf, err := readManifest(manifestPath(m.repo))
	if err != nil {
		t.Fatal(err)
	}
	return mf.Lanes
}
