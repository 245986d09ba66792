package fsops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// allocated is what the kernel says path takes, not following a link.
func allocated(t testing.TB, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func TestMeasureFileDirFile(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"a.txt": "hello\n", "d/b.txt": strings.Repeat("x", 10000)})
	m, err := openTree(t, dir).Measure(t.Context(), Limits{})
	must(t, err)
	want := allocated(t, filepath.Join(dir, "a.txt")) + allocated(t, filepath.Join(dir, "d")) + allocated(t, filepath.Join(dir, "d", "b.txt"))
	if m.Entries != 3 || m.Bytes != want || m.Violation != "" || len(m.EscapingSymlinks) != 0 {
		t.Fatalf("Measure = %+v; want 3 entries, %d bytes, nothing else", m, want)
	}
	if m.Bytes < 10000 {
		t.Fatalf("%d bytes counted for a 10000-byte file", m.Bytes)
	}
}

func TestMeasureLinks(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"a.txt": "x", "d/b.txt": "x", ".git": "gitdir: /elsewhere\n"})
	for link, target := range map[string]string{
		"out":      "../x",
		"abs":      "/etc",
		"absin":    filepath.Join(dir, "a.txt"),
		"in":       "a.txt",
		"dotdot":   "..hidden",
		"linkdir":  "d",
		"usr":      "/usr",
		"d/up":     "../a.txt",
		"d/self":   ".",
		"d/esc":    "../../x",
		"d/deeper": "./../d/../../x",
	} {
		must(t, os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))))
	}
	m, err := openTree(t, dir).Measure(t.Context(), Limits{})
	must(t, err)
	// a.txt, d, d/b.txt, .git and the eleven links, each link one entry:
	// neither the linked directory nor /usr is walked.
	if m.Entries != 15 {
		t.Fatalf("Entries = %d, want 15", m.Entries)
	}
	want := []string{"abs", "absin", "d/deeper", "d/esc", "out", "usr"}
	if !slices.Equal(m.EscapingSymlinks, want) {
		t.Fatalf("EscapingSymlinks = %q, want %q", m.EscapingSymlinks, want)
	}
}

func TestMeasureEntryCap(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"1": "", "2": "", "3": "", "4": "", "5": ""})
	f := openTree(t, dir)
	m, err := f.Measure(t.Context(), Limits{MaxEntries: 3})
	must(t, err)
	if m.Violation != "worktree exceeds 3 entries" || m.Entries != 4 {
		t.Fatalf("Measure at limit 3 = %+v; want a breach on the 4th entry", m)
	}
	m, err = f.Measure(t.Context(), Limits{MaxEntries: 5})
	must(t, err)
	if m.Violation != "" || m.Entries != 5 {
		t.Fatalf("Measure at limit 5 = %+v; want 5 entries, no breach", m)
	}
}

func TestMeasureByteCap(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"big": strings.Repeat("x", 3<<20)})
	f := openTree(t, dir)
	m, err := f.Measure(t.Context(), Limits{MaxBytes: 1 << 20})
	must(t, err)
	if m.Violation != "worktree exceeds 1 MB" {
		t.Fatalf("Measure with 3 MiB against 1 MB = %+v", m)
	}
	m, err = f.Measure(t.Context(), Limits{MaxBytes: 8 << 20})
	must(t, err)
	if m.Violation != "" || m.Bytes < 3<<20 {
		t.Fatalf("Measure with 3 MiB against 8 MB = %+v", m)
	}
}

func TestMeasureUnreadableDirectory(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"a/x": "", "b/y": "", "c/z": ""})
	real := openDirForMeasure
	t.Cleanup(func() { openDirForMeasure = real })
	openDirForMeasure = func(root *os.Root, rel string) (*os.File, error) {
		if rel == "b" {
			return nil, &fs.PathError{Op: "openat", Path: rel, Err: syscall.EACCES}
		}
		return real(root, rel)
	}
	m, err := openTree(t, dir).Measure(t.Context(), Limits{})
	must(t, err)
	// The walk goes on past it: a, b, c, a/x and c/z are counted, and b
	// is listed, not a breach (a worker's chmod 000 is no budget
	// violation).
	if m.Violation != "" || m.Entries != 5 || !slices.Equal(m.Unreadable, []string{"b"}) {
		t.Fatalf("Measure = %+v; want the unreadable b listed and 5 entries", m)
	}
}

// TestMeasureCountsHardLinksOnceAndSparseFilesWhole: many names of one
// file cost its bytes once; a sparse file costs its size, which is what
// writing it out costs.
func TestMeasureCountsHardLinksOnceAndSparseFilesWhole(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "big"), make([]byte, 1<<20), 0o644))
	for i := range 20 {
		must(t, os.Link(filepath.Join(dir, "big"), filepath.Join(dir, fmt.Sprintf("link%d", i))))
	}
	m, err := openTree(t, dir).Measure(t.Context(), Limits{MaxBytes: 2 << 20})
	must(t, err)
	if m.Violation != "" || m.Entries != 21 || m.Bytes < 1<<20 || m.Bytes > 1<<20+64<<10 {
		t.Fatalf("20 links to 1 MiB: %+v, want about 1 MiB and no breach", m)
	}
	sparse := t.TempDir()
	f, err := os.Create(filepath.Join(sparse, "hole"))
	must(t, err)
	must(t, f.Truncate(100<<20))
	must(t, f.Close())
	m, err = openTree(t, sparse).Measure(t.Context(), Limits{MaxBytes: 50 << 20})
	must(t, err)
	if m.Violation != "worktree exceeds 50 MB" {
		t.Fatalf("a 100 MiB sparse file against 50 MB: %+v", m)
	}
}

// TestMeasureMatchesAPlainWalk checks the concurrent walk against a
// sequential one over a tree wide and deep enough to spread over workers,
// and that a cap trips at exactly its entry however the work was spread.
func TestMeasureMatchesAPlainWalk(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for a := range 6 {
		for b := range 5 {
			for c := range 4 {
				files[fmt.Sprintf("a%d/b%d/c%d.txt", a, b, c)] = strings.Repeat("x", a*b*c*700)
			}
			files[fmt.Sprintf("a%d/b%d/deep/er/f", a, b)] = "f"
		}
	}
	buildTree(t, dir, files)
	must(t, os.Symlink("../../..", filepath.Join(dir, "a1", "b1", "out")))
	must(t, os.Symlink("../b2", filepath.Join(dir, "a1", "b1", "in")))

	var want Measurement
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		want.Entries++
		want.Bytes += allocated(t, p)
		return nil
	}))
	want.EscapingSymlinks = []string{"a1/b1/out"}

	f := openTree(t, dir)
	got, err := f.Measure(t.Context(), Limits{})
	must(t, err)
	if got.Entries != want.Entries || got.Bytes != want.Bytes || !slices.Equal(got.EscapingSymlinks, want.EscapingSymlinks) || got.Violation != "" {
		t.Fatalf("Measure = %+v\nplain walk %+v", got, want)
	}
	for _, limit := range []int64{1, 37, want.Entries - 1} {
		got, err := f.Measure(t.Context(), Limits{MaxEntries: limit})
		must(t, err)
		if got.Entries != limit+1 || got.Violation != fmt.Sprintf("worktree exceeds %d entries", limit) {
			t.Fatalf("Measure at limit %d = %d entries, %q", limit, got.Entries, got.Violation)
		}
	}
}

func TestMeasureCancelled(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"a": ""})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := openTree(t, dir).Measure(ctx, Limits{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Measure on a cancelled context: %v", err)
	}
}

func TestMeasureClosedRoot(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"a": ""})
	root, err := os.OpenRoot(dir)
	must(t, err)
	must(t, root.Close())
	m, err := New(root, dir).Measure(t.Context(), Limits{})
	if !errors.Is(err, os.ErrClosed) || m.Violation != "" {
		t.Fatalf("Measure of a closed root = %+v, %v; want os.ErrClosed and no violation", m, err)
	}
}

func TestStatBytes(t *testing.T) {
	dir := t.TempDir()
	buildTree(t, dir, map[string]string{"f": strings.Repeat("x", 20000)})
	must(t, os.Symlink("f", filepath.Join(dir, "link")))
	f := openTree(t, dir)
	for _, name := range []string{"f", "link"} {
		got, ok := f.StatBytes(name)
		if want := allocated(t, filepath.Join(dir, name)); !ok || got != want {
			t.Errorf("StatBytes(%q) = %d, %v; want %d, true", name, got, ok, want)
		}
	}
	if got, ok := f.StatBytes("missing"); ok || got != 0 {
		t.Errorf("StatBytes(missing) = %d, %v", got, ok)
	}
	if f1, _ := f.StatBytes("f"); f1 < 20000 {
		t.Errorf("StatBytes(f) = %d for 20000 bytes of data", f1)
	}
}

// BenchmarkMeasure20k measures a tree of 20,000 files in 200 directories.
func BenchmarkMeasure20k(b *testing.B) { benchmarkMeasure(b, 200) }

// BenchmarkMeasure200k measures 200,000 files in 2,000 directories: the
// largest tree the budget's walk must cover well within the watchdog's
// 10 s sampling budget.
func BenchmarkMeasure200k(b *testing.B) { benchmarkMeasure(b, 2000) }

// benchmarkMeasure measures dirs directories of 100 one-byte files.
func benchmarkMeasure(b *testing.B, dirs int) {
	dir := b.TempDir()
	for d := range dirs {
		sub := filepath.Join(dir, fmt.Sprintf("d%04d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range 100 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", i)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	f := New(root, dir)
	want := int64(dirs * 101)
	for b.Loop() {
		m, err := f.Measure(b.Context(), Limits{})
		if err != nil || m.Entries != want {
			b.Fatalf("Measure = %+v, %v", m, err)
		}
	}
}
