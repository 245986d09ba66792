package seal

import (
	"crypto/sha256"
	"fmt"
	"maps"
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

// Every file's digest is its content's, whether this goroutine or a
// helper read it, and a walk with helpers names the tree as one without.
func TestDigestsAreTheFilesWhoeverReadsThem(t *testing.T) {
	tr := newTree(t)
	want := map[string][32]byte{}
	for d := range 3 {
		for f := range 40 + d*30 {
			rel := fmt.Sprintf("d%d/f%03d", d, f)
			content := strings.Repeat(rel, f*97) // empty, short, and past one read buffer
			tr.track(rel, content)
			want[rel] = sha256.Sum256([]byte(content))
		}
	}
	tr.write("d1/tool", "#!/bin/sh\n", 0o755)
	want["d1/tool"] = sha256.Sum256([]byte("#!/bin/sh\n"))
	tr.start()
	var hashes []string
	for _, helpers := range []int{0, 1, 3} {
		w, err := newWalker(t.Context(), tr.dir, tr.base)
		if err != nil {
			t.Fatal(err)
		}
		w.digest.stop()
		w.digest = newDigesters(helpers)
		err = w.scan()
		w.close()
		if err != nil {
			t.Fatalf("%d helpers: %v", helpers, err)
		}
		for rel, sum := range want {
			if got := w.manifest.entries[rel]; got.sum != sum {
				t.Errorf("%d helpers: %s digest %x, want %x", helpers, rel, got.sum, sum)
			}
		}
		if k := w.manifest.entries["d1/tool"].kind; k != kindExec {
			t.Errorf("%d helpers: d1/tool kind %c", helpers, k)
		}
		hashes = append(hashes, w.manifest.Hash())
	}
	if hashes[0] != hashes[1] || hashes[0] != hashes[2] {
		t.Errorf("tree hashes differ with the helpers: %v", hashes)
	}
}

// A seal takes a digest taken ahead for a file nobody changed since the
// baseline, and reads every file changed after it, or after the digest
// was taken, whatever the digests say.
func TestSealTakesDigestsTakenAheadOnlyForUnchangedFiles(t *testing.T) {
	tr := newTree(t)
	tr.track("kept.txt", "base")
	tr.track("later.txt", "base")
	tr.track("sub/deep.txt", "base")
	tr.start()
	tr.track("early.txt", "the worker's, before the digests") // after the baseline
	d := Prehash(t.Context(), tr.dir, tr.base.Since, false)
	if _, ok := d.files["early.txt"]; ok || d.Len() != 3 {
		t.Fatalf("digests taken ahead: %v, want kept.txt, later.txt and sub/deep.txt", slices.Sorted(maps.Keys(d.files)))
	}
	tr.write("later.txt", "LATE", 0o644) // the same size, the same inode: only its change time tells

	// Forged digests show which ones the seal took without reading.
	forged := sha256.Sum256([]byte("forged"))
	for rel, e := range d.files {
		e.sum = forged
		d.files[rel] = e
	}
	b := tr.base
	b.Known = d
	_, m, err := Seal(t.Context(), tr.dir, b, true)
	if err != nil {
		t.Fatal(err)
	}
	for rel, content := range map[string]string{
		"kept.txt":     "",
		"sub/deep.txt": "",
		"later.txt":    "LATE",
		"early.txt":    "the worker's, before the digests",
	} {
		want := forged
		if content != "" {
			want = sha256.Sum256([]byte(content))
		}
		if got := m.entries[rel].sum; got != want {
			t.Errorf("%s: digest %x, want %x", rel, got, want)
		}
	}

	// Digests taken against another baseline are never taken.
	other := *d
	other.since--
	b.Known = &other
	_, m, err = Seal(t.Context(), tr.dir, b, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.entries["kept.txt"].sum, sha256.Sum256([]byte("base")); got != want {
		t.Errorf("digests of another baseline were taken: %x", got)
	}
}

// Digests taken ahead name the tree as a seal that reads every file does.
func TestPrehashedSealNamesTheSameTree(t *testing.T) {
	tr := newTree(t)
	for i := range 50 {
		tr.track(fmt.Sprintf("d%d/f%d", i%5, i), strings.Repeat("x", i*301))
	}
	tr.write("run.sh", "#!/bin/sh\n", 0o755)
	tr.start()
	tr.track("d1/new", "the worker's")
	_, read, err := Seal(t.Context(), tr.dir, tr.base, true)
	if err != nil {
		t.Fatal(err)
	}
	b := tr.base
	b.Known = Prehash(t.Context(), tr.dir, tr.base.Since, false)
	if b.Known.Len() != 51 {
		t.Fatalf("%d digests taken ahead, want 51", b.Known.Len())
	}
	_, taken, err := Seal(t.Context(), tr.dir, b, true)
	if err != nil {
		t.Fatal(err)
	}
	if read.Hash() != taken.Hash() {
		t.Errorf("tree hash %s with digests taken ahead, %s reading every file", taken.Hash(), read.Hash())
	}
}
