package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/docker/docker/api/types/mount"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/export"
)

// ErrVolumeMissing is a run whose work volume no longer exists.
var ErrVolumeMissing = errors.New("volume does not exist")

// ErrVolumeForeign is a volume that carries another run's label: it is
// never read or removed for this one.
var ErrVolumeForeign = errors.New("volume belongs to another run")

// VolumeExport is what exporting a finished run's kept work volume into
// its lane needs (`dirtywork runs export`).
type VolumeExport struct {
	// Slug is the run's; Volume the work volume it recorded.
	Slug, Volume string
	// RepoRoot, Worktree, BaseCommit and RunDir are the run's, as for a
	// WorkspaceConfig. The worktree must hold only its .git file.
	RepoRoot, Worktree, BaseCommit, RunDir string
	// Image makes the export container (it never starts).
	Image      string
	MaxPatchMB int
	Limits     sandbox.Limits
	// KeepVolume keeps the volume after a successful export too.
	KeepVolume bool
}

// ExportVolume exports a kept work volume into the run's lane, as Finalize
// would have: a container that never starts (no network, read-only root,
// no capability, the volume mounted read-only at /work) is created only so
// that the daemon can read the tree through the Engine API; the tree is
// validated and written into the lane, diffed against the base commit in
// Go into <RunDir>/diff.patch, and the lane's index rebuilt. The container
// is removed afterwards, and the volume too when the export succeeded,
// unless KeepVolume. A failed export is an ExportStatus of
// "export_failed: <reason>" with a nil error and the volume kept; the
// error is for what stopped it from being tried: no daemon, no such
// volume (ErrVolumeMissing), a volume of another run, a missing image.
func ExportVolume(ctx context.Context, cfg VolumeExport) (sandbox.Finalization, error) {
	fin := newFinalization()
	names, err := namesFor(cfg.Slug)
	if err != nil {
		return fin, err
	}
	names.Container += "-export"
	cl, err := Connect()
	if err != nil {
		return fin, err
	}
	defer func() { _ = cl.Close() }() // idle connections only
	labels, err := cl.volumeLabels(ctx, cfg.Volume)
	switch {
	case errors.Is(err, ErrNotFound):
		return fin, fmt.Errorf("%w: %s", ErrVolumeMissing, cfg.Volume)
	case err != nil:
		return fin, err
	case labels[labelRun] != cfg.Slug:
		return fin, fmt.Errorf("%w: %s is labelled %s=%q", ErrVolumeForeign, cfg.Volume, labelRun, labels[labelRun])
	}
	img, err := cl.inspectImage(ctx, cfg.Image)
	if err != nil {
		return fin, imageError(cfg.Image, err)
	}
	names.WorkVolume = cfg.Volume
	w := &Workspace{
		cfg: WorkspaceConfig{
			Slug: cfg.Slug, RepoRoot: cfg.RepoRoot, Worktree: cfg.Worktree, BaseCommit: cfg.BaseCommit,
			RunDir: cfg.RunDir, Image: cfg.Image, MaxPatchMB: cfg.MaxPatchMB, Limits: cfg.Limits,
		},
		cl: cl, git: gitops.New(), names: names, labels: labelsFor(cfg.Slug, cfg.RepoRoot),
	}
	l, err := limitsOf(w.cfg)
	if err != nil {
		return fin, err
	}
	spec := exportSpec(names, img.id, w.labels, l)
	id, err := cl.createContainer(ctx, names.Container, spec)
	if err != nil {
		fin.ExportStatus = "export_failed: docker create " + names.Container + " failed: " + err.Error()
		return fin, nil
	}
	err = w.exportWithStatus(ctx, &fin)
	cctx, cancel := cleanupContext()
	defer cancel()
	_ = cl.removeContainer(cctx, id) // labelled: `runs clean` finds a leftover
	if err != nil || fin.ExportStatus != "ok" {
		return fin, err
	}
	if !cfg.KeepVolume {
		// A run that was killed leaves its worker container (stopped,
		// holding the volume) and its tools volume: the run is over, so
		// they go, if they are this run's.
		w.removeLeftoverWorker(cctx, cfg.Slug)
		if err := cl.removeVolume(cctx, cfg.Volume); err != nil {
			return fin, fmt.Errorf("exported, but the volume stays: %w", err)
		}
	}
	return fin, nil
}

// removeLeftoverWorker removes the worker and measuring containers and
// the tools volume a killed run left, each only when it carries the
// run's label.
func (w *Workspace) removeLeftoverWorker(ctx context.Context, slug string) {
	names, err := namesFor(slug)
	if err != nil {
		return
	}
	for _, name := range []string{names.Container, names.Measurer} {
		if info, err := w.cl.inspectContainer(ctx, name); err == nil && info.Config != nil && info.Config.Labels[labelRun] == slug {
			_ = w.cl.removeContainer(ctx, info.ID) // the volume's removal says if it stays in use
		}
	}
	if labels, err := w.cl.volumeLabels(ctx, names.ToolsVolume); err == nil && labels[labelRun] == slug {
		_ = w.cl.removeVolume(ctx, names.ToolsVolume)
	}
}

// exportSpec is the export container: the worker's lockdown, never any
// network, the work volume read-only and nothing else mounted; it is only
// created, never started, so its command never runs.
func exportSpec(n objectNames, imageID string, labels map[string]string, l limits) containerSpec {
	s := workerSpec(n, imageID, labels, l, false)
	s.Config.Entrypoint = []string{"/bin/true"}
	s.Config.Cmd = nil
	s.Config.OpenStdin, s.Config.StdinOnce, s.Config.AttachStdin = false, false, false
	s.Host.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: n.WorkVolume, Target: workDir, ReadOnly: true}}
	return s
}

// CheckExportLane refuses a worktree ExportVolume would not write into:
// one holding anything but its .git file and entries of the base tree
// equal to base's (the baseline of a run killed later, or while it ran,
// leaves those). The error names the first path that is someone's work.
func CheckExportLane(ctx context.Context, repoRoot, baseCommit, worktree string) error {
	base, err := baseTree(ctx, gitops.New(), repoRoot, baseCommit)
	if err != nil {
		return err
	}
	_, err = export.CheckLane(worktree, base)
	return err
}
