package host

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// layout is what bash's confinement is built from. Every path is absolute
// with symlinks resolved: Landlock attaches a rule to the file a path names,
// and the comparisons below are on strings.
type layout struct {
	// home is the operator's home, "" when there is none to hide.
	home string
	// worktree, scratch and adminDir are writable.
	worktree, scratch, adminDir string
	// commonDir is readable; with allowCommit its objects and refDirs are
	// a Store.
	commonDir string
	// readable are more read-only exceptions inside the home: toolchain
	// roots, the python user site, object stores the repository borrows.
	readable []string
	// allowCommit lets bash add objects and update the branch's ref.
	allowCommit bool
	// refDirs are the directories holding the branch's ref and its reflog.
	refDirs []string
	// dockerSocket is the path of a unix DOCKER_HOST, "" when none.
	dockerSocket string
	// runtimeDir is the operator's XDG_RUNTIME_DIR, "" when unset.
	runtimeDir string
}

// layout gathers the paths bash's policy is built from. With AllowCommit
// it creates the directories of the branch's ref and reflog if a packed
// ref left them missing, since bash may create files in them but not
// directories beside them.
func (w *Workspace) layout(env map[string]string, home, userSite string) (layout, error) {
	l := layout{
		home:        home,
		worktree:    w.worktree,
		scratch:     w.scratch,
		adminDir:    w.adminDir,
		commonDir:   w.commonDir,
		allowCommit: w.cfg.AllowCommit,
		runtimeDir:  env["XDG_RUNTIME_DIR"],
	}
	for _, r := range toolchainRoots(env, home) {
		if p, err := filepath.EvalSymlinks(r[1]); err == nil {
			l.readable = append(l.readable, p)
		}
	}
	if userSite != "" {
		if p, err := filepath.EvalSymlinks(userSite); err == nil {
			l.readable = append(l.readable, p)
		}
	}
	l.readable = append(l.readable, alternates(w.commonDir)...)
	if sock, ok := strings.CutPrefix(env["DOCKER_HOST"], "unix://"); ok && filepath.IsAbs(sock) {
		// Only a file can be covered with /dev/null; a socket that is not
		// there yet cannot be reached either.
		if r, err := filepath.EvalSymlinks(sock); err == nil && !isDir(r) {
			l.dockerSocket = r
		}
	}
	if w.cfg.AllowCommit {
		dirs, err := branchRefDirs(w.commonDir, w.cfg.Branch)
		if err != nil {
			return layout{}, err
		}
		l.refDirs = dirs
	}
	return l, nil
}

// branchRefDirs returns, creating them if needed, the directories that
// hold branch's ref and its reflog in the common git dir. Git updates a
// ref by writing <ref>.lock beside it and renaming it into place, so bash
// needs the directory, not just the file; other branches in the same
// directory (other dirtywork lanes) are therefore writable too.
func branchRefDirs(commonDir, branch string) ([]string, error) {
	name := strings.TrimPrefix(branch, "refs/heads/")
	if name == "" || strings.Contains(name, "..") || filepath.IsAbs(name) {
		return nil, fmt.Errorf("open host workspace: invalid branch %q for --allow-commit", branch)
	}
	sub := filepath.Dir(filepath.FromSlash(name))
	var dirs []string
	for _, base := range []string{"refs/heads", "logs/refs/heads"} {
		dir := filepath.Join(commonDir, base, sub)
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return nil, fmt.Errorf("create ref directory %s: %w", dir, err)
		}
		r, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return nil, fmt.Errorf("resolve ref directory %s: %w", dir, err)
		}
		if !under(r, commonDir) {
			return nil, fmt.Errorf("ref directory %s resolves outside the git dir (%s)", dir, r)
		}
		dirs = append(dirs, r)
	}
	return dirs, nil
}

// operatorHome is the home whose contents bash may not read, resolved, or
// "" when there is none.
func operatorHome(configured string, env map[string]string) string {
	home := configured
	if home == "" {
		home = env["HOME"]
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" || !filepath.IsAbs(home) {
		return ""
	}
	r, err := filepath.EvalSymlinks(home)
	if err != nil {
		return ""
	}
	return r
}

// alternates are the object stores a repository borrows from, listed in
// objects/info/alternates (one path per line, relative to the object
// store), resolved. Git must read them to find objects.
func alternates(commonDir string) []string {
	objects := filepath.Join(commonDir, "objects")
	f, err := os.Open(filepath.Join(objects, "info", "alternates"))
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }() // only read: nothing to lose
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objects, line)
		}
		if r, err := filepath.EvalSymlinks(line); err == nil {
			out = append(out, r)
		}
	}
	return out
}
