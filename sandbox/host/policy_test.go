package host

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/host/confine"
)

func TestOutsideHome(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home", "op")
	for _, d := range []string{home, filepath.Join(base, "home", "other"), filepath.Join(base, "sibling")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(base, "file.txt"), "x")
	if err := os.Symlink(home, filepath.Join(base, "link-into-home")); err != nil {
		t.Fatal(err)
	}
	got := outsideHome(home)
	for _, want := range []string{filepath.Join(base, "home", "other"), filepath.Join(base, "sibling"), filepath.Join(base, "file.txt"), "/usr", "/etc"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not readable", want)
		}
	}
	for _, p := range got {
		if under(p, home) || under(home, p) {
			t.Errorf("%s opens the home or an ancestor of it", p)
		}
		if p == filepath.Join(base, "link-into-home") {
			t.Errorf("a symlink into the home is readable")
		}
	}
	if got := outsideHome(""); !slices.Equal(got, []string{"/"}) {
		t.Errorf("no home: %q, want /", got)
	}
}

func TestPolicyRules(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := layout{
		home:        filepath.Join(base, "home"),
		worktree:    filepath.Join(base, "home", "repo", ".worktrees", "dw-x"),
		scratch:     filepath.Join(base, "scratch"),
		commonDir:   filepath.Join(base, "home", "repo", ".git"),
		adminDir:    filepath.Join(base, "home", "repo", ".git", "worktrees", "dw-x"),
		readable:    []string{filepath.Join(base, "home", ".cargo")},
		allowCommit: true,
		refDirs:     []string{filepath.Join(base, "home", "repo", ".git", "refs", "heads", "dirtywork")},
	}
	for _, d := range []string{l.worktree, l.scratch, l.adminDir, l.readable[0], l.refDirs[0]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := l.policy()
	access := map[string]confine.Access{}
	for _, r := range p.Rules {
		access[r.Path] = r.Access
	}
	want := map[string]confine.Access{
		l.worktree:                            confine.Write,
		l.scratch:                             confine.Write,
		l.adminDir:                            confine.Write,
		l.commonDir:                           confine.Read,
		l.readable[0]:                         confine.Read,
		filepath.Join(l.commonDir, "objects"): confine.Store,
		l.refDirs[0]:                          confine.Store,
		"/dev/null":                           confine.Device,
	}
	for path, a := range want {
		if access[path] != a {
			t.Errorf("%s: access %q, want %q", path, access[path], a)
		}
	}
	for path, a := range access {
		if under(path, l.home) && !underAny(path, []string{l.worktree, l.commonDir, l.readable[0]}) {
			t.Errorf("rule %s (%s) opens the home beyond its exceptions", path, a)
		}
		if a != confine.Read && under(path, l.commonDir) && !underAny(path, []string{l.adminDir, filepath.Join(l.commonDir, "objects"), l.refDirs[0]}) {
			t.Errorf("rule %s makes the git dir writable", path)
		}
	}
	if !slices.Contains(p.ReadOnly, filepath.Join(l.commonDir, "objects", "info")) || !slices.Contains(p.ReadOnly, filepath.Join(l.commonDir, "objects", "pack")) {
		t.Errorf("read-only mounts %q miss objects/info or objects/pack", p.ReadOnly)
	}
	if !slices.Contains(p.Hide, "/run") {
		t.Errorf("hidden %q misses /run", p.Hide)
	}
}

func TestHiddenDirsKeepExceptionsVisible(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runtime := filepath.Join(base, "runtime")
	scratch := filepath.Join(runtime, "scratch")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	l := layout{
		home: filepath.Join(base, "home"), runtimeDir: runtime, scratch: scratch,
		worktree: base, commonDir: base, adminDir: base, dockerSocket: filepath.Join(base, "docker.sock"),
	}
	p := l.policy()
	if !slices.Contains(p.Hide, runtime) {
		t.Errorf("hidden %q misses the runtime dir", p.Hide)
	}
	if !slices.Contains(p.Keep, scratch) {
		t.Errorf("kept %q misses the scratch dir inside a hidden dir", p.Keep)
	}
	if !slices.Equal(p.Mask, []string{l.dockerSocket}) {
		t.Errorf("masked %q, want the docker socket", p.Mask)
	}
}
