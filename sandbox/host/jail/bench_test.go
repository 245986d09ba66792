package jail

import (
	"io"
	"testing"
)

// BenchmarkStart measures a run's jail start: from Start to the program
// running (its first output read), plus its end and cleanup. The program
// is /bin/true's equivalent in bash.
func BenchmarkStart(b *testing.B) {
	dir := b.TempDir()
	cfg := script("echo up")
	cfg.Mounts = []Mount{{Source: dir, Target: "/work"}}
	cfg.Dir = "/work"
	for b.Loop() {
		j, err := Start(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		_ = j.Stdin.Close()
		if _, err := io.ReadAll(j.Stdout); err != nil {
			b.Fatal(err)
		}
		_, _ = io.ReadAll(j.Stderr)
		if err := j.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProbe measures the preflight probe.
func BenchmarkProbe(b *testing.B) {
	for b.Loop() {
		if err := Probe(b.Context()).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
