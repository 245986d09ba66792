//go:build linux

package jail

import (
	"io"
	"testing"
	"time"
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

// BenchmarkToolServerStart measures a run's start in host mode as far as
// the jail goes: the jail built, the tool server started in it and
// greeted, then ended.
func BenchmarkToolServerStart(b *testing.B) {
	work := b.TempDir()
	for b.Loop() {
		s := startToolServer(b, b.Context(), work)
		s.stop()
	}
}

// BenchmarkToolServerBashTrue measures one bash call through the tool
// server in the jail: the jail adds nothing per command (the server forks
// it inside).
func BenchmarkToolServerBashTrue(b *testing.B) {
	s := startToolServer(b, b.Context(), b.TempDir())
	defer s.stop()
	for b.Loop() {
		res, err := s.cl.Bash(b.Context(), "true", 10*time.Second)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
	}
}
