package runs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/transcript"
)

// exportFixture is a finished docker run's record, with a pristine
// worktree of a real repository, and the export substituted.
type exportFixture struct {
	slug, dir, worktree string
	calls               []workspace.VolumeExport
}

func newExportFixture(t *testing.T, fields transcript.Record, result sandbox.Finalization, exportErr error) *exportFixture {
	t.Helper()
	home := t.TempDir()
	t.Setenv("DIRTYWORK_HOME", home)
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	base := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
	f := &exportFixture{slug: "fix-the-thing-20261130-101010-abcd", worktree: filepath.Join(t.TempDir(), "wt")}
	if err := os.Mkdir(f.worktree, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.worktree, ".git"), []byte("gitdir: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := transcript.EnsureRunsRoot()
	if err != nil {
		t.Fatal(err)
	}
	if f.dir, err = transcript.CreateRunDir(root, f.slug); err != nil {
		t.Fatal(err)
	}
	rec := transcript.Record{
		"slug": f.slug, "status": "export_failed", "sandbox": "docker", "volume": "dw-" + f.slug + "-work",
		"worktree": f.worktree, "repo": repo, "base_commit": base, "image": "dirtywork-worker:dev",
		"export_status": "export_failed: archive exceeds 20 files",
	}
	for k, v := range fields {
		rec[k] = v
	}
	if err := transcript.WriteRecord(f.dir, rec); err != nil {
		t.Fatal(err)
	}
	old := exportVolume
	t.Cleanup(func() { exportVolume = old })
	exportVolume = func(_ context.Context, cfg workspace.VolumeExport) (sandbox.Finalization, error) {
		f.calls = append(f.calls, cfg)
		return result, exportErr
	}
	return f
}

func TestExportRunRefusals(t *testing.T) {
	cases := []struct {
		name   string
		fields transcript.Record
		setup  func(t *testing.T, f *exportFixture)
		want   string
	}{
		{"host run", transcript.Record{"sandbox": "none"}, nil, "not a docker-sandbox run"},
		{"no volume", transcript.Record{"volume": nil}, nil, "no volume recorded"},
		{"worktree gone", nil, func(t *testing.T, f *exportFixture) { _ = os.RemoveAll(f.worktree) }, "cannot be read"},
		{"worktree not empty", nil, func(t *testing.T, f *exportFixture) {
			if err := os.WriteFile(filepath.Join(f.worktree, "x"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not empty"},
		{"base file changed", nil, func(t *testing.T, f *exportFixture) {
			if err := os.WriteFile(filepath.Join(f.worktree, "a.txt"), []byte("edited\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "'a.txt' is not the base tree's"},
		{"base unreadable", transcript.Record{"base_commit": strings.Repeat("1", 40)}, nil, "cannot be read from"},
		{"still running", nil, func(t *testing.T, f *exportFixture) {
			lock, err := transcript.AcquireLiveness(f.dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = lock.Release() })
		}, "still running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newExportFixture(t, c.fields, sandbox.Finalization{ExportStatus: "ok"}, nil)
			if c.setup != nil {
				c.setup(t, f)
			}
			_, err := ExportRun(t.Context(), f.slug, ExportOptions{})
			var pe *Refusal
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, c.want) {
				t.Fatalf("ExportRun: %v, want a refusal saying %q", err, c.want)
			}
			if len(f.calls) != 0 {
				t.Errorf("the export was tried %d times", len(f.calls))
			}
		})
	}
	t.Run("unknown slug", func(t *testing.T) {
		newExportFixture(t, nil, sandbox.Finalization{}, nil)
		var pe *Refusal
		if _, err := ExportRun(t.Context(), "no-such-run", ExportOptions{}); !errors.As(err, &pe) {
			t.Fatalf("ExportRun: %v, want a refusal", err)
		}
	})
	t.Run("volume gone", func(t *testing.T) {
		f := newExportFixture(t, nil, sandbox.Finalization{}, workspace.ErrVolumeMissing)
		var pe *Refusal
		if _, err := ExportRun(t.Context(), f.slug, ExportOptions{}); !errors.As(err, &pe) || !strings.Contains(pe.Msg, "does not exist") {
			t.Fatalf("ExportRun: %v, want 'does not exist'", err)
		}
	})
}

func TestExportRunRecordsTheResult(t *testing.T) {
	patch := "/x/diff.patch"
	ok := sandbox.Finalization{
		ExportStatus: "ok", DiffStat: " a.txt | 2 +-", PatchPath: &patch, WorktreeBytes: 10, WorktreeFiles: 3,
		FilesChanged: []string{"a.txt"},
	}
	cases := []struct {
		name, prev string
		wantStatus transcript.Status
		fin        sandbox.Finalization
	}{
		{"export_failed becomes completed", "export_failed", "completed", ok},
		{"budget_exceeded stays", "budget_exceeded", "budget_exceeded", ok},
		{"a failure marks a completed run", "completed", "export_failed", sandbox.Finalization{ExportStatus: "export_failed: archive exceeds 5 files"}},
		{"a failure keeps other statuses", "max_turns", "max_turns", sandbox.Finalization{ExportStatus: "export_failed: x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newExportFixture(t, transcript.Record{"status": c.prev}, c.fin, nil)
			res, err := ExportRun(t.Context(), f.slug, ExportOptions{MaxWorktreeFiles: 7, KeepVolume: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != (c.fin.ExportStatus == "ok") || res.RunStatus != c.wantStatus {
				t.Errorf("result %+v, want status %s", res, c.wantStatus)
			}
			rec, err := transcript.ReadRecord(f.dir)
			if err != nil {
				t.Fatal(err)
			}
			if rec["status"] != string(c.wantStatus) || rec["export_status"] != c.fin.ExportStatus {
				t.Errorf("run.json status %v export_status %v", rec["status"], rec["export_status"])
			}
			if len(f.calls) != 1 {
				t.Fatalf("%d export calls", len(f.calls))
			}
			cfg := f.calls[0]
			if cfg.Limits.MaxEntries != 7 || cfg.Limits.MaxBytes != 2048<<20 || cfg.MaxPatchMB != 10 || !cfg.KeepVolume ||
				cfg.Worktree != f.worktree || cfg.RunDir != f.dir || cfg.Image != "dirtywork-worker:dev" {
				t.Errorf("export config %+v", cfg)
			}
		})
	}
}

// TestExportRunTakesABaseFilledLane: the lane of a run killed after (or
// while) its baseline filled it holds the base tree, which is nobody's
// work: the export is tried.
func TestExportRunTakesABaseFilledLane(t *testing.T) {
	f := newExportFixture(t, nil, sandbox.Finalization{ExportStatus: "ok"}, nil)
	if err := os.WriteFile(filepath.Join(f.worktree, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ExportRun(t.Context(), f.slug, ExportOptions{}); err != nil {
		t.Fatalf("ExportRun: %v", err)
	}
	if len(f.calls) != 1 {
		t.Fatalf("the export was tried %d times", len(f.calls))
	}
}
