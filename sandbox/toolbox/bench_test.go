package toolbox

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadFileRoundTrip measures one read_file call from the client
// through the server and back, over io.Pipe pairs (in-process) and over a
// real server process's stdin and stdout.
func BenchmarkReadFileRoundTrip(b *testing.B) {
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc A() int { return 1 }\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			c := tr.start(b, dir)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.ReadFile(b.Context(), "a.go", 0, 400); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
