package export

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
// cost; to measure the extractor rather than the disk, run it with
// TMPDIR on a tmpfs.
func BenchmarkExtract20k(b *testing.B) {
	stream := tree20k(b)
	base := b.TempDir()
	b.SetBytes(int64(len(stream)))
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
		b.StartTimer()
		sum, err := Extract(bytes.NewReader(stream), dest, caps20k)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Members != 20200 {
			b.Fatalf("members = %d", sum.Members)
		}
		b.StopTimer()
		if err := os.RemoveAll(dest); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
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
