package host

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/host/confine"
)

// TestMain lets the test binary serve as the confinement launcher.
func TestMain(m *testing.M) {
	confine.MaybeRun()
	os.Exit(m.Run())
}

// testRepo is a repository under a fake operator home, with a lane
// worktree on branch dirtywork/x.
type testRepo struct {
	home, repo, worktree, common, admin string
	branch, base                        string
	// gitEnv is the isolated environment for the tests' own git commands.
	gitEnv []string
}

// secretEnv is a provider credential that must never reach bash.
const secretEnv = "OPENAI_API_KEY=sk-test-secret-value"

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	base := t.TempDir()
	r := &testRepo{home: filepath.Join(base, "home"), branch: "dirtywork/x"}
	r.repo = filepath.Join(r.home, "repo")
	globalConfig := filepath.Join(base, "gitconfig")
	writeFile(t, globalConfig, "")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			r.gitEnv = append(r.gitEnv, kv)
		}
	}
	r.gitEnv = append(r.gitEnv,
		"GIT_CONFIG_GLOBAL="+globalConfig, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	if err := os.MkdirAll(r.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git(t, r.repo, "init", "-q", "-b", "main")
	// bash gets no identity from the environment (E-38): the repository's
	// own config carries it, as it must for --allow-commit.
	r.git(t, r.repo, "config", "user.name", "Worker")
	r.git(t, r.repo, "config", "user.email", "worker@example.com")
	writeFile(t, filepath.Join(r.repo, "README.md"), "hello\n")
	writeFile(t, filepath.Join(r.repo, "tracked.txt"), "one\ntwo\n")
	writeFile(t, filepath.Join(r.repo, ".gitignore"), "*.log\n")
	r.git(t, r.repo, "add", ".")
	r.git(t, r.repo, "commit", "-q", "-m", "initial")
	r.git(t, r.repo, "worktree", "add", "-q", "-b", r.branch, ".worktrees/dw-x")
	r.worktree = filepath.Join(r.repo, ".worktrees", "dw-x")
	r.common = filepath.Join(r.repo, ".git")
	r.admin = filepath.Join(r.common, "worktrees", "dw-x")
	r.base = strings.TrimSpace(r.git(t, r.repo, "rev-parse", "HEAD"))
	return r
}

// git runs git in dir with the isolated environment and returns stdout.
func (r *testRepo) git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = r.gitEnv
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("git %v: %v: %s", args, err, stderr)
	}
	return string(out)
}

// operatorEnv is the environment of the operator the tests pretend to be:
// the real PATH, a fake home and a secret.
func (r *testRepo) operatorEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb", "HOME=" + r.home, secretEnv}
}

func (r *testRepo) config() Config {
	return Config{
		Worktree:        r.worktree,
		CommonDir:       r.common,
		AdminDir:        r.admin,
		Branch:          r.branch,
		BaseCommit:      r.base,
		Limits:          sandbox.Limits{MaxBytes: 2048 << 20, MaxEntries: 200000},
		RequireLandlock: true,
		Home:            r.home,
		Env:             r.operatorEnv(),
	}
}

// open opens a workspace on cfg and closes it at the end of the test.
func open(t testing.TB, cfg Config) *Workspace {
	t.Helper()
	w, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
