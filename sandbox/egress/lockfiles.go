package egress

import (
	"net"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Registries' hosts, by ecosystem: what their clients reach for the
// packages a lockfile names.
var (
	npmHosts   = []string{"registry.npmjs.org"}
	yarnHosts  = []string{"registry.yarnpkg.com", "registry.npmjs.org"}
	cratesIO   = []string{"index.crates.io", "static.crates.io", "crates.io"}
	goHosts    = []string{"proxy.golang.org", "sum.golang.org"}
	pypiHosts  = []string{"pypi.org", "files.pythonhosted.org"}
	rubyHosts  = []string{"rubygems.org", "index.rubygems.org"}
	cratesRepo = "https://github.com/rust-lang/crates.io-index"
)

// MaxLockfileBytes is the largest lockfile read; a larger one counts as
// naming only its ecosystem's default registry.
const MaxLockfileBytes = 32 << 20

// IsLockfile reports whether the file at p (slash-separated) is one
// DefaultHosts reads. Files under node_modules and vendor directories are
// other projects' and do not count.
func IsLockfile(p string) bool {
	for dir := range strings.SplitSeq(path.Dir(p), "/") {
		if dir == "node_modules" || dir == "vendor" {
			return false
		}
	}
	return kindOf(path.Base(p)) != ""
}

// kindOf is the ecosystem a lockfile or manifest's name says, or "".
func kindOf(name string) string {
	switch name {
	case "package-lock.json", "npm-shrinkwrap.json", "package.json":
		return "npm"
	case "yarn.lock":
		return "yarn"
	case "pnpm-lock.yaml":
		return "pnpm"
	case "Cargo.lock", "Cargo.toml":
		return "cargo"
	case "go.sum", "go.mod":
		return "go"
	case "poetry.lock", "Pipfile.lock", "uv.lock", "pyproject.toml", "Pipfile":
		return "python"
	case "Gemfile.lock", "Gemfile":
		return "ruby"
	}
	if strings.HasPrefix(name, "requirements") && strings.HasSuffix(name, ".txt") {
		return "pip"
	}
	return ""
}

// Patterns of the URLs lockfiles name packages by.
var (
	// npm's and yarn v1's "resolved", pnpm's "tarball".
	resolvedURL = regexp.MustCompile(`(?m)(?:"resolved"\s*:\s*"|^\s*resolved\s+"|tarball:\s*['"]?)([a-zA-Z][a-zA-Z0-9+.-]*://[^"'\s]+)`)
	// Cargo.lock's `source = "registry+https://…"`.
	cargoSource = regexp.MustCompile(`(?m)^source\s*=\s*"(?:registry|sparse|git)\+([^"#?]+)`)
	// requirements files' index options and direct references.
	pipOption = regexp.MustCompile(`(?m)(?:^|\s)(?:--index-url|--extra-index-url|--find-links|-i|-f)[=\s]+(\S+)`)
	pipDirect = regexp.MustCompile(`(?m)@\s*(https?://\S+)`)
	// poetry.lock's and uv.lock's sources, Pipfile.lock's "url".
	tomlURL = regexp.MustCompile(`(?m)(?:\burl|\bregistry|"url")\s*[=:]\s*"(https?://[^"]+)"`)
	// Gemfile.lock's "remote:" lines.
	gemRemote = regexp.MustCompile(`(?m)^\s*remote:\s*(\S+)`)
)

// DefaultHosts is the allowlist the lockfiles and manifests in files
// (path -> content) call for: the default registries of every ecosystem
// present, and every other host their package URLs name, on that URL's
// port (HTTPS and HTTP when the URL gives none). Hosts of URLs that are
// not http or https (git+ssh, file) are left out: the proxy speaks HTTP.
func DefaultHosts(files map[string][]byte) Allowlist {
	hosts := map[string]bool{}
	add := func(hs ...string) {
		for _, h := range hs {
			hosts[h] = true
		}
	}
	addURL := func(raw string) {
		raw = strings.TrimPrefix(strings.TrimPrefix(raw, "git+"), "registry+")
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
			return
		}
		if raw == cratesRepo || strings.HasPrefix(raw, cratesRepo+"/") {
			add(cratesIO...)
			return
		}
		h := u.Hostname()
		if p := u.Port(); p != "" {
			h = net.JoinHostPort(h, p)
		}
		add(h)
	}
	each := func(re *regexp.Regexp, data []byte) {
		for _, m := range re.FindAllSubmatch(data, -1) {
			addURL(string(m[1]))
		}
	}
	for p, data := range files {
		if len(data) > MaxLockfileBytes {
			data = nil
		}
		switch kindOf(path.Base(p)) {
		case "npm", "pnpm":
			add(npmHosts...)
			each(resolvedURL, data)
		case "yarn":
			add(yarnHosts...)
			each(resolvedURL, data)
		case "cargo":
			add(cratesIO...)
			each(cargoSource, data)
		case "go":
			add(goHosts...)
		case "python":
			add(pypiHosts...)
			each(tomlURL, data)
		case "pip":
			add(pypiHosts...)
			each(pipOption, data)
			each(pipDirect, data)
		case "ruby":
			add(rubyHosts...)
			each(gemRemote, data)
		}
	}
	names := make([]string, 0, len(hosts))
	for h := range hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	var l Allowlist
	for _, h := range names {
		if r, err := ParseRule(h); err == nil {
			l = l.With(r)
		}
	}
	return l
}
