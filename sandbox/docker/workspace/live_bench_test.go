//go:build docker

package workspace

import (
	"fmt"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/docker"
)

// BenchmarkLiveOpenClose is a whole sandbox's life on a 200-file tree:
// open, the first tool call (which waits for the checkout), finalize (stop,
// export, diff) and close. The toolbox volume is made by a first run
// before the clock starts, as every run but a build's first finds it.
//
//	DIRTYWORK_REQUIRE_DOCKER=1 go test -tags docker -run '^$' -bench OpenClose -benchtime 5x ./sandbox/docker/
func BenchmarkLiveOpenClose(b *testing.B) {
	liveClient(b)
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("pkg%d/file%d.go", i%10, i)] = fmt.Sprintf("package pkg%d\n\nconst N%d = %d\n", i%10, i, i)
	}
	once := func(b *testing.B, timed bool) {
		if timed {
			b.StopTimer()
		}
		slug := newSlug(b)
		cfg := liveConfig(slug, newTestRepo(b, slug, files))
		cfg.DetachRemoval = true
		if timed {
			b.StartTimer()
		}
		w, err := Open(b.Context(), docker.ConnectEngine, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.ReadFile(b.Context(), "pkg0/file0.go", 0, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := w.WriteFile(b.Context(), "pkg0/new.go", "package pkg0\n"); err != nil {
			b.Fatal(err)
		}
		if fin, err := w.Finalize(b.Context()); err != nil || fin.ExportStatus != "ok" {
			b.Fatalf("finalize: %q, %v", fin.ExportStatus, err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	once(b, false)
	b.ResetTimer()
	for range b.N {
		once(b, true)
	}
}
