package fsops

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWildmatch(t *testing.T) {
	tests := []struct {
		pattern, text string
		pathname      bool
		want          bool
	}{
		{"foo", "foo", true, true},
		{"foo", "bar", true, false},
		{"", "", true, true},
		{"???", "foo", true, true},
		{"??", "foo", true, false},
		{"?", "é", true, true},
		{"*", "foo", true, true},
		{"f*", "foo", true, true},
		{"*f", "foo", true, false},
		{"*foo*", "foo", true, true},
		{"*ob*a*r*", "foobar", true, true},
		{"*ab", "aaaaaaabababab", true, true},
		{"foo*bar", "foo/bar", true, false},
		{"foo*bar", "foo/bar", false, true},
		{"*", "a/b", true, false},
		{"*/foo", "a/foo", true, true},
		{"*/foo", "a/b/foo", true, false},
		{"foo?bar", "foo/bar", true, false},
		{`\*`, "*", true, true},
		{`\*`, "a", true, false},
		{`*\*`, "ab*", true, true},
		{`\[ab]`, "[ab]", true, true},
		{"[ab]", "a", true, true},
		{"[ab]", "c", true, false},
		{"[!ab]", "c", true, true},
		{"[!ab]", "a", true, false},
		{"[^ab]", "c", true, true},
		{"[a-c]x", "bx", true, true},
		{"[a-c]x", "dx", true, false},
		{"[]]", "]", true, true},
		{"[!]]", "a", true, true},
		{"[a-]", "-", true, true},
		{"[[:digit:]]x", "7x", true, true},
		{"[[:digit:]]x", "ax", true, false},
		{"[[:upper:][:digit:]]", "Q", true, true},
		{"[[:bogus:]]", "a", true, false},
		{"[!/]", "/", true, false},
		{"a[/]b", "a/b", true, false},
		{"[ab", "a", true, false},
		{"**", "a/b/c", true, true},
		{"**/foo", "foo", true, true},
		{"**/foo", "a/b/foo", true, true},
		{"**/foo", "a/foox", true, false},
		{"foo/**", "foo/a", true, true},
		{"foo/**", "foo/a/b", true, true},
		{"foo/**", "foo", true, false},
		{"a/**/b", "a/b", true, true},
		{"a/**/b", "a/x/b", true, true},
		{"a/**/b", "a/x/y/b", true, true},
		{"a/**/b", "a/x/y/c", true, false},
		{"a**b", "axxb", true, true},
		{"a**b", "a/b", true, false},
		{"**/*.go", "x/y/z.go", true, true},
		{"**/*.go", "z.go", true, true},
		{"*.go", "x/z.go", true, false},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", true, true},
		{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1", true, false},
		{"XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", "XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1", true, true},
		{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", true, true},
		{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", true, false},
		{"é*", "été", true, true},
		{"[é]t?", "été", true, true},
		{`foo\`, "foo", true, false},
	}
	for _, tt := range tests {
		got := dowild([]rune(tt.pattern), 0, []rune(tt.text), 0, tt.pathname) == wmMatch
		if got != tt.want {
			t.Errorf("wildmatch(%q, %q, pathname=%v) = %v, want %v", tt.pattern, tt.text, tt.pathname, got, tt.want)
		}
	}
}

func TestParseIgnore(t *testing.T) {
	data := "\xef\xbb\xbf# comment\n\n*.log\r\n!keep.log\nbuild/\n/root-only\ndoc/*.txt\n\\#hash\n\\!bang\ntrail   \nescaped\\ \n!\n/\n\tlead\n"
	var got []string
	for _, r := range parseIgnore([]byte(data), "sub") {
		got = append(got, ruleString(r))
	}
	want := []string{
		"sub:*.log basename",
		"sub:keep.log ! basename",
		"sub:build dir basename",
		"sub:root-only",
		"sub:doc/*.txt",
		`sub:\#hash basename`,
		`sub:\!bang basename`,
		"sub:trail basename",
		`sub:escaped\  basename`,
		"sub:\tlead basename",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rules:\n%q\nwant\n%q", got, want)
	}
}

func ruleString(r ignoreRule) string {
	s := r.base + ":" + string(r.pattern)
	if r.negate {
		s += " !"
	}
	if r.dirOnly {
		s += " dir"
	}
	if r.basename {
		s += " basename"
	}
	return s
}

func TestIgnoreRules(t *testing.T) {
	var rules ignoreRules
	rules = append(rules, parseIgnore([]byte("*.tmp\n"), "")...) // as .git/info/exclude
	rules = append(rules, parseIgnore([]byte("*.log\n!keep.log\n/top.txt\nbuild/\ndoc/**/gen\nvendor/**\n!vendor/ours\n\\#lit\n"), "")...)
	rules = append(rules, parseIgnore([]byte("!*.tmp\nlocal\n"), "sub")...)
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"a.log", false, true},
		{"deep/x/a.log", false, true},
		{"keep.log", false, false},
		{"deep/keep.log", false, false},
		{"top.txt", false, true},
		{"deep/top.txt", false, false},
		{"build", true, true},
		{"x/build", true, true},
		{"build", false, false},
		{"doc/gen", false, true},
		{"doc/a/b/gen", false, true},
		{"doc/a/b/gen2", false, false},
		{"other/doc/gen", false, false},
		{"vendor", true, false},
		{"vendor/lib", true, true},
		{"vendor/ours", true, false},
		{"#lit", false, true},
		{"x.tmp", false, true},
		{"sub/x.tmp", false, false},
		{"sub/deeper/x.tmp", false, false},
		{"sub/local", false, true},
		{"sub/d/local", true, true},
		{"local", false, false},
		{"subx/local", false, false},
	}
	for _, tt := range tests {
		if got := rules.ignored(tt.rel, tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}
}

func TestExpandBraces(t *testing.T) {
	tests := []struct {
		glob string
		want []string
	}{
		{"*.go", []string{"*.go"}},
		{"*.{ts,tsx}", []string{"*.ts", "*.tsx"}},
		{"{a,b}/{c,d}", []string{"a/c", "a/d", "b/c", "b/d"}},
		{"x{a,{b,c}}", []string{"xa", "xb", "xc"}},
		{"{one}", []string{"one"}},
		{`\{a,b}`, []string{`\{a,b}`}},
		{"{a,b", []string{"{a,b"}},
		{"{,x}y", []string{"y", "xy"}},
	}
	for _, tt := range tests {
		if got := expandBraces(tt.glob); !slices.Equal(got, tt.want) {
			t.Errorf("expandBraces(%q) = %q, want %q", tt.glob, got, tt.want)
		}
	}
	if n := len(expandBraces(strings.Repeat("{a,b,c,d}", 6))); n != maxGlobAlternatives {
		t.Errorf("4^6 alternatives gave %d, want the cap %d", n, maxGlobAlternatives)
	}
}

func TestGlobFilter(t *testing.T) {
	tests := []struct {
		glob  string
		rel   string
		isDir bool
		pass  bool
	}{
		{"", "a/b.go", false, true},
		{"*.go", "a/b.go", false, true},
		{"*.go", "a/b.py", false, false},
		{"*.go", "a", true, true}, // directories are always entered
		{"*.{go,py}", "b.py", false, true},
		{"src/*.go", "src/b.go", false, true},
		{"src/*.go", "x/src/b.go", false, false},
		{"/src/**", "src/x/y.c", false, true},
		{"!*.go", "a/b.go", false, false},
		{"!*.go", "a/b.py", false, true},
		{"!*.go", "a.go", true, false},
		{"!vendor", "vendor", true, false},
		{"!vendor", "x/vendor", true, false},
		{"!vendor", "vendor", false, false},
		{"!vendor/", "vendor", false, true},
		{"!vendor", "vendors", true, true},
		{"{}", "a.go", false, false},
	}
	for _, tt := range tests {
		g := parseGlob(tt.glob)
		got := g.admits(tt.rel)
		if tt.isDir {
			got = !g.excludesDir(tt.rel)
		}
		if got != tt.pass {
			t.Errorf("glob %q passes %q (dir %v) = %v, want %v", tt.glob, tt.rel, tt.isDir, got, tt.pass)
		}
	}
}

// TestIgnoreAgreesWithGit builds a tree of nested ignore files and checks
// that grep visits exactly the files git calls untracked and not ignored.
func TestIgnoreAgreesWithGit(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		".gitignore":               "*.log\n!important.log\n/build/\ndocs/**/draft*\ntmp*\n!tmp-keep\nlib/**\n!lib/keep/\n!lib/keep/**\n*.o\n[Cc]ache/\nspace\\ name\n",
		"a.txt":                    "x",
		"a.log":                    "x",
		"important.log":            "x",
		"build/out.txt":            "x",
		"src/build/out.txt":        "x",
		"docs/draft1.md":           "x",
		"docs/x/y/draft2.md":       "x",
		"docs/final.md":            "x",
		"tmpfile":                  "x",
		"tmp-keep":                 "x",
		"lib/a.c":                  "x",
		"lib/keep/b.c":             "x",
		"lib/keep/sub/c.c":         "x",
		"lib/other/d.c":            "x",
		"src/.gitignore":           "!*.o\n*.gen\ngenerated/\n/local.txt\n",
		"src/main.o":               "x",
		"src/main.c":               "x",
		"src/x.gen":                "x",
		"src/generated/g.c":        "x",
		"src/local.txt":            "x",
		"src/sub/local.txt":        "x",
		"src/sub/.gitignore":       "!x.gen\n",
		"src/sub/x.gen":            "x",
		"Cache/c.txt":              "x",
		"cache/c.txt":              "x",
		"caches/c.txt":             "x",
		"space name":               "x",
		"excluded-by-info.txt":     "x",
		"nested/deep/dir/file.txt": "x",
		"nested/deep/dir/file.log": "x",
		"ünï/cödé.txt":             "x",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content+"\n"), 0o644))
	}
	runGit(t, dir, "init", "-q")
	must(t, os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("excluded-by-info.txt\n"), 0o644))

	out := runGit(t, dir, "-c", "core.quotePath=false", "ls-files", "--others", "--exclude-standard")
	var want []string
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if path := strings.TrimSpace(line); filepath.Base(path) != ".gitignore" {
			want = append(want, path)
		}
	}
	slices.Sort(want)

	root, err := os.OpenRoot(dir)
	must(t, err)
	t.Cleanup(func() { _ = root.Close() })
	res, err := New(root, dir).Grep(t.Context(), "^x$", ".", "", 0)
	must(t, err)
	var got []string
	for line := range strings.SplitSeq(res, "\n") {
		got = append(got, strings.TrimSuffix(line, ":1:x"))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("grep visited\n%q\ngit lists\n%q", got, want)
	}
	for _, p := range []string{"a.txt", "important.log", "lib/keep/sub/c.c", "src/main.o", "src/sub/x.gen", "ünï/cödé.txt"} {
		if !slices.Contains(want, p) {
			t.Errorf("git does not list %s; the tree no longer tests what it should", p)
		}
	}
}

// runGit runs git in dir with no global or system configuration.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gitconfig")
	must(t, os.WriteFile(cfg, nil, 0o644))
	cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"XDG_CONFIG_HOME=" + t.TempDir(),
		"GIT_CONFIG_GLOBAL=" + cfg,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
		"LC_ALL=C",
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}
