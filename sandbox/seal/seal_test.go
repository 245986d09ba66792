package seal

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/transcript"
)

// tree is a test tree: files written before the baseline are the base's
// (or the setup's), after it the worker's.
type tree struct {
	t    *testing.T
	dir  string
	base Baseline
}

func newTree(t *testing.T) *tree {
	t.Helper()
	return &tree{t: t, dir: t.TempDir(), base: Baseline{Tracked: map[string]uint32{}}}
}

func (tr *tree) write(rel, content string, mode os.FileMode) {
	tr.t.Helper()
	p := filepath.Join(tr.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		tr.t.Fatal(err)
	}
}

// track writes a base file git tracks.
func (tr *tree) track(rel, content string) {
	tr.write(rel, content, 0o644)
	tr.base.Tracked[rel] = uint32(export.ModeFile)
}

func (tr *tree) symlink(target, rel string) {
	tr.t.Helper()
	p := filepath.Join(tr.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		tr.t.Fatal(err)
	}
}

// start marks the baseline: what follows is the worker's.
func (tr *tree) start() {
	tr.t.Helper()
	since, err := Mark(tr.dir)
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.base.Since = since
}

func (tr *tree) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(tr.dir, filepath.FromSlash(rel)))
	return err == nil
}

func (tr *tree) seal(drop bool) (Report, *Manifest) {
	tr.t.Helper()
	r, m, err := Seal(tr.t.Context(), tr.dir, tr.base, drop)
	if err != nil {
		tr.t.Fatal(err)
	}
	return r, m
}

func ignoredPaths(r Report, by string) []string {
	var out []string
	for _, i := range r.Ignored {
		if i.By == by {
			out = append(out, i.Path)
		}
	}
	return out
}

// A package hidden by a .gitignore of "*" patches the code under test on
// import, and no diff shows it: the seal takes it out and lists it, and
// leaves what the setup made and what git tracks.
func TestSealTakesOutTheWorkersIgnoredFiles(t *testing.T) {
	tr := newTree(t)
	tr.track(".gitignore", "build/\n*.log\n")
	tr.track("app.py", "def main(): return 1\n")
	tr.track("keep.log", "tracked although ignored\n")
	tr.write("node_modules/left/index.js", "setup's\n", 0o644)
	tr.track(".gitignore", "build/\n*.log\nnode_modules/\n")
	tr.start()
	tr.write("hidden/.gitignore", "*\n", 0o644)
	tr.write("hidden/sitecustomize.py", "import app; app.main = lambda: 2\n", 0o644)
	tr.write("build/lib/app.py", "def main(): return 2\n", 0o644)
	tr.write("build/lib/more.py", "x\n", 0o644)
	tr.write("debug.log", "noise\n", 0o644)
	tr.write("keep.log", "tracked, changed\n", 0o644)
	tr.write("node_modules/left/patched.js", "worker's\n", 0o644)
	tr.write("app.py", "def main(): return 1 # reviewed\n", 0o644)

	r, m := tr.seal(false)
	if m == nil {
		t.Fatalf("no manifest: %+v", r)
	}
	wantWorker := []string{"build/", "debug.log", "hidden/.gitignore", "hidden/sitecustomize.py", "node_modules/left/patched.js"}
	if got := ignoredPaths(r, "worker"); !slices.Equal(got, wantWorker) {
		t.Errorf("worker's ignored = %q, want %q", got, wantWorker)
	}
	for _, i := range r.Ignored {
		if i.By == "worker" && i.Action != "removed" || i.By == "setup" && i.Action != "kept" {
			t.Errorf("ignored %+v: wrong action", i)
		}
		if i.Path == "build/" && (i.Entries != 4 || i.Bytes <= 0) {
			t.Errorf("build/ reported with %d entries, %d bytes; want 4 entries (build, lib, 2 files)", i.Entries, i.Bytes)
		}
	}
	for _, gone := range []string{"hidden/sitecustomize.py", "hidden/.gitignore", "build", "debug.log", "node_modules/left/patched.js"} {
		if tr.exists(gone) {
			t.Errorf("%s is still in the tree", gone)
		}
	}
	for _, kept := range []string{"keep.log", "app.py", "node_modules/left/index.js", "hidden"} {
		if !tr.exists(kept) {
			t.Errorf("%s was taken out", kept)
		}
	}
	if _, ok := m.entries["node_modules/left/index.js"]; !ok {
		t.Error("the setup's file is not in the manifest")
	}
	if _, ok := m.entries["debug.log"]; ok {
		t.Error("a removed file is in the manifest")
	}
}

// What the export would drop never reaches verify: a module that is also
// a repository, a .git anywhere, a FIFO, a link out of the tree.
func TestSealTakesOutWhatTheExportDrops(t *testing.T) {
	tr := newTree(t)
	tr.track("app.py", "x\n")
	tr.write("fixture/HEAD", "ref: refs/heads/main\n", 0o644)
	tr.write("fixture/objects/.keep", "", 0o644)
	tr.write("fixture/refs/.keep", "", 0o644)
	tr.base.Tracked["fixture/HEAD"] = uint32(export.ModeFile)
	tr.symlink("/usr/share/zoneinfo/UTC", "base-link")
	tr.start()
	tr.write("mod/__init__.py", "import app\n", 0o644)
	tr.write("mod/HEAD", "ref: refs/heads/x\n", 0o644)
	tr.write("mod/objects/x", "", 0o644)
	tr.write("mod/refs/x", "", 0o644)
	tr.write("sub/.GIT/config", "[core]\n\tfsmonitor = evil\n", 0o644)
	if err := syscall.Mkfifo(filepath.Join(tr.dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr.symlink("/var/lib/docker/volumes/x/_data", "escape")
	tr.symlink("../../etc/passwd", "sub/up")
	tr.symlink("app.py", "inside")

	r, m := tr.seal(false)
	if m != nil {
		t.Fatal("a manifest before the repositories were quarantined")
	}
	if want := []string{"mod", "sub/.GIT"}; !slices.Equal(r.Repositories, want) {
		t.Fatalf("repositories = %q, want %q", r.Repositories, want)
	}
	if !tr.exists("mod/__init__.py") || !tr.exists("pipe") {
		t.Fatal("a seal that stopped for repositories changed the tree")
	}
	r, m = tr.seal(true)
	if m == nil {
		t.Fatal("no manifest")
	}
	for _, gone := range []string{"mod", "sub/.GIT", "pipe", "escape", "sub/up"} {
		if tr.exists(gone) {
			t.Errorf("%s is still in the tree", gone)
		}
	}
	for _, kept := range []string{"fixture/HEAD", "base-link", "inside"} {
		if !tr.exists(kept) {
			t.Errorf("%s was taken out", kept)
		}
	}
	if !slices.Equal(r.Special, []string{"pipe"}) {
		t.Errorf("special = %q", r.Special)
	}
	if len(r.Links) != 2 || r.Links[0].Path != "escape" || r.Links[1].Path != "sub/up" {
		t.Errorf("links = %+v", r.Links)
	}
	if len(r.KeptLinks) != 1 || r.KeptLinks[0].Path != "base-link" {
		t.Errorf("kept links = %+v", r.KeptLinks)
	}
}

// Setuid and setgid bits never stay; world-writable entries and new
// executables are shown.
func TestSealStripsSetuidAndShowsModes(t *testing.T) {
	tr := newTree(t)
	tr.track("run.sh", "#!/bin/sh\n")
	tr.start()
	tr.write("shell", "#!/bin/sh\n", 0o755)
	if err := os.Chmod(filepath.Join(tr.dir, "shell"), 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(filepath.Join(tr.dir, "shell"), 0o6755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(filepath.Join(tr.dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr.write("open", "x\n", 0o666)
	if err := syscall.Chmod(filepath.Join(tr.dir, "open"), 0o666); err != nil {
		t.Fatal(err)
	}
	r, _ := tr.seal(false)
	fi, err := os.Lstat(filepath.Join(tr.dir, "shell"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Fatalf("shell keeps mode %v", fi.Mode())
	}
	got := map[string]string{}
	for _, m := range r.Modes {
		got[m.Path] += m.Change + ";"
	}
	want := map[string]string{"shell": "setuid/setgid removed;new executable;", "run.sh": "executable bit added;", "open": "world-writable;"}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("modes of %s = %q, want %q (all: %+v)", p, got[p], w, r.Modes)
		}
	}
}

// The hash names content, kinds, executable bits and link targets; not
// times, owners or other modes.
func TestManifestHashNamesTheTree(t *testing.T) {
	build := func(content string, exec bool) string {
		tr := newTree(t)
		tr.write("a/b.txt", content, 0o644)
		mode := os.FileMode(0o644)
		if exec {
			mode = 0o755
		}
		tr.write("run", "x", mode)
		tr.symlink("a/b.txt", "l")
		m, err := Snapshot(t.Context(), tr.dir, false)
		if err != nil {
			t.Fatal(err)
		}
		return m.Hash()
	}
	h1, h2 := build("one", false), build("one", false)
	if h1 != h2 || !strings.HasPrefix(h1, "sha256:") {
		t.Fatalf("same trees: %s and %s", h1, h2)
	}
	if build("two", false) == h1 {
		t.Error("content change: same hash")
	}
	if build("one", true) == h1 {
		t.Error("executable bit: same hash")
	}
}

// After verify, what it made is taken out; what it changed or removed is
// reported; a file rewritten with the same bytes is no change.
func TestRollbackAfterVerify(t *testing.T) {
	tr := newTree(t)
	tr.track("app.py", "one\n")
	tr.track("lib/util.py", "two\n")
	tr.track("same.py", "three\n")
	tr.start()
	_, m := tr.seal(false)
	before := m.Hash()

	tr.write(".pytest_cache/v/cache/nodeids", "[]", 0o644)
	tr.write("app.py", "patched\n", 0o644)
	if err := os.Remove(filepath.Join(tr.dir, "lib/util.py")); err != nil {
		t.Fatal(err)
	}
	tr.write("same.py", "three\n", 0o644)
	c, err := m.Rollback(t.Context(), tr.dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Changed, []string{"app.py", "lib/util.py"}) {
		t.Errorf("changed = %q", c.Changed)
	}
	if !slices.Equal(c.Removed, []string{".pytest_cache"}) || tr.exists(".pytest_cache") {
		t.Errorf("removed = %q, still there: %v", c.Removed, tr.exists(".pytest_cache"))
	}

	// Put back, the tree is the one judged.
	tr.write("app.py", "one\n", 0o644)
	tr.write("lib/util.py", "two\n", 0o644)
	c, err = m.Rollback(t.Context(), tr.dir)
	if err != nil || len(c.Changed) != 0 {
		t.Fatalf("restored tree: changed %q, %v", c.Changed, err)
	}
	now, err := Snapshot(t.Context(), tr.dir, false)
	if err != nil || now.Hash() != before {
		t.Fatalf("restored tree hashes %s, judged %s (%v)", now.Hash(), before, err)
	}
}

// Reports of several seals merge by path, the later winning.
func TestReportMerge(t *testing.T) {
	a := Report{Special: []string{"b", "a"}, Ignored: []transcript.IgnoredChange{{Path: "x", By: "worker"}}}
	a.Merge(Report{Special: []string{"a", "c"}, Ignored: []transcript.IgnoredChange{{Path: "x", By: "setup"}, {Path: "w"}}})
	if !slices.Equal(a.Special, []string{"a", "b", "c"}) || len(a.Ignored) != 2 || a.Ignored[0].Path != "w" || a.Ignored[1].By != "setup" {
		t.Fatalf("merged: %+v", a)
	}
}

// A tree whose times tell nothing (rewritten by an export after the run
// died): every ignored, untracked entry is the run's; nothing else is
// judged by time.
func TestUntimedSealTakesOutEveryIgnoredFile(t *testing.T) {
	tr := newTree(t)
	tr.track(".gitignore", "*.log\nnode_modules/\n")
	tr.track("keep.log", "tracked\n")
	tr.write("debug.log", "x\n", 0o644)
	tr.write("node_modules/a/index.js", "y\n", 0o644)
	tr.symlink("/etc/hostname", "outside")
	tr.base.Untimed = true
	r, m := tr.seal(false)
	if m == nil {
		t.Fatalf("no manifest: %+v", r)
	}
	var got []string
	for _, i := range r.Ignored {
		if i.By != "run" || i.Action != "removed" {
			t.Errorf("%+v: want by run, removed", i)
		}
		got = append(got, i.Path)
	}
	if want := []string{"debug.log", "node_modules/"}; !slices.Equal(got, want) {
		t.Errorf("ignored %q, want %q", got, want)
	}
	if !tr.exists("keep.log") || !tr.exists("outside") || tr.exists("debug.log") {
		t.Error("an untimed seal judged something by time")
	}
}

// A hard link to a file of a repository the worker made shares its fate:
// the repository's config under another name is a repository's part.
func TestSealHardLinksIntoARepositoryGoWithIt(t *testing.T) {
	tr := newTree(t)
	tr.track("app.py", "x\n")
	tr.start()
	tr.write("repo/HEAD", "ref: refs/heads/main\n", 0o644)
	tr.write("repo/objects/.keep", "", 0o644)
	tr.write("repo/refs/.keep", "", 0o644)
	tr.write("repo/config", "[core]\n\tfsmonitor = evil\n", 0o644)
	if err := os.Link(filepath.Join(tr.dir, "repo/config"), filepath.Join(tr.dir, "zconfig")); err != nil {
		t.Fatal(err)
	}
	tr.write("kept.txt", "k\n", 0o644)
	if err := os.Link(filepath.Join(tr.dir, "kept.txt"), filepath.Join(tr.dir, "kept2.txt")); err != nil {
		t.Fatal(err)
	}
	r, _ := tr.seal(false)
	if want := []string{"repo", "zconfig"}; !slices.Equal(r.Repositories, want) {
		t.Fatalf("repositories %q, want %q", r.Repositories, want)
	}
	if _, m := tr.seal(true); m == nil || tr.exists("zconfig") || !tr.exists("kept2.txt") {
		t.Fatal("the link into the repository stayed, or another went")
	}
}
