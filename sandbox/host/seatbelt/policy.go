package seatbelt

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Access is what a profile grants on a path, each level including the
// ones before it.
type Access int

// Access levels.
const (
	// Deny grants nothing: the path cannot even be seen to exist.
	Deny Access = iota
	// Metadata grants stat: the directories on the way to what may be
	// read, so that tools resolving a path (realpath, getcwd) get there.
	Metadata
	// Read grants reading, listing and mapping executable (dyld loads
	// libraries; native extensions built in the worktree load too).
	Read
	// Write grants creating, changing and removing as well, and ioctl.
	Write
)

func (a Access) String() string {
	switch a {
	case Deny:
		return "deny"
	case Metadata:
		return "metadata"
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "access(" + strconv.Itoa(int(a)) + ")"
}

// Policy is what one run's profile allows. Paths are absolute; they are
// canonicalised (Canonical) when the rules are made, as every path asked
// about is.
type Policy struct {
	// Worktree is the lane's worktree: read and written.
	Worktree string
	// Writable are the run's other writable directories: the worker's
	// private git dir and the run's own temporary directory.
	Writable []string
	// ReadOnly are read, never written: the tool server's binary, the
	// base objects, the declared toolchains' exposed entries, the python
	// user site, the selected Xcode.
	ReadOnly []string
	// Hidden are neither read nor written, wherever they lie (inside the
	// worktree, a toolchain or a system directory): the worktree's own
	// .git, which leads to the host repository, and files of toolchains
	// that may hold credentials.
	Hidden []string
	// Home is the operator's home: no system directory's grant reaches
	// into it; only the worktree, Writable and ReadOnly paths inside it
	// are reachable.
	Home string
	// ProxyPort is the egress proxy's port on loopback, the only
	// connection allowed; 0 allows no network at all.
	ProxyPort int
}

// SystemRead are the system's directories the profile lets every run
// read (less the operator's home and Hidden, should they lie inside):
// what programs, their libraries and their configuration are made of.
// /private/etc is read as Linux's /etc is in the jail: git's and the
// shells' system configuration, the CA certificates, the time zones'
// link; nothing in it is the operator's.
var SystemRead = []string{
	"/bin", "/sbin", "/usr", // the base system, /usr/local (Homebrew on Intel) included
	"/System",             // frameworks and the dyld cache (less the data volume: systemDataVolume)
	"/Library",            // system-wide frameworks, the command line tools, preferences
	"/opt",                // Homebrew on Apple silicon, MacPorts
	"/private/etc",        // system configuration (/etc)
	"/private/var/select", // the shell /bin/sh runs (/private/var/select/sh)
	"/private/var/db/timezone",
	"/private/var/db/dyld",              // the dyld cache of older systems
	"/private/var/db/xcode_select_link", // which developer directory xcrun (and /usr/bin/git) uses
}

// systemDataVolume is where the data volume is mounted; the home
// directories are reachable through it too (/System/Volumes/Data/Users),
// so /System's grant stops short of it.
const systemDataVolume = "/System/Volumes/Data"

// rule is one grant of the profile: access to the paths match selects,
// less those under except.
type rule struct {
	// why is the profile's comment for the rule.
	why    string
	access Access
	match  matcher
	// except are subpaths carved out of the grant.
	except []matcher
}

// matcher selects paths: a path and what is under it (subpath), a path
// alone (literal), or the paths a constant regular expression matches.
type matcher struct {
	kind kind
	// path is canonical; param, when set, is the profile's parameter
	// that carries it (a run's path), else path is written out (a
	// constant of this package).
	path, param string
	// re is the expression of a regex matcher, a constant of this
	// package.
	re *regexp.Regexp
}

type kind int

const (
	subpath kind = iota
	literal
	regex
)

// matches reports whether m selects canonical path p.
func (m matcher) matches(p string) bool {
	switch m.kind {
	case subpath:
		return under(p, m.path)
	case literal:
		return p == m.path
	default:
		return m.re.MatchString(p)
	}
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// netRule allows connections to one port of loopback.
type netRule struct {
	why  string
	port int
}

// devices are the device files every run uses, and how: the terminal,
// the bit buckets, randomness, its own descriptors, pseudo-terminals (the
// tool server runs commands on one).
var devices = []rule{
	{why: "the bit buckets and the controlling terminal", access: Write, match: lit("/dev/null")},
	{access: Write, match: lit("/dev/zero")},
	{access: Write, match: lit("/dev/tty")},
	{why: "randomness", access: Read, match: lit("/dev/random")},
	{access: Read, match: lit("/dev/urandom")},
	{why: "a process's own descriptors (/dev/stdin, /dev/fd/N)", access: Write, match: sub("/dev/fd")},
	{why: "pseudo-terminals: the multiplexer and the terminals it hands out", access: Write, match: lit("/dev/ptmx")},
	{access: Write, match: matcher{kind: regex, re: regexp.MustCompile(`^/dev/ttys[0-9]+$`)}},
	{why: "/dev itself: stat only", access: Metadata, match: lit("/dev")},
}

func lit(p string) matcher { return matcher{kind: literal, path: p} }
func sub(p string) matcher { return matcher{kind: subpath, path: p} }

// ErrBadPath: a path of the policy cannot be given to sandbox-exec.
var ErrBadPath = errors.New("seatbelt: unusable path")

// checkPath refuses a path that is not absolute or holds a NUL (which no
// argument to sandbox-exec can carry).
func checkPath(what, p string) error {
	if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%w: %s %q", ErrBadPath, what, p)
	}
	return nil
}

// rules is the profile's file rules in the order written, and its network
// rules: what Profile writes and what Decide and Connect evaluate.
func (p Policy) rules() ([]rule, []netRule, error) {
	if err := checkPath("worktree", p.Worktree); err != nil {
		return nil, nil, err
	}
	for _, set := range []struct {
		what  string
		paths []string
	}{{"writable path", p.Writable}, {"read-only path", p.ReadOnly}, {"hidden path", p.Hidden}} {
		for _, q := range set.paths {
			if err := checkPath(set.what, q); err != nil {
				return nil, nil, err
			}
		}
	}
	if p.Home != "" {
		if err := checkPath("home", p.Home); err != nil {
			return nil, nil, err
		}
	}
	if p.ProxyPort < 0 || p.ProxyPort > 65535 {
		return nil, nil, fmt.Errorf("seatbelt: proxy port %d out of range", p.ProxyPort)
	}

	hidden := make([]matcher, 0, len(p.Hidden))
	for i, h := range dedupe(p.Hidden) {
		hidden = append(hidden, matcher{kind: subpath, path: h, param: "HIDDEN_" + strconv.Itoa(i)})
	}
	// exceptUnder are the hidden paths inside root (or holding it): only
	// those can matter to a grant of root.
	exceptUnder := func(root string, extra ...matcher) []matcher {
		var out []matcher
		for _, h := range append(extra, hidden...) {
			if under(h.path, root) || under(root, h.path) {
				out = append(out, h)
			}
		}
		return out
	}

	worktree := Canonical(p.Worktree)
	writable := dedupe(p.Writable)
	readOnly := dedupe(p.ReadOnly)
	var rs []rule

	// The way down to every path of the run's: stat only.
	var ways []string
	for _, q := range slices.Concat([]string{worktree}, writable, readOnly) {
		for d := filepath.Dir(q); ; d = filepath.Dir(d) {
			if !slices.Contains(ways, d) {
				ways = append(ways, d)
			}
			if d == "/" {
				break
			}
		}
	}
	slices.Sort(ways)
	for i, d := range ways {
		r := rule{access: Metadata, match: matcher{kind: literal, path: d, param: "WAY_" + strconv.Itoa(i)}}
		if i == 0 {
			r.why = "the directories on the way to the run's paths: stat only"
		}
		r.except = exceptUnder(d)
		rs = append(rs, r)
	}
	rs = append(rs, rule{
		why: "the root directory's names (getcwd and realpath start there)", access: Read, match: lit("/"),
	})

	var home []matcher
	if p.Home != "" {
		home = []matcher{{kind: subpath, path: Canonical(p.Home), param: "HOME"}}
	}
	for i, s := range SystemRead {
		r := rule{access: Read, match: sub(s)}
		if i == 0 {
			r.why = "the system: programs, libraries, configuration; never the operator's home"
		}
		extra := home
		if s == "/System" {
			extra = append(slices.Clone(home), sub(systemDataVolume))
		}
		r.except = exceptUnder(s, extra...)
		rs = append(rs, r)
	}
	for _, d := range devices {
		d.except = exceptUnder(d.match.path)
		rs = append(rs, d)
	}
	for i, q := range readOnly {
		r := rule{access: Read, match: matcher{kind: subpath, path: q, param: "READ_" + strconv.Itoa(i)}, except: exceptUnder(q)}
		if i == 0 {
			r.why = "read-only: the tool server, the base objects, the declared toolchains"
		}
		rs = append(rs, r)
	}
	for i, q := range writable {
		r := rule{access: Write, match: matcher{kind: subpath, path: q, param: "WRITE_" + strconv.Itoa(i)}, except: exceptUnder(q)}
		if i == 0 {
			r.why = "the run's own directories: its git dir, its temporary directory"
		}
		rs = append(rs, r)
	}
	rs = append(rs, rule{
		why: "the worktree, less its .git (the host repository's way in)", access: Write,
		match: matcher{kind: subpath, path: worktree, param: "WORKTREE"}, except: exceptUnder(worktree),
	})

	var net []netRule
	if p.ProxyPort != 0 {
		net = append(net, netRule{why: "the egress proxy on loopback, nothing else", port: p.ProxyPort})
	}
	return rs, net, nil
}

// dedupe canonicalises paths and drops repeats, keeping the first's
// place.
func dedupe(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, q := range paths {
		c := Canonical(q)
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Decide is what the policy's profile grants on path: the most any rule
// grants it, nothing when a hidden path holds it. Path is canonicalised
// first, as the kernel resolves it before Seatbelt looks: "..", symlinks
// on the way (resolved where they exist), and macOS's /tmp, /var and /etc
// (links into /private). An invalid policy grants nothing.
func (p Policy) Decide(path string) Access {
	rs, _, err := p.rules()
	if err != nil || !filepath.IsAbs(path) {
		return Deny
	}
	return decide(rs, Canonical(path))
}

// decide evaluates rules on canonical path c.
func decide(rs []rule, c string) Access {
	best := Deny
	for _, r := range rs {
		if r.access <= best || !r.match.matches(c) {
			continue
		}
		if slices.ContainsFunc(r.except, func(m matcher) bool { return m.matches(c) }) {
			continue
		}
		best = r.access
	}
	return best
}

// Connect reports whether the profile lets a process connect to host
// (a name or address) and port: only loopback's proxy port, and only
// when the policy has one.
func (p Policy) Connect(host string, port int) bool {
	_, net, err := p.rules()
	if err != nil || !loopback(host) {
		return false
	}
	return slices.ContainsFunc(net, func(n netRule) bool { return n.port == port })
}

// loopback reports whether host is what Seatbelt's "localhost" stands for.
func loopback(host string) bool {
	switch strings.ToLower(strings.Trim(host, "[]")) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// firmlinks are macOS's top-level symbolic links into /private: the
// kernel hands Seatbelt the resolved path, so rules and questions name
// that one.
var firmlinks = []string{"/tmp", "/var", "/etc"}

// Canonical is p as Seatbelt sees it: cleaned ("." and ".." gone),
// symlinks resolved as far as the path exists, and /tmp, /var and /etc
// replaced by what they link to on macOS (/private/...), on every system,
// so that the decisions do not depend on where they are computed.
func Canonical(p string) string {
	p = resolveExisting(filepath.Clean(p))
	for _, l := range firmlinks {
		if under(p, l) {
			return "/private" + p
		}
	}
	return p
}

// resolveExisting resolves the symlinks of the longest part of p that
// exists and keeps the rest as it is.
func resolveExisting(p string) string {
	rest := ""
	for d := p; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(r, rest)
		}
		if d == "/" || d == "." {
			return p
		}
		rest = filepath.Join(filepath.Base(d), rest)
	}
}
