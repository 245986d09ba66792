package export

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDiffTree20k diffs a 20,000-file tree in which three files
// changed: the cost is the walk and the size checks, not line diffs.
func BenchmarkDiffTree20k(b *testing.B) {
	dir := b.TempDir()
	body := bytes.Repeat([]byte("x\n"), 50)
	base := make([]BaseFile, 0, 20000)
	for d := range 200 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			name := fmt.Sprintf("file%03d.go", f)
			if err := os.WriteFile(filepath.Join(sub, name), body, 0o644); err != nil {
				b.Fatal(err)
			}
			base = append(base, BaseFile{Path: fmt.Sprintf("pkg%03d/%s", d, name), Mode: ModeFile, Blob: body})
		}
	}
	changed := append(bytes.Clone(body), "y\n"...)
	for _, p := range []string{"pkg000/file000.go", "pkg100/file050.go"} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), changed, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// Same size, different bytes: found only by the content comparison.
	if err := os.WriteFile(filepath.Join(dir, "pkg199", "file099.go"), bytes.Repeat([]byte("z\n"), 50), 0o644); err != nil {
		b.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	b.ResetTimer()
	for b.Loop() {
		var patch bytes.Buffer
		d, err := DiffTree(b.Context(), root, base, &patch, DiffOptions{MaxPatchMB: 64})
		if err != nil {
			b.Fatal(err)
		}
		if len(d.Files) != 3 {
			b.Fatalf("files = %q, want 3", d.Files)
		}
	}
}
