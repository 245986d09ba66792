package host

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// passedVars are the only variables bash inherits from the operator
// (E-38). TMPDIR is not among them: bash gets the workspace's scratch dir.
var passedVars = []string{"PATH", "TERM", "LANG"}

// toolchainVars are the toolchain roots bash is told about (E-38): the
// operator's value, else the default under the operator's home if that
// exists. Their directories stay readable although they are in the home.
var toolchainVars = []struct{ name, dir string }{
	{"VOLTA_HOME", ".volta"},
	{"RUSTUP_HOME", ".rustup"},
	{"CARGO_HOME", ".cargo"},
	{"NVM_DIR", ".nvm"},
	{"PYENV_ROOT", ".pyenv"},
}

// envMap indexes an environment list; later entries win, as in exec.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// toolchainRoots returns the toolchain variables bash gets, in order, as
// name=value pairs.
func toolchainRoots(env map[string]string, home string) [][2]string {
	var roots [][2]string
	for _, tv := range toolchainVars {
		if v := env[tv.name]; v != "" {
			roots = append(roots, [2]string{tv.name, v})
			continue
		}
		if home == "" {
			continue
		}
		if dir := filepath.Join(home, tv.dir); isDir(dir) {
			roots = append(roots, [2]string{tv.name, dir})
		}
	}
	return roots
}

// bashEnv is bash's whole environment (E-38): PATH, TERM and LANG as the
// operator has them, TMPDIR the scratch dir, HOME the worktree, PYTHONPATH
// the python user site when there is one, and the toolchain roots.
// Nothing else passes: no keys, no tokens, no provider credentials.
func bashEnv(env map[string]string, home, worktree, scratch, userSite string) []string {
	var out []string
	for _, name := range passedVars {
		if v, ok := env[name]; ok {
			out = append(out, name+"="+v)
		}
	}
	out = append(out, "TMPDIR="+scratch, "HOME="+worktree)
	if userSite != "" {
		out = append(out, "PYTHONPATH="+userSite)
	}
	for _, r := range toolchainRoots(env, home) {
		out = append(out, r[0]+"="+r[1])
	}
	return out
}

// userSiteTimeout bounds asking python for its user site.
const userSiteTimeout = 10 * time.Second

// siteLookup is one interpreter's user site, asked once: asking starts
// python (through a pyenv shim, dozens of processes), which is slow.
type siteLookup struct {
	done chan struct{}
	site string
	// ok is false when the lookup did not finish (timeout, cancellation):
	// that is not the interpreter's answer, so the next caller asks again.
	ok bool
}

var (
	userSitesMu sync.Mutex
	userSites   = map[string]*siteLookup{} // by interpreter path
)

// PrewarmPythonUserSite starts asking the python3 on env's PATH for its
// user site in the background, from dir, so that Open finds the answer
// ready: a run calls it before creating its worktree, which takes about as
// long.
func PrewarmPythonUserSite(env []string, dir string) {
	go pythonUserSite(context.Background(), envMap(env), env, dir)
}

// pythonUserSite is the user site dir of the python3 on the operator's
// PATH, as that interpreter reports it under the operator's environment,
// or "" when there is none, it does not exist, or PYTHONNOUSERSITE is set.
// With HOME pointing at the worktree, bash's python would look for its
// user site there; PYTHONPATH hands it the operator's instead. Concurrent
// callers for one interpreter share one lookup.
func pythonUserSite(ctx context.Context, env map[string]string, envList []string, dir string) string {
	if env["PYTHONNOUSERSITE"] != "" {
		return ""
	}
	py := lookPath("python3", env["PATH"])
	if py == "" {
		return ""
	}
	userSitesMu.Lock()
	l := userSites[py]
	if l != nil {
		select {
		case <-l.done:
			if !l.ok {
				l = nil // the last lookup gave no answer: ask again
			}
		default:
		}
	}
	owner := l == nil
	if owner {
		l = &siteLookup{done: make(chan struct{})}
		userSites[py] = l
	}
	userSitesMu.Unlock()

	if owner {
		l.site, l.ok = askUserSite(ctx, py, envList, dir)
		close(l.done)
	} else {
		select {
		case <-l.done:
		case <-ctx.Done():
			return ""
		}
	}
	if l.site != "" && isDir(l.site) {
		return l.site
	}
	return ""
}

// askUserSite runs the interpreter. ok is false when it did not finish.
func askUserSite(ctx context.Context, py string, envList []string, dir string) (site string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, userSiteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", "import site; print(site.getusersitepackages())")
	cmd.Env = envList
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return "", false
	}
	s := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(s) {
		return "", true // the interpreter answered, with nothing usable
	}
	return s, true
}

// lookPath finds an executable in the search path pathList (not this
// process's PATH). Relative entries are skipped: they would depend on the
// directory the command runs in.
func lookPath(name, pathList string) string {
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// isDir reports whether path is (or links to) a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
