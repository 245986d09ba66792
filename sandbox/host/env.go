package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// passedVars are the only variables bash inherits from the operator
// (E-38). TMPDIR is not among them: bash gets the workspace's scratch dir.
var passedVars = []string{"PATH", "TERM", "LANG"}

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
	for _, tv := range toolchains {
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
// ready: a run calls it before creating its worktree. cache is the file
// that keeps answers across runs (see UserSiteCache), "" for none.
func PrewarmPythonUserSite(env []string, dir, cache string) {
	go pythonUserSite(context.Background(), envMap(env), env, dir, cache)
}

// pythonUserSite is the user site dir of the python3 on the operator's
// PATH, as that interpreter reports it under the operator's environment,
// or "" when there is none, it does not exist, or PYTHONNOUSERSITE is set.
// With HOME pointing at the worktree, bash's python would look for its
// user site there; PYTHONPATH hands it the operator's instead. Concurrent
// callers for one interpreter share one lookup.
//
// cache, when not "", is a file keeping answers across runs: asking a
// python behind a pyenv shim takes hundreds of milliseconds, and the jail
// cannot start without the answer. An answer is reused only while the
// interpreter, the variables and the version files that could change it
// are unchanged (userSiteKey).
func pythonUserSite(ctx context.Context, env map[string]string, envList []string, dir, cache string) string {
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
		key := userSiteKey(py, env, dir)
		if site, ok := cachedUserSite(cache, key); ok {
			l.site, l.ok = site, true
		} else {
			l.site, l.ok = askUserSite(ctx, py, envList, dir)
			if l.ok {
				storeUserSite(cache, key, l.site)
			}
		}
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

// userSiteKey identifies what a python's user site depends on: the
// interpreter (the path and the file it resolves to, with its size and
// time), the variables python and pyenv read, and the pyenv version files
// that could pick another interpreter for dir.
func userSiteKey(py string, env map[string]string, dir string) string {
	h := sha256.New()
	stat := func(p string) {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintln(h, p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	fmt.Fprintln(h, py)
	if r, err := filepath.EvalSymlinks(py); err == nil {
		stat(r)
	}
	for _, k := range []string{"PATH", "HOME", "PYENV_VERSION", "PYENV_ROOT", "PYENV_DIR", "PYTHONUSERBASE", "VIRTUAL_ENV", "PYTHONHOME"} {
		fmt.Fprintf(h, "%s=%s\n", k, env[k])
	}
	root := env["PYENV_ROOT"]
	if root == "" && env["HOME"] != "" {
		root = filepath.Join(env["HOME"], ".pyenv")
	}
	if root != "" {
		stat(filepath.Join(root, "version"))
	}
	for d := dir; ; d = filepath.Dir(d) {
		stat(filepath.Join(d, ".python-version"))
		if d == filepath.Dir(d) {
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// userSiteEntry is one cached answer.
type userSiteEntry struct {
	Key  string `json:"key"`
	Site string `json:"site"`
}

// maxUserSiteEntries bounds the cache file: interpreters come and go.
const maxUserSiteEntries = 16

// cachedUserSite is the answer cached under key, if any.
func cachedUserSite(cache, key string) (string, bool) {
	if cache == "" {
		return "", false
	}
	data, err := os.ReadFile(cache)
	if err != nil {
		return "", false
	}
	var entries []userSiteEntry
	if json.Unmarshal(data, &entries) != nil {
		return "", false
	}
	for _, e := range entries {
		if e.Key == key && (e.Site == "" || filepath.IsAbs(e.Site)) {
			return e.Site, true
		}
	}
	return "", false
}

// storeUserSite adds an answer to the cache, replacing the file
// atomically; failing to is only a slower next run.
func storeUserSite(cache, key, site string) {
	if cache == "" {
		return
	}
	var entries []userSiteEntry
	if data, err := os.ReadFile(cache); err == nil {
		_ = json.Unmarshal(data, &entries)
	}
	entries = slices.DeleteFunc(entries, func(e userSiteEntry) bool { return e.Key == key })
	entries = append(entries, userSiteEntry{Key: key, Site: site})
	if len(entries) > maxUserSiteEntries {
		entries = entries[len(entries)-maxUserSiteEntries:]
	}
	if data, err := json.Marshal(entries); err == nil {
		writeAtomic(cache, data)
	}
}

// writeAtomic replaces file with data through a temporary file beside it,
// making its directory (0700) if need be. It is for caches: a failure only
// leaves the file as it was.
func writeAtomic(file string, data []byte) {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		_ = os.Remove(tmp.Name())
	}
}
