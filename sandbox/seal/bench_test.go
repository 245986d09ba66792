package seal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSeal20k seals a tree of 20,000 small tracked files in 2,000
// directories, none touched since the baseline: the walk, the judging and
// a digest of every file, which is what a run's finalize pays on such a
// tree before its export.
func BenchmarkSeal20k(b *testing.B) {
	dir := b.TempDir()
	base := Baseline{Tracked: map[string]uint32{}}
	content := make([]byte, 247)
	for i := range 20000 {
		rel := fmt.Sprintf("src/d%03d/f%05d.txt", i/10, i)
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if i%10 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			b.Fatal(err)
		}
		base.Tracked[rel] = 0o100644
	}
	since, err := Mark(dir)
	if err != nil {
		b.Fatal(err)
	}
	base.Since = since
	for b.Loop() {
		if _, m, err := Seal(b.Context(), dir, base, true); err != nil || m.Len() != 20000+2000+1 {
			b.Fatalf("seal: %v (%d paths)", err, m.Len())
		}
	}
}
