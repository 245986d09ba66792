package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/sandbox/seal"
	"github.com/dirtywork/dirtywork/transcript"
)

// ExportOptions are `dirtywork runs export`'s settings; zero values
// take the defaults.
type ExportOptions struct {
	MaxPatchMB       int
	MaxWorktreeMB    int
	MaxWorktreeFiles int
	KeepVolume       bool
	// DefaultImage makes the export container when run.json names no
	// image.
	DefaultImage string
	// RunsRoot is the runs root the slug is looked up in; "" is the
	// environment's (a runs store over another root passes its own).
	RunsRoot string
}

// ExportResult is what an export that was tried did.
type ExportResult struct {
	Slug, Worktree string
	// OK is true for export_status ok; Status is export_status itself.
	OK     bool
	Status string
	// RunStatus is run.json's status afterwards.
	RunStatus transcript.Status
	Fin       sandbox.Finalization
}

// exportVolume is the docker export, through the environment's daemon;
// tests substitute it to reach every path without a daemon.
var exportVolume = func(ctx context.Context, cfg workspace.VolumeExport) (sandbox.Finalization, error) {
	return workspace.ExportVolume(ctx, docker.ConnectEngine, cfg)
}

// checkExportLane refuses a worktree holding anyone's work; a variable
// for the same reason.
var checkExportLane = workspace.CheckExportLane

// ExportRun exports the kept work volume of the docker run slug into its
// lane, and records the result in its run.json. Whatever
// refuses the export before it is tried is a *Refusal (exit 2), in
// the contract's order: an unknown slug, a run that is not a docker run,
// one still running, no volume recorded, a worktree that is gone,
// unreadable or not pristine (anything but its .git file), a daemon that
// cannot be asked, a volume that does not exist, an unreadable base
// commit, an image that is not there.
func ExportRun(ctx context.Context, slug string, opts ExportOptions) (*ExportResult, error) {
	cfg, dir, err := volumeExportOf(ctx, slug, opts)
	if err != nil {
		return nil, err
	}
	fin, err := exportVolume(ctx, cfg)
	if err != nil {
		if errors.Is(err, workspace.ErrVolumeMissing) {
			msg := fmt.Sprintf("volume %s of '%s' does not exist", cfg.Volume, slug)
			return nil, &Refusal{Msg: msg, Err: errors.New(msg)}
		}
		return nil, &Refusal{Msg: err.Error(), Hint: exportHint(err), Err: err}
	}
	if fin.ExportStatus == "ok" {
		// The volume's tree reached the lane by a download after the run
		// died, without the seal its finalize would have made: the
		// worker's git-ignored files are taken out of the lane and
		// listed here instead. Their times were rewritten by the export,
		// so every ignored file counts as the run's, the setup's too.
		if b, err := BaseSealBaseline(ctx, cfg.RepoRoot, cfg.BaseCommit); err == nil {
			b.Untimed = true
			report, _, serr := seal.Seal(ctx, cfg.Worktree, b, true)
			if serr != nil {
				fin.ExportStatus = "export_failed: seal the exported tree: " + serr.Error()
			}
			seal.Evidence(&fin, report)
		} else {
			fin.ExportStatus = "export_failed: " + err.Error()
		}
	}
	res := &ExportResult{Slug: slug, Worktree: cfg.Worktree, Status: fin.ExportStatus, OK: fin.ExportStatus == "ok", Fin: fin}
	updated, err := transcript.UpdateRun(dir, func(r transcript.RunRecord) ([]any, error) {
		fields := []any{transcript.ExportFieldsOf(&fin)}
		switch prev := r.Status; {
		case res.OK && (prev == "" || prev == transcript.StatusRunning || prev == transcript.StatusExportFailed):
			fields = append(fields, transcript.StatusFields{Status: transcript.StatusCompleted})
		case !res.OK && (prev == "" || prev == transcript.StatusRunning || prev == transcript.StatusCompleted):
			fields = append(fields, transcript.StatusFields{Status: transcript.StatusExportFailed})
		}
		return fields, nil
	})
	if err != nil {
		return res, fmt.Errorf("exported, but run.json of '%s' was not updated: %w", slug, err)
	}
	res.RunStatus = updated.Status
	return res, nil
}

// salvageVolume is the docker salvage, through the environment's daemon;
// tests substitute it.
var salvageVolume = func(ctx context.Context, cfg workspace.VolumeExport) (workspace.VolumeSalvage, error) {
	return workspace.SalvageVolume(ctx, docker.ConnectEngine, cfg)
}

// SalvageRun writes into the lane of the docker run slug what can be
// written of its kept work volume when the export refuses the tree as a
// whole (workspace.SalvageVolume), for the cleanup that parks it before the
// volume goes. It refuses what ExportRun refuses, and records nothing in
// run.json: the run's export did not succeed.
func SalvageRun(ctx context.Context, slug string, opts ExportOptions) (workspace.VolumeSalvage, error) {
	cfg, _, err := volumeExportOf(ctx, slug, opts)
	if err != nil {
		return workspace.VolumeSalvage{}, err
	}
	return salvageVolume(ctx, cfg)
}

// volumeExportOf is what exporting slug's volume takes, once every
// refusal before the export itself (ExportRun's) is passed, and the run
// dir.
func volumeExportOf(ctx context.Context, slug string, opts ExportOptions) (workspace.VolumeExport, string, error) {
	refuse := func(format string, args ...any) (workspace.VolumeExport, string, error) {
		msg := fmt.Sprintf(format, args...)
		return workspace.VolumeExport{}, "", &Refusal{Msg: msg, Err: errors.New(msg)}
	}
	if err := transcript.ValidSlug(slug); err != nil {
		return refuse("%v", err)
	}
	root, err := opts.RunsRoot, error(nil)
	if root == "" {
		root, err = transcript.RunsRoot()
	}
	if err != nil {
		return refuse("%v", err)
	}
	run, err := Open(root).Find(slug)
	if err != nil {
		return refuse("%v", err)
	}
	if run.Err != nil {
		return refuse("read run.json of '%s': %v", slug, run.Err)
	}
	dir, rec := run.Dir, run.Record
	if rec.Sandbox != "docker" {
		return refuse("'%s' is not a docker-sandbox run", slug)
	}
	switch alive, err := transcript.IsAlive(dir); {
	case err != nil:
		return refuse("cannot tell whether '%s' still runs: %v", slug, err)
	case alive || runAlive(dir, &rec):
		return refuse("'%s' is still running", slug)
	}
	volume, worktree := Str(rec.Volume), rec.Worktree
	if volume == "" {
		return refuse("'%s' has no volume recorded", slug)
	}
	if reason := pristine(worktree); reason != "" {
		return refuse("worktree of '%s' %s", slug, reason)
	}
	repoRoot, base := rec.Repo, rec.BaseCommit
	if _, err := gitops.New().Run(ctx, gitops.Call{Dir: repoRoot, Args: []string{"cat-file", "-e", base + "^{commit}"}}); err != nil {
		return refuse("the base commit %s of '%s' cannot be read from %s: %v", base, slug, repoRoot, err)
	}
	if err := checkExportLane(ctx, repoRoot, base, worktree); err != nil {
		return refuse("worktree of '%s' %s: %v (an export writes only into a worktree holding its .git file and at most the base tree)", slug, worktree, err)
	}
	image := Str(rec.Image)
	if image == "" {
		image = opts.DefaultImage
	}
	cfg := workspace.VolumeExport{
		Slug: slug, Volume: volume, RepoRoot: repoRoot, Worktree: worktree, BaseCommit: base, RunDir: dir,
		Image: image, MaxPatchMB: opts.MaxPatchMB, KeepVolume: opts.KeepVolume,
		Limits: sandbox.Limits{MaxBytes: int64(defaulted(opts.MaxWorktreeMB, 2048)) << 20, MaxEntries: int64(defaulted(opts.MaxWorktreeFiles, 200000))},
	}
	if cfg.MaxPatchMB <= 0 {
		cfg.MaxPatchMB = 10
	}
	return cfg, dir, nil
}

// pristine says what is wrong with a worktree an export would write into
// ("" when it is a readable directory; what it holds is checked against
// the base tree later, checkExportLane).
func pristine(worktree string) string {
	if worktree == "" || !filepath.IsAbs(worktree) {
		return "is not recorded"
	}
	fi, err := os.Lstat(worktree)
	switch {
	case err != nil:
		return fmt.Sprintf("%s cannot be read: %v", worktree, err)
	case !fi.IsDir():
		return worktree + " is not a directory"
	}
	d, err := os.Open(worktree)
	if err != nil {
		return fmt.Sprintf("%s cannot be read: %v", worktree, err)
	}
	defer func() { _ = d.Close() }() // read-only
	if _, err := d.Readdirnames(1); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("%s cannot be read: %v", worktree, err)
	}
	return ""
}

// defaulted is v, or def when v is not positive.
func defaulted(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// exportHint is the fix an export the docker sandbox refused names.
func exportHint(err error) string {
	switch {
	case errors.Is(err, docker.ErrDaemonUnreachable), errors.Is(err, docker.ErrTimedOut):
		return "start the Docker daemon (or point DOCKER_HOST at one that runs)"
	case errors.Is(err, workspace.ErrLowDiskSpace):
		return "free disk space for docker"
	case errors.Is(err, workspace.ErrNoToolbox):
		return "export with a dirtywork that carries the Linux tool servers (task build:carry)"
	}
	return "fix the docker setup named above"
}
