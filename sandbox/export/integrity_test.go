package export

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// exportBoth extracts archive into a fresh lane, and syncs it into a lane
// populated with before, and checks both agree on the summary and the
// tree; it returns the synced layout, its summary and what Sync changed.
func exportBoth(t *testing.T, before treeSpec, archive []byte) (layout, Summary, Synced) {
	t.Helper()
	caps := Caps{MaxFiles: 10000, MaxBytes: 1 << 30}
	x := newLayout(t)
	xsum, err := Extract(bytes.NewReader(archive), x.dest, caps)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	x.assertContained(t)
	s := newLayout(t)
	if err := Populate(t.Context(), s.dest, baseOf(before)); err != nil {
		t.Fatal(err)
	}
	ssum, synced, err := Sync(bytes.NewReader(archive), s.dest, caps, baseOf(before))
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	s.assertContained(t)
	if !reflect.DeepEqual(xsum, ssum) {
		t.Errorf("summaries differ:\n Extract %+v\n Sync    %+v", xsum, ssum)
	}
	if got, want := describeTree(t, s.dest), describeTree(t, x.dest); !reflect.DeepEqual(got, want) {
		t.Errorf("trees differ:\n Sync    %q\n Extract %q", got, want)
	}
	return s, ssum, synced
}

// TestSyncNeverRemovesThroughALink covers each way the worker can reshape
// a base directory: the `mv src lib && ln -s lib src` move (removing base's
// src/a must not resolve through the new link and delete lib/a), a
// directory replaced by an escaping link, a link replaced by a directory,
// and files and directories swapped. The synced lane equals a fresh
// extraction, nothing outside is touched, and the diff over what Sync
// changed says what happened.
func TestSyncNeverRemovesThroughALink(t *testing.T) {
	cases := []struct {
		name    string
		before  treeSpec
		archive []entry
		want    map[string]string
		changed []string
		escapes []string
	}{
		{
			name:    "dir to a link to a sibling",
			before:  treeSpec{"src/a.go": {body: "a\n"}, "src/b.go": {body: "b\n"}, "keep.txt": {body: "k\n"}},
			archive: []entry{file("keep.txt", "k\n"), dirEntry("lib/"), file("lib/a.go", "a\n"), file("lib/b.go", "b\n"), link("src", "lib")},
			want:    map[string]string{"keep.txt": "f 0644 k\n", "lib": "d 0755", "lib/a.go": "f 0644 a\n", "lib/b.go": "f 0644 b\n", "src": "l -> lib"},
			changed: []string{"lib/a.go", "lib/b.go", "src", "src/a.go", "src/b.go"},
		},
		{
			name:    "link first, then the moved directory",
			before:  treeSpec{"src/a.go": {body: "a\n"}},
			archive: []entry{link("src", "lib"), dirEntry("lib/"), file("lib/a.go", "a\n")},
			want:    map[string]string{"lib": "d 0755", "lib/a.go": "f 0644 a\n", "src": "l -> lib"},
			changed: []string{"lib/a.go", "src", "src/a.go"},
		},
		{
			name:    "dir to an escaping link",
			before:  treeSpec{"src/a.go": {body: "a\n"}, "src/sub/b.go": {body: "b\n"}},
			archive: []entry{link("src", "../outside")},
			want:    map[string]string{"src": "l -> ../outside"},
			changed: []string{"src", "src/a.go", "src/sub/b.go"},
			escapes: []string{"src"},
		},
		{
			name:    "dir to an absolute link",
			before:  treeSpec{"src/a.go": {body: "a\n"}},
			archive: []entry{link("src", "/root")},
			want:    map[string]string{"src": "l -> /root"},
			changed: []string{"src", "src/a.go"},
			escapes: []string{"src"},
		},
		{
			name:    "link to a dir",
			before:  treeSpec{"l": {body: "target", mode: ModeSymlink}, "target/x": {body: "x\n"}},
			archive: []entry{dirEntry("l/"), file("l/x", "x\n"), dirEntry("target/"), file("target/x", "x\n")},
			want:    map[string]string{"l": "d 0755", "l/x": "f 0644 x\n", "target": "d 0755", "target/x": "f 0644 x\n"},
			changed: []string{"l", "l/x"},
		},
		{
			name:    "file and dir swapped",
			before:  treeSpec{"f": {body: "f\n"}, "d/x": {body: "x\n"}},
			archive: []entry{file("d", "now a file\n"), dirEntry("f/"), file("f/y", "y\n")},
			want:    map[string]string{"d": "f 0644 now a file\n", "f": "d 0755", "f/y": "f 0644 y\n"},
			changed: []string{"d", "d/x", "f", "f/y"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, sum, synced := exportBoth(t, tc.before, buildTar(t, tc.archive...))
			if got := describeTree(t, l.dest); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tree %q, want %q", got, tc.want)
			}
			if !slices.Equal(synced.Changed, tc.changed) {
				t.Errorf("changed %q, want %q", synced.Changed, tc.changed)
			}
			if !slices.Equal(sum.EscapingSymlinks, tc.escapes) {
				t.Errorf("escaping %q, want %q", sum.EscapingSymlinks, tc.escapes)
			}
			// The diff over the changed paths is the diff of the tree.
			root, err := os.OpenRoot(l.dest)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = root.Close() }()
			var byPaths, whole bytes.Buffer
			dp, err := DiffPaths(t.Context(), root, baseOf(tc.before), synced.Changed, &byPaths, DiffOptions{MaxPatchMB: 1})
			if err != nil {
				t.Fatal(err)
			}
			dt, err := DiffTree(t.Context(), root, baseOf(tc.before), &whole, DiffOptions{MaxPatchMB: 1})
			if err != nil {
				t.Fatal(err)
			}
			if byPaths.String() != whole.String() || !slices.Equal(dp.Files, dt.Files) {
				t.Errorf("diff over the changed paths:\n%s\nfiles %q; of the whole tree:\n%s\nfiles %q", byPaths.String(), dp.Files, whole.String(), dt.Files)
			}
		})
	}
}

// TestSpecialEntriesAreSkippedAndListed: FIFOs and devices fail nothing;
// they are left out of the lane (and of the counts) and listed.
func TestSpecialEntriesAreSkippedAndListed(t *testing.T) {
	archive := buildTar(t, file("a.txt", "a\n"), special("pipe", tar.TypeFifo), dirEntry("dev/"),
		special("dev/null", tar.TypeChar), special("dev/sda", tar.TypeBlock), file("b.txt", "b\n"))
	l, sum, _ := exportBoth(t, treeSpec{"a.txt": {body: "a\n"}}, archive)
	if want := []string{"pipe", "dev/null", "dev/sda"}; !slices.Equal(sum.SkippedSpecial, want) || sum.SkippedSpecialTruncated {
		t.Errorf("skipped %q (truncated %v), want %q", sum.SkippedSpecial, sum.SkippedSpecialTruncated, want)
	}
	if sum.Members != 3 {
		t.Errorf("members %d, want 3 (two files and a directory)", sum.Members)
	}
	if got, want := describeTree(t, l.dest), map[string]string{"a.txt": "f 0644 a\n", "b.txt": "f 0644 b\n", "dev": "d 0755"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tree %q, want %q", got, want)
	}
}

// TestHardlinksAreLinksCountedOnce: a hard link is written as a link to
// the earlier member, beneath the lane, and its bytes count once, so many
// links to one large file fit a cap the file alone fits.
func TestHardlinksAreLinksCountedOnce(t *testing.T) {
	body := strings.Repeat("x", 1000)
	entries := []entry{dirEntry("d/"), file("d/big", body)}
	for i := range 50 {
		entries = append(entries, entry{name: "l" + string(rune('a'+i%26)) + strings.Repeat("z", i/26), typ: tar.TypeLink, link: "d/big"})
	}
	archive := buildTar(t, entries...)
	caps := Caps{MaxFiles: 100, MaxBytes: 1500 + int64(len(archive))}
	l := newLayout(t)
	sum, err := Extract(bytes.NewReader(archive), l.dest, Caps{MaxFiles: 100, MaxBytes: caps.MaxBytes})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Bytes != 1000 || sum.Members != 52 {
		t.Errorf("bytes %d members %d, want 1000 and 52", sum.Bytes, sum.Members)
	}
	var orig syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(l.dest, "d/big"), &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Nlink != 51 {
		t.Errorf("d/big has %d links, want 51", orig.Nlink)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(l.dest, "la"), &st); err != nil || st.Ino != orig.Ino {
		t.Errorf("la: inode %d, %v; want d/big's %d", st.Ino, err, orig.Ino)
	}
	// Sync agrees, links and all.
	s, ssum, _ := exportBoth(t, treeSpec{"d/big": {body: body}, "la": {body: "old\n"}}, archive)
	if ssum.Bytes != 1000 {
		t.Errorf("synced bytes %d", ssum.Bytes)
	}
	if err := syscall.Lstat(filepath.Join(s.dest, "la"), &st); err != nil || st.Nlink != 51 {
		t.Errorf("synced la: %d links, %v", st.Nlink, err)
	}
}

// TestEscapingSymlinkChains: a link is escaping when its chain through
// the archive's own links leaves the tree.
func TestEscapingSymlinkChains(t *testing.T) {
	archive := buildTar(t,
		link("a", "b"), link("b", "/root"), // a -> b -> /root
		link("c", "d/e"), dirEntry("d/"), link("d/e", "../../up"), // c -> d/e -> ../../up
		link("f", "g"), link("g", "f"), // a loop
		link("h", "d"), link("i", "h/../a"), // i -> h/../a -> ... -> /root
		link("ok", "d"), link("ok2", "ok/../ok"), file("t", "t"), link("ok3", "t"),
		link("j", "d/.."), link("k", "j/.."), // k climbs above the root through j
	)
	_, sum, _ := exportBoth(t, treeSpec{}, archive)
	want := []string{"a", "b", "c", "d/e", "f", "g", "i", "k"}
	got := slices.Clone(sum.EscapingSymlinks)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("escaping %q, want %q", got, want)
	}
}

// TestLongPathsAreExported: a path far past PATH_MAX is written, one
// directory at a time, by Extract and by Sync.
func TestLongPathsAreExported(t *testing.T) {
	comp := strings.Repeat("p", 200)
	var entries []entry
	dir := ""
	for range 30 { // 30 × 201 bytes: past PATH_MAX (4096)
		dir += comp + "/"
		entries = append(entries, dirEntry(dir))
	}
	entries = append(entries, file(dir+"deep.txt", "deep\n"))
	archive := buildTar(t, entries...)
	caps := Caps{MaxFiles: 100, MaxBytes: 1 << 20}
	for _, sync := range []bool{false, true} {
		l := newLayout(t)
		var sum Summary
		var err error
		if sync {
			base := baseOf(treeSpec{"a": {body: "a"}})
			must(t, Populate(t.Context(), l.dest, base))
			sum, _, err = Sync(bytes.NewReader(archive), l.dest, caps, base)
		} else {
			sum, err = Extract(bytes.NewReader(archive), l.dest, caps)
		}
		if err != nil || sum.Members != 31 {
			t.Fatalf("sync %v: %+v, %v", sync, sum, err)
		}
		ln, err := openLane(l.dest)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ln.open(dir + "deep.txt")
		if err != nil {
			t.Fatalf("sync %v: open the deep file: %v", sync, err)
		}
		b := make([]byte, 16)
		n, _ := f.Read(b)
		_ = f.Close()
		_ = ln.Close()
		if string(b[:n]) != "deep\n" {
			t.Errorf("sync %v: deep file %q", sync, b[:n])
		}
		if _, err := os.Lstat(filepath.Join(l.dest, "a")); sync && !os.IsNotExist(err) {
			t.Errorf("base's a is still there: %v", err)
		}
		// Clearing the lane removes it again, however deep.
		must(t, Clear(l.dest))
		l.assertOnlyGit(t)
	}
}

// TestRepositoriesAreFound: directories git would take for a repository
// are listed, by git's rules, and plain ones are not.
func TestRepositoriesAreFound(t *testing.T) {
	archive := buildTar(t,
		dirEntry("bare/"), file("bare/HEAD", "ref: refs/heads/main\n"), dirEntry("bare/objects/"), dirEntry("bare/refs/"),
		dirEntry("bare/nested/"), file("bare/nested/HEAD", "x"), dirEntry("bare/nested/objects/"), dirEntry("bare/nested/refs/"),
		dirEntry("wt/"), file("wt/HEAD", "0123\n"), file("wt/commondir", "../bare\n"),
		dirEntry("cfg/"), file("cfg/config", "[CoRe]\n\tWorkTree = ..\n"),
		dirEntry("odd/"), file("odd/head", "x"), file("odd/objects", "x"), link("odd/refs", "."),
		dirEntry("plain/"), file("plain/HEAD", "x"), dirEntry("plain/objects/"),
		dirEntry("conf/"), file("conf/config", "[core]\n\tfilemode = false\n# worktree = ..\n"),
		file("HEAD", "x"), dirEntry("objects/"), dirEntry("refs/"),
	)
	_, sum, _ := exportBoth(t, treeSpec{}, archive)
	if want := []string{"bare", "cfg", "odd", "wt"}; !slices.Equal(sum.Repositories, want) {
		t.Errorf("repositories %q, want %q", sum.Repositories, want)
	}
}

func TestConfigMarksRepository(t *testing.T) {
	for text, want := range map[string]bool{
		"[core]\n\tbare = false\n":                true,
		"[core]\n\tworktree = ..\n":               true,
		"[core]bare\n":                            true,
		" [ Core ]\n WORKTREE=..":                 true,
		"[include]\n\tpath = other\n":             true,
		"[includeIf \"gitdir:x\"]\n\tpath = y\n":  true,
		"[core]\n\tfilemode = true\n":             false,
		"[user]\n\tname = bare worktree\n":        false,
		"[core]\n# bare = true\n; worktree = x\n": false,
		"[remote \"origin\"]\n\tworktree = x\n":   false,
		"[core]\n\t" + strings.Repeat("x", 70000): true,
	} {
		got, err := ConfigMarksRepository(strings.NewReader(text))
		if err != nil || got != want {
			t.Errorf("%.40q: %v, %v; want %v", text, got, err, want)
		}
	}
}

// TestQuarantineEmbeddedBareRepository is the finding itself: a bare
// repository made inside the tree, set to core.bare=false,
// core.worktree=.. and core.fsmonitor=<a command>, is moved out of the
// lane, by the archive's verdict (Quarantine) and by a look at the disk
// (QuarantineRepositories, host mode's); afterwards host git run inside
// that directory runs nothing of it.
func TestQuarantineEmbeddedBareRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	for _, fromDisk := range []bool{false, true} {
		name := map[bool]string{false: "archive", true: "disk"}[fromDisk]
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			marker := filepath.Join(t.TempDir(), "marker")
			docs := filepath.Join(work, "docs")
			gitRun(t, "", "init", "-q", "--bare", docs)
			gitRun(t, docs, "config", "core.bare", "false")
			gitRun(t, docs, "config", "core.worktree", "..")
			gitRun(t, docs, "config", "core.fsmonitor", "touch "+marker+"; false")
			must(t, os.WriteFile(filepath.Join(work, "README"), []byte("r\n"), 0o644))
			// The archive the export reads, from the worker's tree.
			l := newLayout(t)
			quarantine := filepath.Join(t.TempDir(), "quarantine")
			var moved []string
			if fromDisk {
				must(t, exec.Command("cp", "-a", work+"/.", l.dest).Run())
				var err error
				if moved, err = QuarantineRepositories(l.dest, quarantine); err != nil {
					t.Fatal(err)
				}
			} else {
				sum, err := Extract(bytes.NewReader(tarOf(t, work)), l.dest, Caps{MaxFiles: 1000, MaxBytes: 1 << 30})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(sum.Repositories, []string{"docs"}) {
					t.Fatalf("repositories %q", sum.Repositories)
				}
				if moved, err = Quarantine(l.dest, sum.Repositories, quarantine); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(moved, []string{"docs"}) {
				t.Fatalf("moved %q", moved)
			}
			if _, err := os.Lstat(filepath.Join(l.dest, "docs")); !os.IsNotExist(err) {
				t.Fatalf("docs still in the lane: %v", err)
			}
			if _, err := os.Stat(filepath.Join(quarantine, "docs", "HEAD")); err != nil {
				t.Errorf("quarantined copy: %v", err)
			}
			// What a prompt with git integration would run there.
			must(t, os.MkdirAll(filepath.Join(l.dest, "docs"), 0o755))
			cmd := exec.Command("git", "status")
			cmd.Dir = filepath.Join(l.dest, "docs")
			cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+l.parent)
			_ = cmd.Run()
			if _, err := os.Lstat(marker); !os.IsNotExist(err) {
				t.Fatalf("host git ran the repository's fsmonitor: %v", err)
			}
		})
	}
}

// TestQuarantineRepositoriesOnDisk: nested .git entries of any case and
// repositories are moved, the root's own .git stays, links are never
// entered.
func TestQuarantineRepositoriesOnDisk(t *testing.T) {
	l := newLayout(t)
	materialize(t, l.dest, treeSpec{
		"a/.git/config": {body: "[core]\n"}, "b/.GIT": {body: "gitdir: /elsewhere\n"},
		"c/HEAD": {body: "x"}, "c/commondir": {body: ".."}, "c/x/.git/HEAD": {body: "x"},
		"d/keep.txt": {body: "k"}, "e": {body: "c", mode: ModeSymlink},
	})
	q := filepath.Join(t.TempDir(), "q")
	moved, err := QuarantineRepositories(l.dest, q)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/.git", "b/.GIT", "c"}; !slices.Equal(moved, want) {
		t.Errorf("moved %q, want %q", moved, want)
	}
	got := describeTree(t, l.dest)
	if want := map[string]string{"a": "d 0755", "b": "d 0755", "d": "d 0755", "d/keep.txt": "f 0644 k", "e": "l -> c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lane %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(l.dest, ".git")); err != nil || string(b) != gitFileBody {
		t.Errorf("the lane's own .git: %q, %v", b, err)
	}
}

// gitRun runs git in dir with no global or system config.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out)
	}
}

// tarOf is dir as a tar stream, as the daemon would give it (names
// relative to dir).
func tarOf(t *testing.T, dir string) []byte {
	t.Helper()
	out, err := exec.Command("tar", "-C", dir, "--format=pax", "-cf", "-", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	// GNU tar names members ./x; the export wants x.
	var buf bytes.Buffer
	tr := tar.NewReader(bytes.NewReader(out))
	tw := tar.NewWriter(&buf)
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		hdr.Name = strings.TrimPrefix(hdr.Name, "./")
		if hdr.Name == "" {
			continue
		}
		must(t, tw.WriteHeader(hdr))
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	must(t, tw.Close())
	return buf.Bytes()
}

// TestZeroBlocksAreWrittenAsHoles: a file of zeros (as the daemon streams
// a sparse one) takes almost no disk in the lane, and reads back whole.
func TestZeroBlocksAreWrittenAsHoles(t *testing.T) {
	const size = 64 << 20
	body := make([]byte, size)
	copy(body[size/2:], "middle")
	archive := buildTar(t, file("sparse", string(body)), file("tail", "x"+string(make([]byte, 100000))))
	l := newLayout(t)
	if _, err := Extract(bytes.NewReader(archive), l.dest, Caps{MaxFiles: 10, MaxBytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(l.dest, "sparse"), &st))
	if st.Size != size || st.Blocks*512 > 1<<20 {
		t.Errorf("size %d, %d bytes allocated; want %d and about none", st.Size, st.Blocks*512, size)
	}
	got, err := os.ReadFile(filepath.Join(l.dest, "sparse"))
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("read back: %v, equal %v", err, bytes.Equal(got, body))
	}
	if fi, err := os.Stat(filepath.Join(l.dest, "tail")); err != nil || fi.Size() != 100001 {
		t.Errorf("a trailing hole: %v, %v", fi, err)
	}
}

// TestSyncWritesOverInPlace: a base file written over in place ends with
// exactly the new bytes, shorter or all zeros.
func TestSyncWritesOverInPlace(t *testing.T) {
	long := strings.Repeat("x", 200000)
	zero := string(make([]byte, 200000))
	before := treeSpec{"a.txt": {body: "long long long\n"}, "b.bin": {body: long}, "c.sh": {body: "echo\n"}}
	archive := buildTar(t, file("a.txt", "s\n"), file("b.bin", zero), entry{name: "c.sh", body: "echo hi\n", mode: 0o755})
	l, _, synced := exportBoth(t, before, archive)
	for name, want := range map[string]string{"a.txt": "s\n", "b.bin": zero, "c.sh": "echo hi\n"} {
		got, err := os.ReadFile(filepath.Join(l.dest, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: %d bytes, %v; want %d bytes", name, len(got), err, len(want))
		}
	}
	if fi, err := os.Stat(filepath.Join(l.dest, "c.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("c.sh mode %v, %v", fi.Mode(), err)
	}
	if !slices.Equal(synced.Changed, []string{"a.txt", "b.bin", "c.sh"}) {
		t.Errorf("changed %q", synced.Changed)
	}
}
