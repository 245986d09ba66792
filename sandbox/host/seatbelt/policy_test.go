package seatbelt

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testRun is a run's layout on disk: an operator's home holding the
// worktree and a toolchain, and the run's private directory elsewhere.
type testRun struct {
	home, worktree, private string
	policy                  Policy
}

func newTestRun(t *testing.T, proxyPort int) testRun {
	t.Helper()
	root := t.TempDir()
	r := testRun{
		home:    filepath.Join(root, "home"),
		private: filepath.Join(root, "dirtywork-worker-1"),
	}
	r.worktree = filepath.Join(r.home, "src", "repo", ".dirtywork", "lane")
	for _, d := range []string{
		r.worktree, filepath.Join(r.home, ".ssh"), filepath.Join(r.home, ".cargo", "bin"),
		filepath.Join(r.home, ".volta", "tools", "image", "node", "20", "etc"),
		filepath.Join(r.private, "git"), filepath.Join(r.private, "tmp"), filepath.Join(r.private, "base", "objects"),
		filepath.Join(r.worktree, "src"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{
		filepath.Join(r.worktree, ".git"), filepath.Join(r.home, ".ssh", "id_ed25519"),
		filepath.Join(r.home, ".cargo", "credentials.toml"), filepath.Join(r.home, ".cargo", "bin", "cargo"),
		filepath.Join(r.home, ".volta", "tools", "image", "node", "20", "etc", "npmrc"),
	} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A worker's tricks: links out of the tree, and onto its .git.
	for link, target := range map[string]string{
		filepath.Join(r.worktree, "key"):     filepath.Join(r.home, ".ssh", "id_ed25519"),
		filepath.Join(r.worktree, "gitlink"): filepath.Join(r.worktree, ".git"),
		filepath.Join(r.worktree, "up"):      r.home,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	r.policy = Policy{
		Worktree: r.worktree,
		Writable: []string{filepath.Join(r.private, "git"), filepath.Join(r.private, "tmp")},
		ReadOnly: []string{
			filepath.Join(r.private, "base", "objects"),
			filepath.Join(r.home, ".cargo", "bin"), filepath.Join(r.home, ".volta", "tools"),
		},
		Hidden: []string{
			filepath.Join(r.worktree, ".git"),
			filepath.Join(r.home, ".volta", "tools", "image", "node", "20", "etc", "npmrc"),
		},
		Home:      r.home,
		ProxyPort: proxyPort,
	}
	return r
}

func TestDecide(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, 0)
	pr, err := r.policy.Profile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		want Access
	}{
		{"worktree file", filepath.Join(r.worktree, "src", "main.go"), Write},
		{"new file deep in the worktree", filepath.Join(r.worktree, "a", "b", "c.txt"), Write},
		{"the worktree itself", r.worktree, Write},
		{"worktree .git", filepath.Join(r.worktree, ".git"), Deny},
		{"inside worktree .git", filepath.Join(r.worktree, ".git", "config"), Deny},
		{".git reached through ..", filepath.Join(r.worktree, "src", "..", ".git"), Deny},
		{".git reached through a symlink", filepath.Join(r.worktree, "gitlink"), Deny},
		{"a key reached through a symlink", filepath.Join(r.worktree, "key"), Deny},
		{"home reached through a symlink dir", filepath.Join(r.worktree, "up", ".ssh", "id_ed25519"), Deny},
		{"a key reached through .. out of the tree", r.worktree + "/../../../../.ssh/id_ed25519", Deny},
		{"temp dir file", filepath.Join(r.private, "tmp", "build", "x.o"), Write},
		{"private git dir", filepath.Join(r.private, "git", "objects", "ab"), Write},
		{"base objects read only", filepath.Join(r.private, "base", "objects", "pack", "p.pack"), Read},
		{"the run's lock file", filepath.Join(r.private, ".owner"), Deny},
		{"home ssh key", filepath.Join(r.home, ".ssh", "id_ed25519"), Deny},
		{"home directory listing: stat only", r.home, Metadata},
		{"home file", filepath.Join(r.home, ".zsh_history"), Deny},
		{"toolchain read, not written", filepath.Join(r.home, ".cargo", "bin", "cargo"), Read},
		{"toolchain credentials withheld", filepath.Join(r.home, ".cargo", "credentials.toml"), Deny},
		{"toolchain secret hidden", filepath.Join(r.home, ".volta", "tools", "image", "node", "20", "etc", "npmrc"), Deny},
		{"toolchain beside the secret", filepath.Join(r.home, ".volta", "tools", "image", "node", "20", "bin", "node"), Read},
		{"/etc read", "/etc/gitconfig", Read},
		{"/private/etc read", "/private/etc/ssl/cert.pem", Read},
		{"system binary", "/usr/bin/git", Read},
		{"homebrew", "/opt/homebrew/bin/go", Read},
		{"system framework", "/System/Library/Frameworks/Security.framework/Security", Read},
		{"home through the data volume", "/System/Volumes/Data/Users/me/.ssh/id_ed25519", Deny},
		{"host /tmp", "/tmp/other-run/file", Deny},
		{"host /private/tmp", "/private/tmp/other-run/file", Deny},
		{"another run's temp dir", "/var/folders/q1/abc/T/dirtywork-worker-2/tmp/f", Deny},
		{"/dev/null", "/dev/null", Write},
		{"a pseudo-terminal", "/dev/ttys003", Write},
		{"a disk", "/dev/disk0", Deny},
		{"randomness", "/dev/urandom", Read},
		{"root listing", "/", Read},
		{"users", "/Users", Deny},
		{"a relative path", "src/main.go", Deny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.policy.Decide(tc.path); got != tc.want {
				t.Errorf("Decide(%s) = %v, want %v", tc.path, got, tc.want)
			}
			if tc.path[0] != '/' {
				return
			}
			// The profile's text, read back on its own, says the same.
			if got := evalProfile(t, pr, tc.path); got != tc.want {
				t.Errorf("the profile grants %s %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

// macOS's /tmp, /var and /etc are links into /private: the kernel hands
// Seatbelt the resolved path, so a policy made with one spelling decides
// the other alike.
func TestDecideCanonicalisesMacLinks(t *testing.T) {
	t.Parallel()
	p := Policy{
		Worktree: "/tmp/dw-nonexistent-wt",
		Writable: []string{"/private/var/folders/q1/abc/T/dirtywork-worker-9/tmp"},
		ReadOnly: []string{"/var/folders/q1/abc/T/dirtywork-worker-9/base/objects"},
	}
	for path, want := range map[string]Access{
		"/private/tmp/dw-nonexistent-wt/a.go":                                Write,
		"/tmp/dw-nonexistent-wt/x/../a.go":                                   Write,
		"/var/folders/q1/abc/T/dirtywork-worker-9/tmp/f":                     Write,
		"/private/var/folders/q1/abc/T/dirtywork-worker-9/base/objects/pack": Read,
		"/private/var/folders/q1/abc/T/dirtywork-worker-9":                   Metadata,
		"/var/folders/q1/abc/T/other":                                        Deny,
	} {
		if got := p.Decide(path); got != want {
			t.Errorf("Decide(%s) = %v, want %v", path, got, want)
		}
	}
	for in, want := range map[string]string{
		"/tmp":             "/private/tmp",
		"/tmp/dw-x/../y":   "/private/tmp/y",
		"/etc/hosts":       "/private/etc/hosts",
		"/var/db/timezone": "/private/var/db/timezone",
		"/private/tmp/z":   "/private/tmp/z",
		"/tmpfoo":          "/tmpfoo",
		"/usr/../var/x":    "/private/var/x",
	} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestConnect(t *testing.T) {
	t.Parallel()
	closed := Policy{Worktree: "/w"}
	for _, port := range []int{3128, 80, 443, 1234} {
		for _, host := range []string{"localhost", "127.0.0.1", "example.com"} {
			if closed.Connect(host, port) {
				t.Errorf("no network: %s:%d allowed", host, port)
			}
		}
	}
	pr, err := closed.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(pr.Text, "network-") || strings.Contains(pr.Text, "system-socket") || strings.Contains(pr.Text, "trustd") {
		t.Errorf("a profile without network names the network:\n%s", pr.Text)
	}

	open := Policy{Worktree: "/w", ProxyPort: 41007}
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"localhost", 41007, true},
		{"127.0.0.1", 41007, true},
		{"::1", 41007, true},
		{"[::1]", 41007, true},
		{"localhost", 41008, false},
		{"localhost", 1234, false}, // the model server on the same machine
		{"example.com", 41007, false},
		{"10.0.0.1", 41007, false},
		{"0.0.0.0", 41007, false},
	} {
		if got := open.Connect(tc.host, tc.port); got != tc.want {
			t.Errorf("Connect(%s, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	pr, err = open.Profile()
	if err != nil {
		t.Fatal(err)
	}
	outbound := regexp.MustCompile(`\(allow network[^\n]*`).FindAllString(pr.Text, -1)
	if len(outbound) != 1 || outbound[0] != `(allow network-outbound (remote ip "localhost:41007"))` {
		t.Errorf("network rules %q", outbound)
	}
}

// A run's paths may hold anything a file name can: they reach
// sandbox-exec as parameters, never as text of the profile, so none can
// end a string or a list and add a rule.
func TestProfileHostilePaths(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		`we"ird`, `a) (allow default) (`, "new\nline (allow file-write* (subpath \"/\"))", `back\slash`,
		"ünïcødé-树", `#"re"`, "; comment", "x\")(allow network*)(\"",
	} {
		dir := "/Users/me/" + name
		p := Policy{
			Worktree: dir + "/lane", Writable: []string{dir + "/tmp"}, ReadOnly: []string{dir + "/ro"},
			Hidden: []string{dir + "/lane/.git"}, Home: "/Users/me", ProxyPort: 3128,
		}
		pr, err := p.Profile()
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if strings.Contains(pr.Text, name) {
			t.Errorf("%q: the path is in the profile's text", name)
		}
		forms, err := parseSBPL(pr.Text)
		if err != nil {
			t.Fatalf("%q: the profile does not parse: %v\n%s", name, err, pr.Text)
		}
		for _, f := range forms {
			if f.list[0].sym == "allow" && slices.ContainsFunc(f.list[1:], func(a sexp) bool { return a.sym == "default" }) {
				t.Errorf("%q: the profile allows by default", name)
			}
		}
		checkParams(t, pr)
		if v := paramValue(pr, "WORKTREE"); v != dir+"/lane" {
			t.Errorf("%q: WORKTREE=%q", name, v)
		}
		// The parameter carries it whole into the decision.
		if got := p.Decide(dir + "/lane/f"); got != Write {
			t.Errorf("%q: worktree file %v", name, got)
		}
		if got := p.Decide(dir + "/lane/.git"); got != Deny {
			t.Errorf("%q: worktree .git %v", name, got)
		}
		if got := evalProfile(t, pr, dir+"/lane/.git/HEAD"); got != Deny {
			t.Errorf("%q: the profile grants worktree .git %v", name, got)
		}
		if got := evalProfile(t, pr, dir+"/lane/f"); got != Write {
			t.Errorf("%q: the profile grants the worktree %v", name, got)
		}
		args := pr.Command(DefaultPath, []string{"/bin/true"})
		if !slices.Contains(args, "-DWORKTREE="+dir+"/lane") {
			t.Errorf("%q: sandbox-exec is not given the worktree: %q", name, args)
		}
	}
}

// checkParams checks that the profile reads every parameter it is given
// and is given every parameter it reads, each once.
func checkParams(t *testing.T, pr Profile) {
	t.Helper()
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\(param "([A-Z_0-9]+)"\)`).FindAllStringSubmatch(pr.Text, -1) {
		used[m[1]] = true
	}
	given := map[string]bool{}
	for _, p := range pr.Params {
		if given[p.Name] {
			t.Errorf("parameter %s given twice", p.Name)
		}
		given[p.Name] = true
		if !used[p.Name] {
			t.Errorf("parameter %s given, never read", p.Name)
		}
	}
	for n := range used {
		if !given[n] {
			t.Errorf("parameter %s read, never given", n)
		}
	}
}

func paramValue(pr Profile, name string) string {
	for _, p := range pr.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

func TestProfileWellFormed(t *testing.T) {
	t.Parallel()
	for _, port := range []int{0, 3128} {
		r := newTestRun(t, port)
		pr, err := r.policy.Profile()
		if err != nil {
			t.Fatal(err)
		}
		forms, err := parseSBPL(pr.Text)
		if err != nil {
			t.Fatalf("%v\n%s", err, pr.Text)
		}
		if len(forms) < 3 || forms[0].list[0].sym != "version" || forms[1].list[0].sym != "deny" || forms[1].list[1].sym != "default" {
			t.Fatalf("the profile does not start (version 1) (deny default):\n%s", pr.Text)
		}
		rules := fileRules(t, forms)
		want, _, err := r.policy.rules()
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) != len(want) {
			t.Errorf("%d file grants written, %d rules", len(rules), len(want))
		}
		checkParams(t, pr)
		// Only this package's constants are written out as strings.
		for _, s := range regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(pr.Text, -1) {
			if strings.Contains(s[1], r.home) || strings.Contains(s[1], r.private) {
				t.Errorf("a run's path in the text: %q", s[1])
			}
		}
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	pr := Profile{Text: "(version 1)", Params: []Param{{"WORKTREE", "/w"}, {"HOME", "-x"}}}
	got := pr.Command("/usr/bin/sandbox-exec", []string{"/bin/dirtywork", "__toolbox", "--", "-root"})
	want := []string{"/usr/bin/sandbox-exec", "-p", "(version 1)", "-DWORKTREE=/w", "-DHOME=-x", "--", "/bin/dirtywork", "__toolbox", "--", "-root"}
	if !slices.Equal(got, want) {
		t.Errorf("Command = %q, want %q", got, want)
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/usr":         `"/usr"`,
		`a"b`:          `"a\"b"`,
		`a\b`:          `"a\\b"`,
		"a\nb":         `"a\nb"`,
		"ü)":           `"ü)"`,
		`\") (allow (`: `"\\\") (allow ("`,
	} {
		got := quote(in)
		if got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
		forms, err := parseSBPL("(x " + got + ")")
		if err != nil || len(forms) != 1 || forms[0].list[1].str != in {
			t.Errorf("quote(%q) does not read back: %+v %v", in, forms, err)
		}
	}
}

func TestPolicyRefusesUnusablePaths(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]Policy{
		"relative worktree":  {Worktree: "lane"},
		"no worktree":        {},
		"NUL":                {Worktree: "/w\x00/x"},
		"relative writable":  {Worktree: "/w", Writable: []string{"tmp"}},
		"relative read-only": {Worktree: "/w", ReadOnly: []string{"bin"}},
		"relative hidden":    {Worktree: "/w", Hidden: []string{".git"}},
		"relative home":      {Worktree: "/w", Home: "home"},
	} {
		if _, err := p.Profile(); !errors.Is(err, ErrBadPath) {
			t.Errorf("%s: Profile err = %v", name, err)
		}
		if p.Decide("/w/x") != Deny {
			t.Errorf("%s: an unusable policy grants something", name)
		}
	}
	if _, err := (Policy{Worktree: "/w", ProxyPort: 70000}).Profile(); err == nil {
		t.Error("port 70000 accepted")
	}
}

// Every constant string the package writes out quotes cleanly and every
// regex compiles as written.
func TestConstantsAreSafeToWrite(t *testing.T) {
	t.Parallel()
	for _, s := range SystemRead {
		if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "\"\\\n") {
			t.Errorf("system path %q", s)
		}
	}
	for _, d := range devices {
		if d.match.kind == regex && strings.Contains(d.match.re.String(), `"`) {
			t.Errorf("regex %q holds a quote", d.match.re)
		}
	}
}
