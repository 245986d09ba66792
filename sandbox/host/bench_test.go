package host

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkBashTrue is one bash call through the tool server in the jail
// (the stand-in where no jail can be had): the harness's cost of a command.
func BenchmarkBashTrue(b *testing.B) {
	w := open(b, newTestRepo(b).config())
	b.ResetTimer()
	for b.Loop() {
		res, err := w.Bash(b.Context(), "true", 30*time.Second)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkFileTools is a read_file, an edit_file and a list_dir through
// the tool server.
func BenchmarkFileTools(b *testing.B) {
	w := open(b, newTestRepo(b).config())
	ctx := b.Context()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := w.ReadFile(ctx, "tracked.txt", 0, 100); err != nil {
			b.Fatal(err)
		}
		if _, err := w.WriteFile(ctx, "bench.txt", fmt.Sprintf("line %d\n", i)); err != nil {
			b.Fatal(err)
		}
		if _, err := w.ListDir(ctx, "."); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkOpenToReady is Open until the first tool call can be answered:
// the jail started, the worker's repository made, the tree checked out.
// Open itself returns before any of it (see BenchmarkOpen).
func BenchmarkOpenToReady(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		r := newTestRepo(b)
		b.StartTimer()
		w, err := Open(b.Context(), r.config())
		if err != nil {
			b.Fatal(err)
		}
		w.Begin()
		if _, err := w.client(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = w.Close()
		b.StartTimer()
	}
}

// BenchmarkOpen is Open alone: what the first model request waits for.
func BenchmarkOpen(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		r := newTestRepo(b)
		b.StartTimer()
		w, err := Open(b.Context(), r.config())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = w.Close()
		b.StartTimer()
	}
}
