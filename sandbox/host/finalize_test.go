package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFinalizeReportsChanges(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	ctx := t.Context()
	writeFile(t, filepath.Join(r.worktree, "tracked.txt"), "one\nchanged\n")
	writeFile(t, filepath.Join(r.worktree, "brand_new.txt"), "new\n")
	writeFile(t, filepath.Join(r.worktree, "newdir", "a.txt"), "a\n")
	writeFile(t, filepath.Join(r.worktree, "debug.log"), "ignored\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(r.worktree, "escaping")); err != nil {
		t.Fatal(err)
	}
	// Filters, textconv and hooks the worker might configure in the
	// repository must not run; a .gitattributes naming a filter is inert.
	writeFile(t, filepath.Join(r.worktree, ".gitattributes"), "*.txt filter=evil diff=evil\n")
	r.git(t, r.repo, "config", "filter.evil.clean", "touch "+filepath.Join(r.home, "filter-ran")+"; cat")
	r.git(t, r.repo, "config", "diff.evil.textconv", "touch "+filepath.Join(r.home, "textconv-ran")+"; cat")

	fin, err := w.Finalize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fin.DiffStat, "tracked.txt") || strings.Contains(fin.DiffStat, "failed") {
		t.Errorf("diff_stat = %q, want the tracked change", fin.DiffStat)
	}
	wantUntracked := []string{".gitattributes", "brand_new.txt", "escaping", "newdir/"}
	if got := strings.Split(fin.Untracked, "\n"); !slices.Equal(got, wantUntracked) {
		t.Errorf("untracked = %q, want %q", got, wantUntracked)
	}
	wantFiles := []string{".gitattributes", "brand_new.txt", "escaping", "newdir/a.txt", "tracked.txt"}
	if !slices.Equal(fin.FilesChanged, wantFiles) || fin.FilesChangedTruncated {
		t.Errorf("files_changed = %q (truncated %v), want %q", fin.FilesChanged, fin.FilesChangedTruncated, wantFiles)
	}
	if !slices.Equal(fin.EscapingSymlinks, []string{"escaping"}) {
		t.Errorf("escaping_symlinks = %q", fin.EscapingSymlinks)
	}
	if fin.WorktreeFiles < 8 || fin.WorktreeBytes <= 0 {
		t.Errorf("worktree_files %d, worktree_bytes %d", fin.WorktreeFiles, fin.WorktreeBytes)
	}
	if fin.ExportStatus != "n/a" || fin.PatchPath != nil || fin.DroppedGitEntries == nil || len(fin.DroppedGitEntries) != 0 {
		t.Errorf("host constants: %+v", fin)
	}
	for _, f := range []string{"filter-ran", "textconv-ran"} {
		if exists(filepath.Join(r.home, f)) {
			t.Errorf("finalize ran the repository's %s command", f)
		}
	}
}

func TestFinalizeSeesCommitsAndCapsFiles(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	writeFile(t, filepath.Join(r.worktree, "committed.txt"), "c\n")
	r.git(t, r.worktree, "add", "committed.txt")
	r.git(t, r.worktree, "commit", "-q", "-m", "c")
	for i := range maxFilesChanged + 1 {
		writeFile(t, filepath.Join(r.worktree, "many", fmt.Sprintf("f%04d.txt", i)), "x")
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fin.DiffStat, "committed.txt") {
		t.Errorf("diff_stat misses the committed file: %q", fin.DiffStat)
	}
	if len(fin.FilesChanged) != maxFilesChanged || !fin.FilesChangedTruncated || fin.FilesChanged[0] != "committed.txt" {
		t.Errorf("files_changed: %d entries, truncated %v, first %q", len(fin.FilesChanged), fin.FilesChangedTruncated, fin.FilesChanged[0])
	}
	if !slices.IsSorted(fin.FilesChanged) {
		t.Error("files_changed is not sorted")
	}
}

func TestFinalizeBadBaseIsANote(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	cfg.BaseCommit = "0000000000000000000000000000000000000000"
	w := open(t, cfg)
	fin, err := w.Finalize(t.Context())
	if !strings.HasPrefix(fin.DiffStat, "[diff --stat failed: ") {
		t.Errorf("diff_stat = %q, want the failure note", fin.DiffStat)
	}
	if err == nil {
		t.Error("files_changed against a bad base did not fail")
	}
}

func TestCapChars(t *testing.T) {
	s := strings.Repeat("é", maxReportChars)
	if capChars(s) != s {
		t.Error("a report at the cap was cut")
	}
	got := capChars(s + "xyz")
	want := s + "\n[truncated at 64000 chars]"
	if got != want {
		t.Errorf("cut report ends %q", got[len(got)-40:])
	}
}

func TestUntrackedPaths(t *testing.T) {
	out := []byte("?? a b.txt\x00R  new\x00old\x00 M m.txt\x00?? dir/\x00")
	if got := untrackedPaths(out); !slices.Equal(got, []string{"a b.txt", "dir/"}) {
		t.Errorf("got %q", got)
	}
}

func TestFinalizeRefusesATamperedGitDir(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	// bash may write the worktree's git dir: point it at a repository of
	// its own making.
	if out, code := bash(t, w, "git init -q fake && printf '%s\\n' \"$PWD/fake/.git\" > "+filepath.Join(r.admin, "commondir")); code != 0 {
		t.Fatalf("tamper: exit %d: %s", code, out)
	}
	if _, err := w.Finalize(t.Context()); !errors.Is(err, ErrTampered) {
		t.Fatalf("Finalize: %v, want ErrTampered", err)
	}
}
