package export

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
)

// archiveOf renders tr as the tar stream a container's tree gives: a
// directory member before its contents, then files and symlinks, by path.
func archiveOf(t testing.TB, tr treeSpec, extraDirs ...string) []byte {
	t.Helper()
	dirs := map[string]bool{}
	for _, d := range extraDirs {
		dirs[d] = true
	}
	for p := range tr {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	type item struct {
		name string
		e    entry
	}
	var items []item
	for d := range dirs {
		items = append(items, item{d, dirEntry(d + "/")})
	}
	for p, s := range tr {
		switch s.blobMode() {
		case ModeSymlink:
			items = append(items, item{p, link(p, s.body)})
		case ModeExecutable:
			items = append(items, item{p, entry{name: p, body: s.body, mode: 0o755}})
		default:
			items = append(items, item{p, file(p, s.body)})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.name, b.name) })
	var es []entry
	for _, it := range items {
		es = append(es, it.e)
	}
	return buildTar(t, es...)
}

// randomTree is a tree of files, executables and symlinks under a few
// directories.
func randomTree(rng *rand.Rand, n int) treeSpec {
	tr := treeSpec{}
	dirs := []string{"", "a/", "a/b/", "c/", "d/e/f/"}
	for i := range n {
		p := fmt.Sprintf("%sf%d", dirs[rng.IntN(len(dirs))], i)
		switch rng.IntN(8) {
		case 0:
			tr[p] = spec{body: "../f" + fmt.Sprint(rng.IntN(5)), mode: ModeSymlink}
		case 1:
			tr[p] = spec{body: fmt.Sprintf("#!/bin/sh\necho %d\n", i), mode: ModeExecutable}
		default:
			tr[p] = spec{body: strings.Repeat(fmt.Sprintf("line %d\n", i), rng.IntN(50))}
		}
	}
	return tr
}

// mutate changes tr as a worker might: edits, mode flips, deletions
// (a whole directory sometimes), additions, a file turned directory and
// a directory turned file.
func mutate(rng *rand.Rand, tr treeSpec) treeSpec {
	out := maps.Clone(tr)
	keys := slices.Sorted(maps.Keys(out))
	for _, p := range keys {
		switch rng.IntN(12) {
		case 0:
			delete(out, p)
		case 1:
			s := out[p]
			if s.blobMode() != ModeSymlink {
				s.body += "changed\n"
				out[p] = s
			}
		case 2:
			s := out[p]
			switch s.blobMode() {
			case ModeFile:
				s.mode = ModeExecutable
			case ModeExecutable:
				s.mode = ModeFile
			}
			out[p] = s
		case 3:
			// Same size, other bytes: only the content comparison sees it.
			s := out[p]
			if s.blobMode() != ModeSymlink && len(s.body) > 0 {
				b := []byte(s.body)
				b[len(b)-1] ^= 1
				s.body = string(b)
				out[p] = s
			}
		case 4:
			// A file becomes a directory.
			delete(out, p)
			out[p+"/inner"] = spec{body: "now a dir\n"}
		}
	}
	if rng.IntN(2) == 0 {
		for _, p := range keys {
			if strings.HasPrefix(p, "a/b/") {
				delete(out, p)
			}
		}
	}
	if rng.IntN(2) == 0 {
		// A directory becomes a file.
		for p := range out {
			if strings.HasPrefix(p, "c/") {
				delete(out, p)
			}
		}
		out["c"] = spec{body: "c is a file now\n"}
	}
	for i := range rng.IntN(5) {
		out[fmt.Sprintf("new/n%d", i)] = spec{body: "new\n"}
	}
	return out
}

// TestSyncMatchesExtract: for random bases and random changes, a worktree
// populated with the base and synced to the archive holds exactly what
// Extract writes into an empty one, with the same Summary, and DiffPaths
// over what Sync changed is DiffTree over the whole tree, patch included.
func TestSyncMatchesExtract(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		before := randomTree(rng, 30+rng.IntN(40))
		after := mutate(rng, before)
		archive := archiveOf(t, after)
		caps := Caps{MaxFiles: 10000, MaxBytes: 1 << 30}

		want := newLayout(t)
		wantSum, err := Extract(bytes.NewReader(archive), want.dest, caps)
		if err != nil {
			t.Fatalf("seed %d: Extract: %v", seed, err)
		}
		got := newLayout(t)
		if err := Populate(t.Context(), got.dest, baseOf(before)); err != nil {
			t.Fatalf("seed %d: Populate: %v", seed, err)
		}
		if d := describeTree(t, got.dest); len(d) < len(before) {
			t.Fatalf("seed %d: Populate wrote %d entries for %d files", seed, len(d), len(before))
		}
		gotSum, synced, err := Sync(bytes.NewReader(archive), got.dest, caps, baseOf(before))
		if err != nil {
			t.Fatalf("seed %d: Sync: %v", seed, err)
		}
		if !equalSummaries(wantSum, gotSum) {
			t.Errorf("seed %d: summary %+v, Extract's %+v", seed, gotSum, wantSum)
		}
		wantTree, gotTree := describeTree(t, want.dest), describeTree(t, got.dest)
		if !maps.Equal(wantTree, gotTree) {
			for k := range maps.Keys(wantTree) {
				if wantTree[k] != gotTree[k] {
					t.Errorf("seed %d: %s: synced %q, extracted %q", seed, k, gotTree[k], wantTree[k])
				}
			}
			for k := range maps.Keys(gotTree) {
				if _, ok := wantTree[k]; !ok {
					t.Errorf("seed %d: %s left behind: %q", seed, k, gotTree[k])
				}
			}
			t.FailNow()
		}
		got.assertContained(t)

		full, fullPatch := diffDir(t, want.dest, before, DiffOptions{MaxPatchMB: 10})
		root, err := os.OpenRoot(got.dest)
		if err != nil {
			t.Fatal(err)
		}
		var patch bytes.Buffer
		part, err := DiffPaths(t.Context(), root, baseOf(before), synced.Changed, &patch, DiffOptions{MaxPatchMB: 10})
		_ = root.Close()
		if err != nil {
			t.Fatalf("seed %d: DiffPaths: %v", seed, err)
		}
		if !slices.Equal(part.Files, full.Files) || part.Stat != full.Stat || patch.String() != fullPatch {
			t.Errorf("seed %d: DiffPaths over %d changed paths:\nfiles %q\nstat %q\nwant files %q\nstat %q",
				seed, len(synced.Changed), part.Files, part.Stat, full.Files, full.Stat)
		}
		// Sync wrote only what changed: an unchanged file is never in
		// the list.
		for _, p := range synced.Changed {
			if b, ok := before[p]; ok {
				if a, ok := after[p]; ok && a == b {
					t.Errorf("seed %d: %s unchanged but listed as changed", seed, p)
				}
			}
		}
	}
}

func equalSummaries(a, b Summary) bool {
	return a.Members == b.Members && a.Bytes == b.Bytes && slices.Equal(a.Files, b.Files) &&
		slices.Equal(a.EscapingSymlinks, b.EscapingSymlinks)
}

// TestSyncLeavesUnchangedFilesAlone: a file equal to the base is not
// rewritten (its inode stays), and a changed one is.
func TestSyncLeavesUnchangedFilesAlone(t *testing.T) {
	before := treeSpec{"same.txt": {body: "same\n"}, "edit.txt": {body: "old\n"}}
	after := treeSpec{"same.txt": {body: "same\n"}, "edit.txt": {body: "new\n"}}
	l := newLayout(t)
	if err := Populate(t.Context(), l.dest, baseOf(before)); err != nil {
		t.Fatal(err)
	}
	// A second link to each file keeps its inode alive, so a rewrite
	// shows as a different file rather than possibly the same number.
	keep := func(name string) string {
		hl := path.Join(l.parent, name+".link")
		if err := os.Link(path.Join(l.dest, name), hl); err != nil {
			t.Fatal(err)
		}
		return hl
	}
	sameFile := func(name, hl string) bool {
		a, err := os.Lstat(path.Join(l.dest, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Lstat(hl)
		if err != nil {
			t.Fatal(err)
		}
		return os.SameFile(a, b)
	}
	same, edit := keep("same.txt"), keep("edit.txt")
	_, synced, err := Sync(bytes.NewReader(archiveOf(t, after)), l.dest, Caps{MaxFiles: 10, MaxBytes: 1 << 20}, baseOf(before))
	if err != nil {
		t.Fatal(err)
	}
	if !sameFile("same.txt", same) {
		t.Error("the unchanged file was rewritten")
	}
	if sameFile("edit.txt", edit) {
		t.Error("the changed file is the base's file: it was not replaced")
	}
	if !slices.Equal(synced.Changed, []string{"edit.txt"}) {
		t.Errorf("changed %q", synced.Changed)
	}
}

// TestSyncRefusalsMatchExtract: a hostile archive is refused by Sync as
// Extract refuses it, nothing lands outside, and the worktree is left
// with its .git file only.
func TestSyncRefusalsMatchExtract(t *testing.T) {
	before := treeSpec{"a/x.txt": {body: "x\n"}, "l": {body: "../outside", mode: ModeSymlink}}
	cases := map[string][]entry{
		"through a base symlink": {link("l", "../outside"), file("l/escape.txt", "boom")},
		"dot dot":                {file("../escape.txt", "boom")},
		"absolute":               {file("/tmp/escape.txt", "boom")},
		"hardlink to nothing":    {file("a/x.txt", "x\n"), {name: "h", typ: tar.TypeLink, link: "b/x.txt"}},
		"too many files":         {file("1", ""), file("2", ""), file("3", ""), file("4", "")},
		"too many bytes":         {file("big", strings.Repeat("b", 5000))},
	}
	for name, es := range cases {
		t.Run(name, func(t *testing.T) {
			archive := buildTar(t, es...)
			caps := Caps{MaxFiles: 3, MaxBytes: 4096}
			want := newLayout(t)
			_, wantErr := Extract(bytes.NewReader(archive), want.dest, caps)
			l := newLayout(t)
			if err := Populate(t.Context(), l.dest, baseOf(before)); err != nil {
				t.Fatal(err)
			}
			_, _, err := Sync(bytes.NewReader(archive), l.dest, caps, baseOf(before))
			var wantRef, gotRef *Refusal
			if !errors.As(wantErr, &wantRef) || !errors.As(err, &gotRef) {
				t.Fatalf("Sync: %v; Extract: %v; want refusals from both", err, wantErr)
			}
			if !errors.Is(gotRef, wantRef.kind) || gotRef.Reason != wantRef.Reason {
				t.Errorf("Sync refused with %v, Extract with %v", gotRef, wantRef)
			}
			l.assertContained(t)
			l.assertOnlyGit(t)
		})
	}
}

// TestPopulateRefusesOccupiedWorktree: Populate writes only into a
// worktree holding nothing but .git.
func TestPopulateRefusesOccupiedWorktree(t *testing.T) {
	l := newLayout(t)
	if err := os.WriteFile(l.dest+"/stray", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Populate(t.Context(), l.dest, baseOf(treeSpec{"a": {body: "a"}})); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Populate over content: %v, want ErrNotEmpty", err)
	}
}
