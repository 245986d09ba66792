//go:build docker

package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/export"
)

// ExportVolume exports a kept volume only into a pristine worktree: over
// content it fails without touching a file; into the worktree reduced to
// its .git file it brings the work back and removes the volume.
func TestLiveExportVolume(t *testing.T) {
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	cfg := liveConfig(slug, r)
	cfg.KeepVolume = true
	w := openLive(t, cfg)
	if _, err := w.EditFile(t.Context(), "a.txt", "a", "changed"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Bash(t.Context(), "rm b.txt && echo new > c.txt", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil || fin.ExportStatus != "ok" {
		t.Fatalf("finalize: %+v, %v", fin, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ve := VolumeExport{
		Slug: slug, Volume: w.names.WorkVolume, RepoRoot: r.root, Worktree: r.worktree, BaseCommit: r.base,
		RunDir: r.runDir, Image: liveImage, MaxPatchMB: 10, Limits: cfg.Limits,
	}
	// Over the exported content: refused, nothing touched.
	fin, err = ExportVolume(t.Context(), docker.ConnectEngine, ve)
	if err != nil || !strings.HasPrefix(fin.ExportStatus, "export_failed: worktree not empty: ") {
		t.Fatalf("export over content: %+v, %v", fin.ExportStatus, err)
	}
	if got, err := os.ReadFile(filepath.Join(r.worktree, "a.txt")); err != nil || string(got) != "changed\n" {
		t.Fatalf("a.txt after the refused export: %q, %v", got, err)
	}
	if err := export.Clear(r.worktree); err != nil {
		t.Fatal(err)
	}
	fin, err = ExportVolume(t.Context(), docker.ConnectEngine, ve)
	if err != nil || fin.ExportStatus != "ok" {
		t.Fatalf("export into the cleared worktree: %+v, %v", fin, err)
	}
	if strings.Join(fin.FilesChanged, ",") != "a.txt,b.txt,c.txt" {
		t.Errorf("files_changed %q", fin.FilesChanged)
	}
	for name, want := range map[string]string{"a.txt": "changed\n", "c.txt": "new\n"} {
		if got, err := os.ReadFile(filepath.Join(r.worktree, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(r.worktree, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt came back: %v", err)
	}
	if _, err := volumeLabels(t.Context(), w.eng, ve.Volume); err == nil {
		t.Error("the volume is still there after the export")
	}
	if _, err := ExportVolume(t.Context(), docker.ConnectEngine, ve); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("an export of the removed volume: %v", err)
	}
}
