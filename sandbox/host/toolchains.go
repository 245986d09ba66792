package host

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// toolchain is a toolchain root bash is told about (E-38), the operator's
// value or the default under the operator's home if that exists, and what
// of it the jail shows: the entries running the toolchain needs, never
// the rest (a registry token beside them, say).
type toolchain struct {
	// name is the variable, dir the root's default under the home.
	name, dir string
	// needed are the root's entries the jail shows, as names or
	// filepath.Match patterns; every other entry is withheld.
	needed []string
	// secrets are patterns, relative to the root, of files inside needed
	// entries that may hold credentials whatever their mode: they are
	// covered.
	secrets []string
}

// toolchains are the known roots, in the order bash gets their variables.
var toolchains = []toolchain{
	{
		// The shims, the tools they run, the layout marker (without it
		// volta sets out to migrate, that is write, its home) and the
		// hooks; not its cache, log or tmp.
		name: "VOLTA_HOME", dir: ".volta",
		needed:  []string{"bin", "tools", "layout.v*", "hooks.json"},
		secrets: []string{"tools/image/node/*/etc/npmrc"},
	},
	{
		// The toolchains, the default one's setting and the update hashes;
		// not downloads or tmp.
		name: "RUSTUP_HOME", dir: ".rustup",
		needed: []string{"toolchains", "settings.toml", "update-hashes"},
	},
	{
		// The proxies and installed binaries, the crates and git
		// dependencies already fetched, the configuration; never
		// credentials.toml or credentials (registry tokens).
		name: "CARGO_HOME", dir: ".cargo",
		needed: []string{"bin", "registry", "git", "config.toml", "config"},
	},
	{
		// nvm itself, the installed versions and their aliases; a global
		// npmrc (where `npm config set -g` puts a token) is covered.
		name: "NVM_DIR", dir: ".nvm",
		needed:  []string{"nvm.sh", "nvm-exec", "versions", "alias"},
		secrets: []string{"versions/node/*/etc/npmrc", "versions/io.js/*/etc/npmrc"},
	},
	{
		// pyenv's commands, plugins and hooks, the shims, the versions and
		// the global version file; a virtualenv's pip.conf (an index URL
		// with a password) is covered.
		name: "PYENV_ROOT", dir: ".pyenv",
		needed:  []string{"bin", "libexec", "plugins", "pyenv.d", "shims", "versions", "version"},
		secrets: []string{"versions/*/pip.conf"},
	},
}

// Toolchain is what the jail shows of one toolchain root: run_start's
// account of it.
type Toolchain struct {
	// Var is the variable bash finds the root in, Root the root, resolved.
	Var  string `json:"var"`
	Root string `json:"root"`
	// Exposed are the paths bound read-only: what running the toolchain
	// needs.
	Exposed []string `json:"exposed"`
	// Withheld are the root's other entries, files only their owner may
	// read, and files that may hold credentials inside what is exposed
	// (covered in the jail).
	Withheld []string `json:"withheld,omitempty"`
}

// How files only their owner may read stay closed inside exposed paths
// (Info.ToolchainPrivate).
const (
	// privateUnreadable: the worker is not their owner (a root operator's
	// worker is a uid of its own on the host, and toolchains are bound
	// unmapped), so the kernel refuses them at any depth, at no cost.
	privateUnreadable = "unreadable"
	// privateCovered: the worker is their owner (a non-root operator's
	// worker is the operator), so those found within two levels of each
	// exposed path are covered; walking whole toolchains (gigabytes, a
	// quarter of a million files) at every start is out of the question.
	privateCovered = "covered_two_levels"
	// privateReadable: no jail at all; the worker sees the host.
	privateReadable = "readable"
)

// Bounds of the walk for private files (privateCovered).
const (
	maxPrivateScan   = 4096
	maxPrivateCovers = 64
)

// toolchainPlan is what the jail shows of the toolchain roots.
type toolchainPlan struct {
	// exposed are bound read-only and unmapped; hidden are covered.
	exposed, hidden []string
	// roots is run_start's account, private how private files are kept.
	roots   []Toolchain
	private string
}

// planToolchains settles what the jail shows of the toolchain roots bash
// is told about: the needed entries of each, less files only their owner
// may read (kernelHides: the worker is not their owner, and the kernel
// refuses them; otherwise they are looked for near the top and covered)
// and files that may hold credentials. It costs a directory read per
// root and a stat per needed entry (and, without kernelHides, a walk of
// two levels). Without a jail (jailed false) everything is visible, and it
// says so.
func planToolchains(env map[string]string, home string, jailed, kernelHides bool) toolchainPlan {
	var p toolchainPlan
	switch {
	case !jailed:
		p.private = privateReadable
	case kernelHides:
		p.private = privateUnreadable
	default:
		p.private = privateCovered
	}
	scan := &privateScan{budget: maxPrivateScan}
	for _, r := range toolchainRoots(env, home) {
		tc := toolchainNamed(r[0])
		root, err := filepath.EvalSymlinks(r[1])
		if err != nil || !filepath.IsAbs(root) || !isDir(root) {
			continue
		}
		t := Toolchain{Var: r[0], Root: root}
		if !jailed {
			t.Exposed = []string{root}
			p.roots = append(p.roots, t)
			continue
		}
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Withheld = []string{root}
			p.roots = append(p.roots, t)
			continue
		}
		for _, e := range entries {
			path := filepath.Join(root, e.Name())
			if !tc.needs(e.Name()) {
				t.Withheld = append(t.Withheld, path)
				continue
			}
			fi, err := os.Stat(path)
			if err != nil || private(fi.Mode()) {
				t.Withheld = append(t.Withheld, path)
				continue
			}
			if !kernelHides && fi.IsDir() {
				covers, ok := scan.dir(path)
				if !ok {
					t.Withheld = append(t.Withheld, path) // more than can be covered
					continue
				}
				t.Withheld = append(t.Withheld, covers...)
				p.hidden = append(p.hidden, covers...)
			}
			t.Exposed = append(t.Exposed, path)
		}
		for _, pattern := range tc.secrets {
			for _, m := range expand(root, pattern) {
				if underAny(m, t.Exposed) && !slices.Contains(p.hidden, m) {
					t.Withheld = append(t.Withheld, m)
					p.hidden = append(p.hidden, m)
				}
			}
		}
		p.exposed = append(p.exposed, t.Exposed...)
		p.roots = append(p.roots, t)
	}
	return p
}

// expand returns the paths under root that pattern names: its parts are
// separated by "/", a "*" part stands for every entry there, any other
// part is a name. It costs a directory read per "*" and a stat per
// candidate, no more (filepath.Glob reads every directory on the way).
func expand(root, pattern string) []string {
	paths := []string{root}
	for part := range strings.SplitSeq(pattern, "/") {
		var next []string
		for _, p := range paths {
			if part != "*" {
				next = append(next, filepath.Join(p, part))
				continue
			}
			entries, _ := os.ReadDir(p) // not there: nothing to expand
			for _, e := range entries {
				next = append(next, filepath.Join(p, e.Name()))
			}
		}
		paths = next
	}
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// toolchainNamed is the known toolchain of variable name.
func toolchainNamed(name string) toolchain {
	for _, tc := range toolchains {
		if tc.name == name {
			return tc
		}
	}
	return toolchain{name: name}
}

// needs reports whether the jail shows the root's entry name.
func (tc toolchain) needs(name string) bool {
	for _, pattern := range tc.needed {
		if ok, _ := filepath.Match(pattern, name); ok {
			return true
		}
	}
	return false
}

// private reports whether only a file's owner may read it (or, for a
// directory, list it).
func private(mode fs.FileMode) bool { return mode.Perm()&0o044 == 0 }

// privateScan looks for private entries within two levels of exposed
// directories, within a budget of entries.
type privateScan struct {
	budget int
	covers int
}

// dir returns the private entries within two levels of dir. ok is false
// when there are more than can be covered; the walk stops quietly once
// its budget is spent.
func (s *privateScan) dir(dir string) (covers []string, ok bool) {
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		entries, err := os.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range entries {
			if s.budget <= 0 {
				return
			}
			s.budget--
			p := filepath.Join(d, e.Name())
			fi, err := e.Info()
			if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
				continue // a link's target is looked at where it lies, if exposed
			}
			if private(fi.Mode()) {
				covers = append(covers, p) // a private directory is covered whole
				continue
			}
			if depth < 2 && fi.IsDir() {
				walk(p, depth+1)
			}
		}
	}
	walk(dir, 1)
	if s.covers+len(covers) > maxPrivateCovers {
		return nil, false
	}
	s.covers += len(covers)
	return covers, true
}

// underAny reports whether p is one of dirs or inside one.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || len(p) > len(d) && p[:len(d)] == d && p[len(d)] == filepath.Separator {
			return true
		}
	}
	return false
}
