package host

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox/host/confine"
)

// devices are the device files bash may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// policy is the confinement for every bash command of the workspace, less
// the command, bash's path, the namespace mode and the ABI.
//
// What bash may write: the worktree, the scratch dir, the worktree's admin
// dir, a few devices, its own /dev/shm; with allowCommit also the object
// store (less info/ and pack/, which are mounted read-only, so no
// alternates and no repacking) and the directories of the branch's ref and
// reflog. The repository's config, hooks/ and info/ are never writable.
//
// What bash may read: everything outside the operator's home, and inside
// it only the worktree, the git dir and the readable exceptions.
//
// What bash cannot reach by path: the directories holding host daemons'
// sockets (/run, /var/run, X11's, Docker Desktop's, the runtime dir) are
// covered by an empty tmpfs, and a unix DOCKER_HOST socket elsewhere by
// /dev/null. Rule paths under a covered directory are bound back.
func (l layout) policy() confine.Policy {
	var rules []confine.Rule
	for _, p := range outsideHome(l.home) {
		rules = append(rules, confine.Rule{Path: p, Access: confine.Read, Optional: true})
	}
	// exceptions are the rules that must survive hiding: bound back if a
	// covered directory holds them.
	var exceptions []string
	add := func(p string, a confine.Access, optional bool) {
		rules = append(rules, confine.Rule{Path: p, Access: a, Optional: optional})
		exceptions = append(exceptions, p)
	}
	add(l.commonDir, confine.Read, false)
	for _, p := range l.readable {
		add(p, confine.Read, true)
	}
	add(l.worktree, confine.Write, false)
	add(l.scratch, confine.Write, false)
	add(l.adminDir, confine.Write, false)
	for _, d := range devices {
		if _, err := os.Stat(d); err == nil {
			add(d, confine.Device, true)
		}
	}
	var readOnly []string
	if l.allowCommit {
		objects := filepath.Join(l.commonDir, "objects")
		add(objects, confine.Store, false)
		for _, d := range l.refDirs {
			add(d, confine.Store, false)
		}
		readOnly = []string{filepath.Join(objects, "info"), filepath.Join(objects, "pack")}
	}

	hide := l.hiddenDirs()
	var keep []string
	if target, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		exceptions = append(exceptions, target) // name resolution must survive hiding /run
	}
	for _, p := range exceptions {
		if underAny(p, hide) && !underAny(p, keep) {
			keep = append(keep, p)
		}
	}
	var mask []string
	if l.dockerSocket != "" {
		mask = append(mask, l.dockerSocket)
	}
	var fresh []string
	if isDir("/dev/shm") {
		fresh = append(fresh, "/dev/shm")
	}
	return confine.Policy{Rules: rules, Hide: hide, Keep: keep, Mask: mask, Fresh: fresh, ReadOnly: readOnly}
}

// hiddenDirs are the existing directories to cover, resolved, outermost
// first, none inside another.
func (l layout) hiddenDirs() []string {
	candidates := []string{"/run", "/var/run", "/tmp/.X11-unix", l.runtimeDir}
	if l.home != "" {
		// Docker Desktop's sockets live in the home, and Landlock does not
		// stop connect() by path.
		candidates = append(candidates, filepath.Join(l.home, ".docker", "run"), filepath.Join(l.home, ".docker", "desktop"))
	}
	var dirs []string
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(c); err == nil && isDir(r) && r != "/" {
			dirs = append(dirs, r)
		}
	}
	slices.Sort(dirs) // a parent sorts before its children
	dirs = slices.Compact(dirs)
	var out []string
	for _, d := range dirs {
		if !underAny(d, out) {
			out = append(out, d)
		}
	}
	return out
}

// outsideHome lists the entries that together cover every path except
// home and its ancestors: for each directory from / down to home's parent,
// its entries other than the next step towards home. Symlinks are left
// out: whatever one points at outside the home is covered through its
// real path, and one into the home must not open it. Sockets are left out
// too: reading them means nothing. Without a home, "/" covers everything.
func outsideHome(home string) []string {
	if home == "" || home == "/" {
		return []string{"/"}
	}
	var out []string
	parts := strings.Split(strings.TrimPrefix(home, "/"), "/")
	dir := "/"
	for _, next := range parts {
		entries, err := os.ReadDir(dir)
		if err != nil {
			// An unlistable ancestor (a /home others may not list) keeps
			// its other entries unreadable, which is only stricter.
			dir = filepath.Join(dir, next)
			continue
		}
		for _, e := range entries {
			if e.Name() == next || e.Type()&(fs.ModeSymlink|fs.ModeSocket) != 0 {
				continue
			}
			out = append(out, filepath.Join(dir, e.Name()))
		}
		dir = filepath.Join(dir, next)
	}
	return out
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// underAny reports whether p is one of dirs or inside one.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}
