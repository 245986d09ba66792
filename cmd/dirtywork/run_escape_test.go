package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

// startScripted serves script (a scripted.Script as JSON) on loopback for
// the test's life and returns its base URL.
func startScripted(t *testing.T, script any) string {
	t.Helper()
	data, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scripted.ParseScript(data)
	if err != nil {
		t.Fatal(err)
	}
	srv := scripted.New(s)
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return base
}

// The git escape classes of host mode, each tried the way a worker would,
// through `dirtywork run` with a scripted model, as root and as an
// unprivileged user. Each test fails if the escape works again: a marker
// file the worker's planted code would create on the host.

// escapeUsers are the operators the escape tests run as: this process's
// user and, when that is root, an unprivileged one.
func escapeUsers(t *testing.T) []*syscall.Credential {
	users := []*syscall.Credential{nil}
	if os.Geteuid() == 0 {
		users = append(users, &syscall.Credential{Uid: 65534, Gid: 65534})
	}
	return users
}

func userName(c *syscall.Credential) string {
	if c == nil {
		return "operator"
	}
	return "unprivileged"
}

// escapeRun is a repository, a home and a dirtywork binary usable by cred.
type escapeRun struct {
	t      *testing.T
	cred   *syscall.Credential
	dir    string // owned by cred: the home, the repo, the runs
	repo   string
	bin    string
	marker string
}

func newEscapeRun(t *testing.T, cred *syscall.Credential) *escapeRun {
	t.Helper()
	if err := jail.Probe(t.Context()).Err(); err != nil {
		t.Fatalf("host mode's jail cannot be set up here: %v", err)
	}
	base, err := os.MkdirTemp("", "dirtywork-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	// The marker is where the run's user can write it: planted code runs
	// as that user, and a marker it could not create would hide an escape.
	e := &escapeRun{t: t, cred: cred, dir: filepath.Join(base, "home"), marker: filepath.Join(base, "home", "MARKER")}
	e.repo = filepath.Join(e.dir, "repo")
	// The test binary, where the unprivileged user can execute it.
	e.bin = filepath.Join(base, "dirtywork")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := writeExecutable(e.bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(e.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(e.repo, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	e.git(e.repo, "init", "-q", "-b", "main")
	e.write("README.md", "# demo\n")
	e.write("app.py", "def main():\n    return 1\n")
	e.git(e.repo, "add", "-A")
	e.git(e.repo, "commit", "-q", "-m", "initial")
	return e
}

// command runs name with args as the run's user, in its home.
func (e *escapeRun) command(dir, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+e.dir, "DIRTYWORK_HOME="+filepath.Join(e.dir, ".dirtywork"),
		"XDG_CONFIG_HOME="+filepath.Join(e.dir, ".config"),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if e.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	}
	return cmd
}

func (e *escapeRun) git(dir string, args ...string) string {
	e.t.Helper()
	out, err := e.command(dir, "git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (e *escapeRun) write(name, content string) {
	e.t.Helper()
	p := filepath.Join(e.repo, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if e.cred != nil {
		if err := os.Chown(p, int(e.cred.Uid), int(e.cred.Gid)); err != nil {
			e.t.Fatal(err)
		}
	}
}

// dirtywork runs the CLI as the run's user; it returns stdout, stderr and
// the exit code.
func (e *escapeRun) dirtywork(args ...string) (string, string, int) {
	e.t.Helper()
	cmd := e.command(e.repo, e.bin, args...)
	cmd.Env = append(cmd.Env, testMainEnv+"=1")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// run runs the scripted worker's bash commands, then finish.
func (e *escapeRun) run(commands []string, extra ...string) map[string]any {
	e.t.Helper()
	var turns []map[string]any
	for _, c := range commands {
		turns = append(turns, map[string]any{"tool_calls": []map[string]any{{"name": "bash", "arguments": map[string]any{"command": c}}}})
	}
	turns = append(turns, map[string]any{"finish": "done"})
	srv := startScripted(e.t, map[string]any{"turns": turns})
	args := append([]string{
		"run", "--sandbox", "none", "--repo", e.repo, "--base-url", srv,
		"--model", scripted.DefaultModel, "--context-window", "32768",
	}, extra...)
	args = append(args, "try to escape")
	out, errOut, code := e.dirtywork(args...)
	var payload map[string]any
	if err := json.Unmarshal([]byte(out), &payload); err != nil {
		e.t.Fatalf("exit %d, stdout %q: %v\n%s", code, out, err, errOut)
	}
	if tr, ok := payload["transcript"].(string); ok {
		for _, ev := range events(e.t, tr) {
			if ev["event"] == "tool_result" {
				e.t.Logf("tool result: %.300s", ev["result"])
			}
		}
	}
	return payload
}

// noMarker fails the test if the worker's planted code ran on the host.
func (e *escapeRun) noMarker(after string) {
	e.t.Helper()
	if _, err := os.Lstat(e.marker); err == nil {
		e.t.Fatalf("the worker's code ran on the host (%s)", after)
	}
}

// plantCommands are a worker's attempts to make host git run its code:
// a nested repository with filters and an fsmonitor, registered as a
// gitlink with a .gitmodules entry, a .gitattributes that selects the
// filter, the worktree's .git file and its admin dir's commondir pointed
// at that repository.
func (e *escapeRun) plantCommands(admin string) []string {
	touch := "touch " + e.marker
	return []string{
		"git init -q evil && git -C evil config filter.x.clean '" + touch + "' && git -C evil config filter.x.smudge '" + touch + "' && " +
			"git -C evil config filter.x.required true && git -C evil config core.fsmonitor '" + touch + "' && " +
			"echo '* filter=x' > evil/.gitattributes && echo a > evil/a && git -C evil add -A && git -C evil commit -qm x && " +
			"git update-index --add --cacheinfo 160000,$(git -C evil rev-parse HEAD),evil && " +
			"printf '[submodule \"evil\"]\\n\\tpath = evil\\n\\turl = ./evil\\n' > .gitmodules && echo '* filter=x' > .gitattributes && " +
			"git config filter.x.clean '" + touch + "' && git config core.fsmonitor '" + touch + "'; echo planted",
		"printf 'gitdir: %s\\n' \"$PWD/evil/.git\" > .git; rm -f .git; echo redirect tried",
		// python, not a redirect: the deny-list would stop that first, and
		// the point is what the sandbox stops.
		"python3 -c \"import os; open('" + filepath.Join(admin, "commondir") + "','w').write(os.getcwd()+'/evil/.git\\n')\"; echo commondir tried",
		"python3 -c \"open('" + filepath.Join(e.repo, ".git", "config") + "','a').write('[core]\\n\\tfsmonitor = " + touch + "\\n')\"; echo config tried",
	}
}

func TestRunGitEscapesFail(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			e := newEscapeRun(t, cred)
			admin := filepath.Join(e.repo, ".git", "worktrees")
			payload := e.run(e.plantCommands(filepath.Join(admin, "dw-x")))
			if payload["status"] != "completed" {
				t.Fatalf("payload %v", payload)
			}
			wt := payload["worktree"].(string)
			e.noMarker("the run")
			rec, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "run.json"))
			if err != nil || !strings.Contains(string(rec), `"evil/.git"`) {
				t.Errorf("dropped_git_entries does not list evil/.git:\n%s", rec)
			}
			var record struct {
				Jail struct {
					UserNS  struct{ Enabled bool } `json:"user_ns"`
					Seccomp struct{ Enabled bool } `json:"seccomp"`
					Network struct{ Mode string }  `json:"network"`
				} `json:"jail"`
			}
			if err := json.Unmarshal(rec, &record); err != nil || !record.Jail.UserNS.Enabled || !record.Jail.Seccomp.Enabled || record.Jail.Network.Mode != "none" {
				t.Errorf("run.json's jail: %+v (%v)", record.Jail, err)
			}
			// The review the docs recommend, and dirtywork's own git.
			for _, args := range [][]string{{"status"}, {"status", "--porcelain", "--ignore-submodules=none"}, {"diff"}, {"diff", "HEAD"}, {"add", "-A", "--dry-run"}} {
				_ = e.command(wt, "git", append([]string{"-C", wt}, args...)...).Run()
				e.noMarker("git " + strings.Join(args, " ") + " in the worktree")
			}
			if out, errOut, code := e.dirtywork("lane", "list", "--repo", e.repo); code != 0 {
				t.Errorf("lane list: %d %s %s", code, out, errOut)
			}
			e.noMarker("dirtywork lane list")
			slug := filepath.Base(payload["run_dir"].(string))
			second := e.run([]string{"git status >/dev/null; true"}, "--branch-from", "@"+slug)
			if second["status"] != "completed" {
				t.Errorf("run --branch-from @%s: %v", slug, second)
			}
			e.noMarker("run --branch-from @" + slug)
			if out, _ := e.command(e.repo, "git", "-C", e.repo, "config", "--get", "core.fsmonitor").Output(); len(out) > 0 {
				t.Errorf("the repository's config has core.fsmonitor %q", out)
			}
		})
	}
}

func TestRunAllowCommitChangesOnlyTheLane(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			e := newEscapeRun(t, cred)
			e.git(e.repo, "branch", "dirtywork/other-lane")
			main, other := e.git(e.repo, "rev-parse", "main"), e.git(e.repo, "rev-parse", "dirtywork/other-lane")
			blob := e.git(e.repo, "rev-parse", "HEAD:app.py")
			objects := filepath.Join(e.repo, ".git", "objects")
			payload := e.run([]string{
				"echo 'def main():\n    return 2' > app.py && git commit -qam fix && git rev-parse HEAD",
				"git update-ref refs/heads/main HEAD && git update-ref refs/heads/dirtywork/other-lane HEAD && git tag planted HEAD; echo refs",
				"python3 -c \"import os; os.makedirs('" + filepath.Join(objects, blob[:2]) + "', exist_ok=True); open('" + filepath.Join(objects, blob[:2], blob[2:]) + "','w').write('backdoor')\"; echo overwrite tried",
				"git -C " + e.repo + " update-ref refs/heads/main HEAD; echo host ref tried",
			}, "--allow-commit")
			if payload["status"] != "completed" {
				t.Fatalf("payload %v", payload)
			}
			branch := payload["branch"].(string)
			if e.git(e.repo, "rev-parse", "main") != main || e.git(e.repo, "rev-parse", "dirtywork/other-lane") != other {
				t.Error("a branch other than the lane's moved")
			}
			if out, err := e.command(e.repo, "git", "-C", e.repo, "rev-parse", "-q", "--verify", "refs/tags/planted").Output(); err == nil {
				t.Errorf("the worker's tag reached the repository: %s", out)
			}
			if got := e.git(e.repo, "cat-file", "blob", blob); got != "def main():\n    return 1" {
				t.Errorf("the base blob now holds %q", got)
			}
			if got := e.git(e.repo, "log", "-1", "--format=%an %s", branch); got != "dirtywork fix" {
				t.Errorf("the lane's branch: %q", got)
			}
			e.git(e.repo, "fsck", "--strict", "--no-dangling")
		})
	}
}

func TestRunFillIsStoppedDuringTheCommand(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			e := newEscapeRun(t, cred)
			payload := e.run([]string{
				"for i in $(seq 200); do head -c 1048576 /dev/urandom > fill$i; sleep 0.02; done; echo done > finished",
			}, "--max-worktree-mb", "50")
			if payload["status"] != "budget_exceeded" || !strings.Contains(payload["final_message"].(string), "worktree exceeds 50 MB") {
				t.Fatalf("payload %v", payload)
			}
			wt := payload["worktree"].(string)
			if _, err := os.Stat(filepath.Join(wt, "finished")); err == nil {
				t.Error("the command ran to its end")
			}
			if _, err := os.Stat(filepath.Join(wt, "fill1")); err != nil {
				t.Errorf("the evidence is gone: %v", err)
			}
		})
	}
}
