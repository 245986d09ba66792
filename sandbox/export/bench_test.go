package export

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tree20k is 20,000 small files in 200 directories, the size of the
// reference fixture repository.
func tree20k(b *testing.B) []byte {
	b.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := bytes.Repeat([]byte("x"), 100)
	for d := range 200 {
		dir := fmt.Sprintf("pkg%03d/", d)
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			hdr := &tar.Header{Name: fmt.Sprintf("%sfile%03d.go", dir, f), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}
			if err := tw.WriteHeader(hdr); err != nil {
				b.Fatal(err)
			}
			if _, err := tw.Write(body); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

var caps20k = Caps{MaxFiles: 200000, MaxBytes: 2048 << 20}

// BenchmarkExtract20k extracts tree20k into a fresh worktree per
// iteration. Creating 20,000 inodes costs what the file system makes it
// cost, and on some disks that cost swings several-fold from one minute
// to the next; so beside each extraction, with the timer stopped, the
// same tree is written with nothing but the system calls any extraction
// must make (writeFloor), and its mean is reported as floor-ns/op: the
// extraction's floor on the same disk at the same time. The floor goes
// first on even iterations, the extraction on odd ones. To measure the
// extractor rather than the disk, run it with TMPDIR on a tmpfs.
func BenchmarkExtract20k(b *testing.B) {
	stream := tree20k(b)
	base := b.TempDir()
	b.SetBytes(int64(len(stream)))
	var floor time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		dest := filepath.Join(base, fmt.Sprint(i))
		if err := os.Mkdir(dest, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dest, ".git"), []byte(gitFileBody), 0o644); err != nil {
			b.Fatal(err)
		}
		floorDest := filepath.Join(base, fmt.Sprint("floor", i))
		if i%2 == 0 {
			floor += writeFloor(b, floorDest)
		}
		b.StartTimer()
		sum, err := Extract(bytes.NewReader(stream), dest, caps20k)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Members != 20200 {
			b.Fatalf("members = %d", sum.Members)
		}
		b.StopTimer()
		if i%2 == 1 {
			floor += writeFloor(b, floorDest)
		}
		for _, d := range []string{dest, floorDest} {
			if err := os.RemoveAll(d); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor-ns/op")
}

// BenchmarkValidate20k is the pure pass over the same stream.
func BenchmarkValidate20k(b *testing.B) {
	stream := tree20k(b)
	b.SetBytes(int64(len(stream)))
	b.ResetTimer()
	for range b.N {
		if _, err := Validate(bytes.NewReader(stream), caps20k); err != nil {
			b.Fatal(err)
		}
	}
}

// treeOf is n small files in directories of 100, as a base and as the
// archive of the same tree, each file's body made by body(i).
func treeOf(b *testing.B, n int, body func(i int) string) ([]BaseFile, []byte) {
	b.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	base := make([]BaseFile, 0, n)
	for i := range n {
		if i%100 == 0 {
			if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("d%04d/", i/100), Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
				b.Fatal(err)
			}
		}
		name := fmt.Sprintf("d%04d/f%03d.txt", i/100, i%100)
		data := body(i)
		base = append(base, BaseFile{Path: name, Mode: ModeFile, Blob: []byte(fmt.Sprintf("line %d\n", i))})
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			b.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	return base, buf.Bytes()
}

// benchSync times Sync plus DiffPaths over what it changed, the host side
// of a docker finalize, into a lane Populate filled with base.
func benchSync(b *testing.B, base []BaseFile, archive []byte, wantChanged int) {
	caps := Caps{MaxFiles: 1 << 20, MaxBytes: 2048 << 20}
	dir := b.TempDir()
	for i := range b.N {
		b.StopTimer()
		dest := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(dest, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dest, ".git"), []byte(gitFileBody), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := Populate(b.Context(), dest, base); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		_, synced, err := Sync(bytes.NewReader(archive), dest, caps, base)
		if err != nil {
			b.Fatal(err)
		}
		root, err := os.OpenRoot(dest)
		if err != nil {
			b.Fatal(err)
		}
		d, err := DiffPaths(b.Context(), root, base, synced.Changed, io.Discard, DiffOptions{MaxPatchMB: 10})
		_ = root.Close()
		if err != nil {
			b.Fatal(err)
		}
		if len(synced.Changed) != wantChanged || (wantChanged > 0 && len(d.Files) == 0) {
			b.Fatalf("%d changed, %d in the diff", len(synced.Changed), len(d.Files))
		}
		b.StopTimer()
		if err := os.RemoveAll(dest); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkSync100kChanged: 100,000 small files, every one changed.
func BenchmarkSync100kChanged(b *testing.B) {
	base, archive := treeOf(b, 100000, func(i int) string { return fmt.Sprintf("line %d changed\n", i) })
	benchSync(b, base, archive, 100000)
}

// BenchmarkSync20kUnchanged: 20,000 files the worker left as they were.
func BenchmarkSync20kUnchanged(b *testing.B) {
	base, archive := treeOf(b, 20000, func(i int) string { return fmt.Sprintf("line %d\n", i) })
	benchSync(b, base, archive, 0)
}

// writeFloor writes tree20k's 200 directories and 20,000 files under
// dest, which it makes, with plain system calls and nothing checked, a
// directory at a time to each of as many goroutines as the extraction's
// pool has (creations in different directories overlap where the disk
// makes a creation wait), and returns how long that took.
func writeFloor(b *testing.B, dest string) time.Duration {
	b.Helper()
	body := bytes.Repeat([]byte("x"), 100)
	names := make([]string, 100)
	for f := range names {
		names[f] = fmt.Sprintf("file%03d.go", f)
	}
	start := time.Now()
	if err := os.Mkdir(dest, 0o755); err != nil {
		b.Fatal(err)
	}
	dfd, err := unix.Open(dest, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = unix.Close(dfd) }()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range poolWorkers {
		wg.Go(func() {
			for {
				d := int(next.Add(1)) - 1
				if d >= 200 {
					return
				}
				if err := writeFloorDir(dfd, fmt.Sprintf("pkg%03d", d), names, body); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	return took
}

// writeFloorDir makes the directory name under dfd and writes body to
// each of names in it.
func writeFloorDir(dfd int, name string, names []string, body []byte) error {
	if err := unix.Mkdirat(dfd, name, 0o755); err != nil {
		return err
	}
	sub, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(sub) }()
	for _, n := range names {
		fd, err := unix.Openat(sub, n, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		_, werr := unix.Write(fd, body)
		if err := unix.Close(fd); err != nil || werr != nil {
			return errors.Join(werr, err)
		}
	}
	return nil
}
