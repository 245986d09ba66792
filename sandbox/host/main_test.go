package host

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// TestMain lets the test binary serve as the jail's setup and as the tool
// server.
func TestMain(m *testing.M) {
	jail.MaybeRun()
	MaybeServe()
	os.Exit(m.Run())
}

// testRepo is a repository under a fake operator home, with a lane
// worktree on branch dirtywork/x made without a checkout, as the engine
// makes it.
type testRepo struct {
	home, repo, worktree, common, admin, runDir string
	branch, base                                string
	// gitEnv is the isolated environment for the tests' own git commands.
	gitEnv []string
}

// secretEnv and anthropicSecretEnv are provider credentials that must
// never reach bash.
const (
	secretEnv          = "OPENAI_API_KEY=sk-test-secret-value"
	anthropicSecretEnv = "ANTHROPIC_API_KEY=sk-ant-test-secret-value"
)

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	base := t.TempDir()
	r := &testRepo{home: filepath.Join(base, "home"), branch: "dirtywork/x"}
	r.repo = filepath.Join(r.home, "repo")
	r.runDir = filepath.Join(r.home, ".dirtywork", "runs", "x")
	if err := os.MkdirAll(r.runDir, 0o700); err != nil {
		t.Fatal(err)
	}
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
	writeFile(t, filepath.Join(r.repo, "README.md"), "hello\n")
	writeFile(t, filepath.Join(r.repo, "tracked.txt"), "one\ntwo\n")
	writeFile(t, filepath.Join(r.repo, ".gitignore"), "*.log\n")
	writeFile(t, filepath.Join(r.repo, "src", "lib.go"), "package lib\n")
	r.git(t, r.repo, "add", ".")
	r.git(t, r.repo, "commit", "-q", "-m", "initial")
	r.git(t, r.repo, "worktree", "add", "-q", "--no-checkout", "-b", r.branch, ".worktrees/dw-x")
	r.worktree = filepath.Join(r.repo, ".worktrees", "dw-x")
	r.common = filepath.Join(r.repo, ".git")
	r.admin = filepath.Join(r.common, "worktrees", "dw-x")
	r.base = strings.TrimSpace(r.git(t, r.repo, "rev-parse", "HEAD"))
	return r
}

// git runs git in dir with the isolated environment and returns stdout.
func (r *testRepo) git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := r.tryGit(dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}

// tryGit runs git in dir and returns stdout, or an error with stderr.
func (r *testRepo) tryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = r.gitEnv
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), errors.Join(err, errors.New(string(ee.Stderr)))
		}
		return string(out), err
	}
	return string(out), nil
}

// operatorEnv is the environment of the operator the tests pretend to be:
// the real PATH, a fake home and a secret.
func (r *testRepo) operatorEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb", "HOME=" + r.home, secretEnv, anthropicSecretEnv}
}

// testJailer is the jail where this system can set one up whole, else
// the plain-child stand-in; the tests of what the jail must stop use
// requireJail instead.
var testJailer = sync.OnceValue(func() jailer {
	if report := jail.Probe(probeContext); report.Err() == nil {
		return realJailer{report: report}
	}
	return childJailer{}
})

// probeContext is the probe's: testJailer is settled once, for every
// test, outside any one test's life.
var probeContext = context.TODO()

// requireJail fails a test that means nothing without the jail, where the
// jail cannot be set up whole.
func requireJail(t testing.TB) {
	t.Helper()
	if err := jail.Probe(t.Context()).Err(); err != nil {
		t.Fatalf("this test needs the jail: %v", err)
	}
}

// config is a workspace on the lane, in the jail where it can be had.
func (r *testRepo) config() Config {
	return Config{
		Worktree:   r.worktree,
		RepoRoot:   r.repo,
		CommonDir:  r.common,
		AdminDir:   r.admin,
		Branch:     r.branch,
		BaseCommit: r.base,
		RunDir:     r.runDir,
		Limits:     sandbox.Limits{MaxBytes: 2048 << 20, MaxEntries: 200000},
		Home:       r.home,
		Env:        r.operatorEnv(),
		jailer:     testJailer(),
	}
}

// open opens a workspace on cfg, waits for its checkout, and closes it at
// the end of the test.
func open(t testing.TB, cfg Config) *Workspace {
	t.Helper()
	w, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	w.Begin()
	if _, err := w.client(t.Context()); err != nil {
		t.Fatalf("start: %v", err)
	}
	return w
}

// bash runs command and returns its result, failing the test on an error.
func bash(t testing.TB, w *Workspace, command string) sandbox.BashResult {
	t.Helper()
	res, err := w.Bash(t.Context(), command, 30*time.Second)
	if err != nil {
		t.Fatalf("bash %q: %v", command, err)
	}
	return res
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
