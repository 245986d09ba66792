package egress

import (
	"slices"
	"testing"
)

func TestDefaultHosts(t *testing.T) {
	tests := []struct {
		name  string
		files map[string][]byte
		want  []string
	}{
		{"none", map[string][]byte{"README.md": []byte("https://example.com")}, nil},
		{"npm", map[string][]byte{"package-lock.json": []byte(`{
  "packages": {
    "node_modules/a": {"resolved": "https://registry.npmjs.org/a/-/a-1.0.0.tgz", "funding": {"url": "https://github.com/sponsors/x"}},
    "node_modules/b": {"resolved": "https://npm.example.com:8443/b/-/b-1.0.0.tgz"},
    "node_modules/c": {"resolved": "git+ssh://git@github.com/x/c.git#abc"},
    "node_modules/d": {"resolved": "git+https://gitlab.example.org/x/d.git#abc"}
  }}`)}, []string{"gitlab.example.org", "npm.example.com:8443", "registry.npmjs.org"}},
		{
			"yarn v1",
			map[string][]byte{"web/yarn.lock": []byte("a@^1:\n  version \"1.0.0\"\n  resolved \"https://registry.yarnpkg.com/a/-/a-1.0.0.tgz#abc\"\n")},
			[]string{"registry.npmjs.org", "registry.yarnpkg.com"},
		},
		{
			"pnpm",
			map[string][]byte{"pnpm-lock.yaml": []byte("packages:\n  /a@1.0.0:\n    resolution: {tarball: https://npm.pkg.example.io/a.tgz}\n")},
			[]string{"npm.pkg.example.io", "registry.npmjs.org"},
		},
		{"cargo", map[string][]byte{"Cargo.lock": []byte(`[[package]]
name = "a"
source = "registry+https://github.com/rust-lang/crates.io-index"
[[package]]
name = "b"
source = "sparse+https://cargo.example.net/index/"
[[package]]
name = "c"
source = "git+https://github.com/x/c?rev=abc#abc"
`)}, []string{"cargo.example.net", "crates.io", "github.com", "index.crates.io", "static.crates.io"}},
		{
			"go",
			map[string][]byte{"go.sum": []byte("golang.org/x/net v0.1.0 h1:abc=\n"), "tools/go.mod": []byte("module x\n")},
			[]string{"proxy.golang.org", "sum.golang.org"},
		},
		{
			"pip",
			map[string][]byte{"requirements-dev.txt": []byte("--index-url https://pypi.example.com/simple\n--extra-index-url=https://extra.example.com/simple\nfoo @ https://files.example.org/foo.whl\nbar==1.0\n")},
			[]string{"extra.example.com", "files.example.org", "files.pythonhosted.org", "pypi.example.com", "pypi.org"},
		},
		{
			"poetry",
			map[string][]byte{"poetry.lock": []byte("[package.source]\ntype = \"legacy\"\nurl = \"https://poetry.example.com/simple\"\n")},
			[]string{"files.pythonhosted.org", "poetry.example.com", "pypi.org"},
		},
		{
			"pipfile",
			map[string][]byte{"Pipfile.lock": []byte(`{"_meta": {"sources": [{"name": "pypi", "url": "https://pypi.org/simple", "verify_ssl": true}]}}`)},
			[]string{"files.pythonhosted.org", "pypi.org"},
		},
		{
			"uv",
			map[string][]byte{"uv.lock": []byte("[[package]]\nname = \"a\"\nsource = { registry = \"https://uv.example.com/simple\" }\nwheels = [{ url = \"https://wheels.example.com/a.whl\" }]\n")},
			[]string{"files.pythonhosted.org", "pypi.org", "uv.example.com", "wheels.example.com"},
		},
		{
			"ruby",
			map[string][]byte{"Gemfile.lock": []byte("GEM\n  remote: https://gems.example.com/\n  specs:\n    a (1.0)\n")},
			[]string{"gems.example.com", "index.rubygems.org", "rubygems.org"},
		},
		{
			"vendored lockfiles are passed over by IsLockfile, not here",
			map[string][]byte{"a/Gemfile": nil},
			[]string{"index.rubygems.org", "rubygems.org"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DefaultHosts(tt.files).Strings()
			if len(got) == 0 {
				got = nil
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("DefaultHosts = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsLockfile(t *testing.T) {
	for p, want := range map[string]bool{
		"package-lock.json": true, "a/b/yarn.lock": true, "Cargo.lock": true, "go.sum": true,
		"requirements.txt": true, "requirements/dev.txt": false, "requirements-dev.txt": true, "Gemfile.lock": true,
		"node_modules/x/package.json": false, "vendor/github.com/x/go.mod": false, "src/main.go": false,
		"pyproject.toml": true, "uv.lock": true, "pnpm-lock.yaml": true, "npm-shrinkwrap.json": true,
	} {
		if got := IsLockfile(p); got != want {
			t.Errorf("IsLockfile(%q) = %v, want %v", p, got, want)
		}
	}
}
