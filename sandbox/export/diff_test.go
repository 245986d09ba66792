package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// withoutSection drops the patch of one path.
func withoutSection(patch, path string) string {
	var out strings.Builder
	drop := false
	for _, line := range strings.SplitAfter(patch, "\n") {
		if strings.HasPrefix(line, "diff --git ") {
			drop = line == "diff --git a/"+path+" b/"+path+"\n"
		}
		if !drop {
			out.WriteString(line)
		}
	}
	return out.String()
}

// TestHostileGitattributesChangeNothing: a worker's .gitattributes asking
// for binary, a diff driver, eol conversion and no text leaves every other
// path's patch, stat line and listing as it is without the file.
func TestHostileGitattributesChangeNothing(t *testing.T) {
	before := treeSpec{
		"src/program_main.c": {body: "int main(void)\n{\n\treturn 0;\n}\n"},
		"docs/readme.txt":    {body: "hello\r\nworld\r\n"},
		"data/archive.gz":    {body: "text, really\n"},
	}
	after := treeSpec{
		"src/program_main.c": {body: "int main(void)\n{\n\treturn 1;\n}\n"},
		"docs/readme.txt":    {body: "hello\r\nthere\r\n"},
		"data/archive.gz":    {body: "still text\n"},
	}
	plain, plainPatch := diffOf(t, before, after, DiffOptions{MaxPatchMB: 1})

	hostile := treeSpec{".gitattributes": {body: "* binary -text eol=crlf diff=evil\n*.c diff=cpp textconv=cat\n*.gz -diff\n"}}
	for p, s := range after {
		hostile[p] = s
	}
	got, gotPatch := diffOf(t, before, hostile, DiffOptions{MaxPatchMB: 1})

	if w := withoutSection(gotPatch, ".gitattributes"); w != plainPatch {
		t.Errorf("patch changed by .gitattributes\n%s", firstDifference(w, plainPatch))
	}
	if !strings.Contains(plainPatch, "-\treturn 0;\n+\treturn 1;\n") || strings.Contains(gotPatch, "Binary files") {
		t.Errorf("content not diffed as text:\n%s", gotPatch)
	}
	if want := append([]string{".gitattributes"}, plain.Files...); !slices.Equal(got.Files, want) {
		t.Errorf("files = %q, want %q", got.Files, want)
	}
	statLines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, " | ") && !strings.Contains(l, ".gitattributes") {
				out = append(out, l)
			}
		}
		return out
	}
	if g, w := statLines(got.Stat), statLines(plain.Stat); !slices.Equal(g, w) || len(w) != 3 {
		t.Errorf("stat lines = %q, want %q", g, w)
	}
}

// TestPatchCap: a patch past the cap keeps exactly its first MiB and
// ends with the marker, while the stat still counts every change.
func TestPatchCap(t *testing.T) {
	after := treeSpec{}
	for i := range 4 {
		after[fmt.Sprintf("f%d.txt", i)] = spec{body: lines(strings.Repeat("y", 60), 0, 9000)}
	}
	full, fullPatch := diffOf(t, treeSpec{}, after, DiffOptions{MaxPatchMB: 64})
	if full.PatchTruncated || len(fullPatch) < 2<<20 {
		t.Fatalf("uncapped patch is %d bytes, truncated %v; want > 2 MiB", len(fullPatch), full.PatchTruncated)
	}
	capped, patch := diffOf(t, treeSpec{}, after, DiffOptions{MaxPatchMB: 1})
	want := fullPatch[:1<<20] + "\n[patch truncated at 1 MB]\n"
	if patch != want {
		t.Errorf("capped patch: %d bytes, tail %q; want %d bytes", len(patch), patch[max(0, len(patch)-40):], len(want))
	}
	if !capped.PatchTruncated || capped.PatchBytes != int64(len(want)) {
		t.Errorf("PatchTruncated %v, PatchBytes %d; want true, %d", capped.PatchTruncated, capped.PatchBytes, len(want))
	}
	if capped.Stat != full.Stat || !strings.Contains(capped.Stat, "36000 insertions(+)") {
		t.Errorf("stat under the cap:\n%s\nwant:\n%s", capped.Stat, full.Stat)
	}

	exact, exactPatch := diffOf(t, treeSpec{}, treeSpec{"a": {body: "x\n"}}, DiffOptions{MaxPatchMB: 1})
	if exact.PatchTruncated || strings.Contains(exactPatch, "truncated") {
		t.Errorf("a patch under the cap was marked: %q", exactPatch)
	}
	zero, zeroPatch := diffOf(t, treeSpec{}, treeSpec{"a": {body: "x\n"}}, DiffOptions{})
	if !zero.PatchTruncated || zeroPatch != "\n[patch truncated at 0 MB]\n" {
		t.Errorf("zero cap: truncated %v, patch %q", zero.PatchTruncated, zeroPatch)
	}
}

// TestFilesCap lists the first 1000 changed paths in order and flags the
// rest.
func TestFilesCap(t *testing.T) {
	after := treeSpec{}
	for i := range MaxFilesChanged + 1 {
		after[fmt.Sprintf("f%04d", i)] = spec{body: "x\n"}
	}
	d, _ := diffOf(t, treeSpec{}, after, DiffOptions{MaxPatchMB: 8})
	want := sortedKeys(after)[:MaxFilesChanged]
	if !d.FilesTruncated || !slices.Equal(d.Files, want) {
		t.Errorf("got %d files (truncated %v), want the first %d sorted", len(d.Files), d.FilesTruncated, MaxFilesChanged)
	}
	if !strings.Contains(d.Stat, " 1001 files changed, 1001 insertions(+)\n") {
		t.Errorf("stat summary misses files: %q", d.Stat[max(0, len(d.Stat)-80):])
	}
	d, _ = diffOf(t, treeSpec{}, treeSpec{"only": {body: "x\n"}}, DiffOptions{MaxPatchMB: 8})
	if d.FilesTruncated {
		t.Error("FilesTruncated set with one file")
	}
}

// TestStatCap cuts a stat over 64000 characters and marks it.
func TestStatCap(t *testing.T) {
	long := strings.Repeat("é", StatCap+10)
	got := capStat(long)
	if want := strings.Repeat("é", StatCap) + "\n[diff_stat truncated at 64000 chars]"; got != want {
		t.Errorf("capStat kept %d runes", len([]rune(got)))
	}
	if short := strings.Repeat("a", StatCap); capStat(short) != short {
		t.Error("capStat cut a stat at the cap")
	}
}

// TestTreeReadingStaysInside: .git entries at any depth and case are not
// part of the tree, a symlink shows its target and is never followed (to
// a file or a directory, inside or out), and a base gitlink's path is
// left alone.
func TestTreeReadingStaysInside(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	materialize(t, dir, treeSpec{
		".git":             {body: "gitdir: /elsewhere\n"},
		"sub/.GIT/config":  {body: "[core]\n"},
		"sub/keep.txt":     {body: "k\n"},
		"vendor/lib/x.go":  {body: "package lib\n"},
		"out":              {body: filepath.Join(outside, "secret"), mode: ModeSymlink},
		"outdir":           {body: outside, mode: ModeSymlink},
		"loop":             {body: "loop", mode: ModeSymlink},
		"inner":            {body: "sub", mode: ModeSymlink},
		"sub/deep/.Git/HE": {body: "ref\n"},
	})
	before := treeSpec{
		"sub/keep.txt": {body: "k\n"},
		"vendor/lib":   {body: "0123456789012345678901234567890123456789", mode: ModeGitlink},
	}
	d, patch := diffDir(t, dir, before, DiffOptions{MaxPatchMB: 1})
	if want := []string{"inner", "loop", "out", "outdir"}; !slices.Equal(d.Files, want) {
		t.Errorf("files = %q, want %q", d.Files, want)
	}
	if strings.Contains(patch, "+secret\n") || !strings.Contains(patch, "+"+filepath.Join(outside, "secret")+"\n\\ No newline") {
		t.Errorf("symlink not diffed as its target:\n%s", patch)
	}
}

// TestBaseTreeErrors refuses a base DiffTree cannot diff against.
func TestBaseTreeErrors(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	for name, base := range map[string][]BaseFile{
		"duplicate": {{Path: "a", Mode: ModeFile}, {Path: "a", Mode: ModeExecutable}},
		"mode":      {{Path: "a", Mode: 0o40000}},
		"absolute":  {{Path: "/a", Mode: ModeFile}},
		"empty":     {{Path: "", Mode: ModeFile}},
	} {
		if _, err := DiffTree(t.Context(), root, base, nil, DiffOptions{}); !errors.Is(err, ErrBaseTree) {
			t.Errorf("%s: err = %v, want ErrBaseTree", name, err)
		}
	}
}

// TestDiffCancelled stops on a cancelled context.
func TestDiffCancelled(t *testing.T) {
	dir := t.TempDir()
	materialize(t, dir, treeSpec{"a": {body: "x\n"}})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := DiffTree(ctx, root, nil, nil, DiffOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestBlobID matches git's object names.
func TestBlobID(t *testing.T) {
	for data, want := range map[string]string{
		"":        "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
		"hello\n": "ce013625030ba8dba906f756967f9e9ca394464a",
	} {
		if got := blobID([]byte(data)); got != want {
			t.Errorf("blobID(%q) = %s, want %s", data, got, want)
		}
	}
	if !isBinary(append(bytes.Repeat([]byte("a"), binaryProbe-1), 0)) || isBinary(append(bytes.Repeat([]byte("a"), binaryProbe), 0)) {
		t.Error("isBinary must look at exactly the first 8000 bytes")
	}
}
