package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/volstore"
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
	// Config. The worktree must hold only its .git file.
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
func ExportVolume(ctx context.Context, connect Connect, cfg VolumeExport) (sandbox.Finalization, error) {
	fin := newFinalization()
	w, img, err := volumeWorkspace(ctx, connect, cfg)
	if err != nil {
		return fin, err
	}
	eng := w.eng
	defer func() { _ = eng.Close() }() // idle connections only
	l, err := limitsOf(w.cfg)
	if err != nil {
		return fin, err
	}
	spec := exportSpec(w.names, img.ID, w.labels, l)
	id, err := eng.CreateContainer(ctx, w.names.Container, spec)
	if err != nil {
		fin.ExportStatus = "export_failed: docker create " + w.names.Container + " failed: " + err.Error()
		return fin, nil
	}
	err = w.exportWithStatus(ctx, &fin)
	cctx, cancel := cleanupContext()
	defer cancel()
	_ = eng.RemoveContainer(cctx, id) // labelled: `runs clean` finds a leftover
	if err != nil || fin.ExportStatus != "ok" {
		return fin, err
	}
	if !cfg.KeepVolume {
		// A run that was killed leaves its worker container (stopped,
		// holding the volume) and its tools volume: the run is over, so
		// they go, if they are this run's.
		w.removeLeftoverWorker(cctx, cfg.Slug)
		if err := removeVolume(cctx, eng, cfg.Volume); err != nil {
			return fin, fmt.Errorf("exported, but the volume stays: %w", err)
		}
	}
	return fin, nil
}

// volumeWorkspace is the workspace an export or a salvage of cfg's kept
// volume works through, once the volume is known to be the run's, the
// image is there and the volume can be mounted; the caller closes its
// client.
func volumeWorkspace(ctx context.Context, connect Connect, cfg VolumeExport) (*Workspace, daemon.Image, error) {
	names, err := namesFor(cfg.Slug)
	if err != nil {
		return nil, daemon.Image{}, err
	}
	names.Container += "-export"
	cl, err := connect()
	if err != nil {
		return nil, daemon.Image{}, err
	}
	fail := func(err error) (*Workspace, daemon.Image, error) {
		_ = cl.Close() // idle connections only
		return nil, daemon.Image{}, err
	}
	labels, err := volumeLabels(ctx, cl, cfg.Volume)
	switch {
	case errors.Is(err, daemon.ErrNotFound):
		return fail(fmt.Errorf("%w: %s", ErrVolumeMissing, cfg.Volume))
	case err != nil:
		return fail(err)
	case labels[daemon.LabelRun] != cfg.Slug:
		return fail(fmt.Errorf("%w: %s is labelled %s=%q", ErrVolumeForeign, cfg.Volume, daemon.LabelRun, labels[daemon.LabelRun]))
	}
	img, err := cl.InspectImage(ctx, cfg.Image)
	if err != nil {
		return fail(imageError(cfg.Image, err))
	}
	if err := volstore.Ensure(cfg.Volume); err != nil {
		return fail(err)
	}
	names.WorkVolume = cfg.Volume
	return &Workspace{
		cfg: Config{
			Slug: cfg.Slug, RepoRoot: cfg.RepoRoot, Worktree: cfg.Worktree, BaseCommit: cfg.BaseCommit,
			RunDir: cfg.RunDir, Image: cfg.Image, MaxPatchMB: cfg.MaxPatchMB, Limits: cfg.Limits,
		},
		eng: cl, git: gitops.New(), names: names, labels: labelsFor(cfg.Slug, cfg.RepoRoot),
	}, img, nil
}

// VolumeSalvage is what SalvageVolume wrote into the lane, and what it
// could not.
type VolumeSalvage struct {
	// Entries and Bytes are what the lane received (worktree_files and
	// worktree_bytes' sense).
	Entries, Bytes int64
	// LeftOut are the members the export refused that were not written,
	// and why (at most 1000); LeftOutCount counts them all.
	LeftOut      []export.LeftOut
	LeftOutCount int
	// Dropped are the .git entries left out and the repositories (and
	// hard links to their files) moved to <RunDir>/quarantine; Skipped
	// the FIFOs and devices left out.
	Dropped, Skipped []string
}

// SalvageVolume writes into the run's lane what can be written of a kept
// work volume whose tree the export refuses as a whole, for `runs clean
// --force` to park before it removes the volume: every member the export
// would write on its own (export.Salvage), .git entries and repositories
// left out or moved to the quarantine as the export does, and the members
// that made the export refuse listed instead. The lane must hold its .git
// file and at most the base tree (which goes first). The volume stays.
// The error is for what stopped it (no daemon, a volume of another run, a
// lane holding work, a stream that broke); the lane holds only its .git
// file again then.
func SalvageVolume(ctx context.Context, connect Connect, cfg VolumeExport) (VolumeSalvage, error) {
	var out VolumeSalvage
	w, img, err := volumeWorkspace(ctx, connect, cfg)
	if err != nil {
		return out, err
	}
	defer func() { _ = w.eng.Close() }() // idle connections only
	base, err := baseTree(ctx, w.git, cfg.RepoRoot, cfg.BaseCommit)
	if err != nil {
		return out, err
	}
	switch state, err := export.CheckLane(cfg.Worktree, base); {
	case err != nil:
		return out, fmt.Errorf("salvage into %s: %w", cfg.Worktree, err)
	case state != export.LaneEmpty:
		if err := export.Clear(cfg.Worktree); err != nil {
			return out, err
		}
	}
	l, err := limitsOf(w.cfg)
	if err != nil {
		return out, err
	}
	id, err := w.eng.CreateContainer(ctx, w.names.Container, exportSpec(w.names, img.ID, w.labels, l))
	if err != nil {
		return out, err
	}
	defer func() {
		// The budget starts now, not before a stream that may take minutes.
		cctx, cancel := cleanupContext()
		defer cancel()
		_ = w.eng.RemoveContainer(cctx, id) // labelled: `runs clean` finds a leftover
	}()
	caps := export.Caps{MaxFiles: cfg.Limits.MaxEntries, MaxBytes: cfg.Limits.MaxBytes}
	pr, pw := io.Pipe()
	type salvaged struct {
		sum export.Summary
		sv  export.Salvaged
		err error
	}
	done := make(chan salvaged, 1)
	go func() {
		var s salvaged
		s.sum, s.sv, s.err = export.Salvage(pr, cfg.Worktree, caps)
		_ = pr.CloseWithError(errExtractStopped)
		done <- s
	}()
	var dropped []string
	dlErr := w.eng.Download(ctx, id, workDir, func(r io.Reader) error { return rebaseArchive(r, pw, &dropped) })
	if dlErr != nil {
		_ = pw.CloseWithError(dlErr)
	} else {
		_ = pw.Close()
	}
	s := <-done
	if err := errors.Join(dlErr, s.err); err != nil {
		_ = export.Clear(cfg.Worktree)
		return out, fmt.Errorf("salvage %s: %w", cfg.Volume, err)
	}
	moved, reason := w.quarantine(s.sum, base, nil, false)
	if reason != "" {
		_ = export.Clear(cfg.Worktree)
		return out, fmt.Errorf("salvage %s: %s", cfg.Volume, reason)
	}
	return VolumeSalvage{
		Entries: s.sum.Members, Bytes: s.sum.Bytes, LeftOut: s.sv.LeftOut, LeftOutCount: s.sv.LeftOutCount,
		Dropped: append(dropped, moved...), Skipped: s.sum.SkippedSpecial,
	}, nil
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
		if info, err := w.eng.InspectContainer(ctx, name); err == nil && info.Labels[daemon.LabelRun] == slug {
			_ = w.eng.RemoveContainer(ctx, info.ID) // the volume's removal says if it stays in use
		}
	}
	if labels, err := volumeLabels(ctx, w.eng, names.ToolsVolume); err == nil && labels[daemon.LabelRun] == slug {
		_ = removeVolume(ctx, w.eng, names.ToolsVolume)
	}
}

// exportSpec is the export container: the worker's lockdown, never any
// network, the work volume read-only and nothing else mounted; it is only
// created, never started, so its command never runs.
func exportSpec(n objectNames, imageID string, labels map[string]string, l limits) daemon.ContainerSpec {
	s := workerSpec(n, imageID, labels, l, false)
	s.Entrypoint = []string{"/bin/true"}
	s.Cmd = nil
	s.Stdin = false
	s.Mounts = []daemon.Mount{{Volume: n.WorkVolume, Target: workDir, ReadOnly: true}}
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
