package workerrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/gitops"
)

func TestScriptRefusesWhatItCannotQuote(t *testing.T) {
	good := Repo{GitDir: "/g", WorkTree: "/w", BaseObjects: "/o", Branch: "dirtywork/x", Base: strings.Repeat("a", 40)}
	if _, err := Script(good, true); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Repo){
		"quote in branch":    func(r *Repo) { r.Branch = "x'; rm -rf /" },
		"dots in branch":     func(r *Repo) { r.Branch = "a..b" },
		"lock branch":        func(r *Repo) { r.Branch = "a.lock" },
		"short base":         func(r *Repo) { r.Base = "HEAD" },
		"relative git dir":   func(r *Repo) { r.GitDir = "g" },
		"quote in work tree": func(r *Repo) { r.WorkTree = "/w'x" },
		"newline in shallow": func(r *Repo) { r.Shallow = "/s\nrm -rf /" },
	} {
		r := good
		change(&r)
		if _, err := Script(r, true); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestScriptMakesTheRepository runs the script against a real pack: the
// worker's repository holds the base commit alone, on its branch, checked
// out, from paths that need quoting.
func TestScriptMakesTheRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := filepath.Join(t.TempDir(), "with space")
	src := filepath.Join(dir, "src")
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	sh := func(script string) string {
		t.Helper()
		c := exec.Command("bash", "-c", script)
		c.Env = env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	q := func(s string) string { return "'" + s + "'" }
	sh("mkdir -p " + q(src) + " && cd " + q(src) + " && git init -q && echo a > a && git add a && git commit -qm one && echo b > b && git add b && git commit -qm two")
	base := sh("git -C " + q(src) + " rev-parse HEAD")
	objects := filepath.Join(dir, "objects")
	if err := os.MkdirAll(filepath.Join(objects, "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	bp, err := gitops.New().WriteBasePack(t.Context(), src, base, false, filepath.Join(objects, "pack"))
	if err != nil {
		t.Fatal(err)
	}
	shallow := bp.Shallow
	r := Repo{
		GitDir: filepath.Join(dir, "git"), WorkTree: filepath.Join(dir, "work"), BaseObjects: objects,
		Shallow: shallow, Branch: "dirtywork/run-1", Base: base,
	}
	if err := os.MkdirAll(r.WorkTree, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := Script(r, true)
	if err != nil {
		t.Fatal(err)
	}
	sh(script)
	if got := sh("GIT_DIR=" + q(r.GitDir) + " git log --format=%s"); got != "two" {
		t.Errorf("log %q, want the base commit alone", got)
	}
	// The shell's builtins copy the shallow file byte for byte.
	want, err := os.ReadFile(shallow)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(r.GitDir, "shallow")); err != nil || string(got) != string(want) {
		t.Errorf("shallow %q (%v), want %q", got, err, want)
	}
	if got := sh("GIT_DIR=" + q(r.GitDir) + " git symbolic-ref HEAD"); got != "refs/heads/dirtywork/run-1" {
		t.Errorf("HEAD %q", got)
	}
	if got := sh("cat " + q(r.WorkTree+"/b")); got != "b" {
		t.Errorf("work tree b = %q", got)
	}
	if got := sh("cd " + q(r.WorkTree) + " && GIT_DIR=" + q(r.GitDir) + " git status --porcelain"); got != "" {
		t.Errorf("status %q", got)
	}
}
