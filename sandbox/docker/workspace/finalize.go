package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/sandbox/seal"
)

// Caps of the export when the config gives none (S-1's defaults): an
// export is never unbounded.
const (
	defaultMaxExportBytes = 2048 << 20
	defaultMaxExportFiles = 200000
	defaultMaxPatchMB     = 10
)

// Finalize stops the container (the tool server shuts down, then the
// container is killed, so no worker process is left), then exports the
// tree: the stopped container's /work is downloaded through the Engine
// API and validated and written into the host lane by export.Extract
// (.git entries left out and listed), the diff against the base is
// computed in Go from the host repository's base blobs (no git runs on
// worker content, and the tree's .gitattributes changes nothing) into
// <RunDir>/diff.patch, and the lane's index is rebuilt from the base tree
// with host git. A failed export is export_status "export_failed: <reason>"
// with a nil error, and the volume is kept; a watchdog violation is
// reported, and never prevents the export.
func (w *Workspace) Finalize(ctx context.Context) (sandbox.Finalization, error) {
	fin := newFinalization()
	// The tree must be whole before it is exported (and the measurer
	// known, so it is stopped with the worker).
	if err := w.waitMeasured(ctx); err != nil {
		return fin, err
	}
	w.mu.Lock()
	if w.finalized || w.closed {
		w.mu.Unlock()
		return fin, &sandbox.SandboxError{Op: "finalize", Err: errStopped}
	}
	w.finalized = true
	s := w.sess
	w.mu.Unlock()
	if s != nil {
		// The last command's walk may have found a breach: take its
		// verdict while the server still runs (a breach is recorded as
		// the violation reported below).
		_, _ = w.settleBudget(ctx, s)
		// The daemon reads the tree by full path, so it cannot export
		// what lies past PATH_MAX; the server, which walks by directory,
		// says what that is (a server gone or lying costs only this list).
		if m, err := s.tb.Budget(ctx); err == nil {
			w.longPaths = m.LongPaths // the last walk's: no walk more
		}
		// The tree is sealed before it is taken: what the export would
		// drop, and the worker's ignored files, go first, and the hash
		// names what the export takes. A seal that fails leaves the hash
		// empty (so no verify can claim the tree) and the export goes on:
		// the work is never lost for it.
		if reply, err := w.sealWith(ctx, s); err == nil {
			fin.TreeHash = reply.Hash
		} else {
			w.cfg.trace("seal failed: " + err.Error())
		}
	}
	if w.wd != nil {
		w.wd.stop()
	}
	w.stopContainer()
	w.stopEgress()
	fin.Egress = w.egressSummary()
	w.cfg.trace("stopped")
	if v := w.currentViolation(); v != nil {
		reason, kind := v.Reason, v.Kind
		fin.WatchdogViolation, fin.WatchdogViolationKind = &reason, &kind
	}
	err := w.exportWithStatus(ctx, &fin)
	w.mu.Lock()
	sealed := w.sealed
	w.mu.Unlock()
	seal.Evidence(&fin, sealed)
	if err != nil || fin.ExportStatus != "ok" {
		return fin, err
	}
	w.mu.Lock()
	w.exportOK = true
	w.mu.Unlock()
	return fin, nil
}

// newFinalization is a Finalization with every list empty, not null.
func newFinalization() sandbox.Finalization {
	return sandbox.Finalization{
		FilesChanged: []string{}, EscapingSymlinks: []string{}, DroppedGitEntries: []string{}, SkippedSpecialEntries: []string{},
		UnexportedEntries: []string{},
	}
}

// QuarantineDir is where, under a run's dir, the export moves the
// directories of the tree that git would take for a repository.
const QuarantineDir = "quarantine"

// exportWithStatus exports (see export) and sets fin.ExportStatus: "ok",
// or "export_failed: <reason>". The error is only a cancelled context's.
func (w *Workspace) exportWithStatus(ctx context.Context, fin *sandbox.Finalization) error {
	reason, err := w.export(ctx, fin)
	switch {
	case err != nil:
		return err
	case reason != "":
		fin.ExportStatus = "export_failed: " + reason
	default:
		fin.ExportStatus = "ok"
	}
	return nil
}

// export fills fin from the stopped container's tree; reason is why the
// export failed ("" when it did not). The error is only a cancelled
// context's.
func (w *Workspace) export(ctx context.Context, fin *sandbox.Finalization) (string, error) {
	caps := export.Caps{MaxFiles: w.cfg.Limits.MaxEntries, MaxBytes: w.cfg.Limits.MaxBytes}
	if caps.MaxFiles <= 0 {
		caps.MaxFiles = defaultMaxExportFiles
	}
	if caps.MaxBytes <= 0 {
		caps.MaxBytes = defaultMaxExportBytes
	}
	base, synced, reason := w.exportBase(ctx)
	if reason != "" {
		return reason, ctx.Err()
	}
	pr, pw := io.Pipe()
	type extracted struct {
		sum    export.Summary
		synced export.Synced
		err    error
	}
	done := make(chan extracted, 1)
	go func() {
		var ex extracted
		if synced {
			ex.sum, ex.synced, ex.err = export.Sync(pr, w.cfg.Worktree, caps, base)
		} else {
			ex.sum, ex.err = export.Extract(pr, w.cfg.Worktree, caps)
		}
		_ = pr.CloseWithError(errExtractStopped) // a refusal stops the download
		done <- ex
	}()
	var dropped []string
	dlErr := w.eng.Download(ctx, w.names.Container, workDir, func(r io.Reader) error {
		// Buffered: an unbuffered pipe would hand every header and every
		// small file's bytes over on their own, three goroutine switches
		// a file. Not when a test pauses mid-export: what passed the
		// pause point must have reached the lane.
		if pause.Armed(pause.MidExport) {
			return rebaseArchive(r, midExport(pw), &dropped)
		}
		bw := bufio.NewWriterSize(pw, 256<<10)
		if err := rebaseArchive(r, bw, &dropped); err != nil {
			return err
		}
		return bw.Flush()
	})
	if dlErr != nil {
		_ = pw.CloseWithError(dlErr) // the extraction fails on a cut stream
	} else {
		_ = pw.Close()
	}
	ex := <-done
	if dropped != nil {
		fin.DroppedGitEntries = dropped
	}
	fin.WorktreeFiles, fin.WorktreeBytes = ex.sum.Members, ex.sum.Bytes
	if ex.sum.EscapingSymlinks != nil {
		fin.EscapingSymlinks = ex.sum.EscapingSymlinks
	}
	if ex.sum.SkippedSpecial != nil {
		fin.SkippedSpecialEntries = ex.sum.SkippedSpecial
	}
	w.cfg.trace("extracted")
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("export %s: %w", w.names.WorkVolume, err)
	}
	var ref *export.Refusal
	switch {
	case errors.As(ex.err, &ref) && !errors.Is(ex.err, errExtractStopped) && (dlErr == nil || !errors.Is(ref, export.ErrExtraction)):
		return ref.Reason, nil
	case dlErr != nil:
		return "docker step failed: " + dlErr.Error(), nil
	case ex.err != nil:
		return ex.err.Error(), nil
	}
	if err := dropEscapingLinks(w.cfg.Worktree, ex.sum.EscapingSymlinks, base); err != nil {
		return "take links out of the tree out of the worktree: " + err.Error(), nil
	}
	var paths []string // nil: the whole tree
	if synced {
		paths = ex.synced.Changed
	}
	moved, reason := w.quarantine(ex.sum, base, paths, synced)
	if reason != "" {
		return reason, nil
	}
	fin.DroppedGitEntries = append(fin.DroppedGitEntries, moved...)
	fin.UnexportedEntries = unexported(w.longPaths, ex.sum.Files)
	if synced {
		paths = append(paths, basePathsUnder(base, moved)...)
	}
	if reason := w.diff(ctx, fin, base, paths); reason != "" {
		return reason, nil
	}
	w.cfg.trace("diffed")
	// The only host git after the export: it reads the base tree into
	// the lane's index, not the worker's files.
	if _, err := w.git.Run(ctx, gitops.Call{Dir: w.cfg.Worktree, Args: []string{"read-tree", w.cfg.BaseCommit}, Neutral: true}); err != nil {
		return "rebuild the worktree's index: " + err.Error(), nil
	}
	w.cfg.trace("indexed")
	return "", nil
}

// exportBase is the base tree the export compares against, and whether
// the lane holds it already (the baseline filled it: the export syncs).
// Otherwise the export extracts the whole tree into a lane that must hold
// only its .git file: one the baseline failed to fill is cleared of what
// it wrote. Without a baseline (`runs export`) the lane is looked at: the
// whole base tree (a run killed after the baseline) is synced into, a
// part of it (killed during the baseline) cleared first; anything else
// is someone's work and refused. reason is why none could be had.
func (w *Workspace) exportBase(ctx context.Context) (base []export.BaseFile, synced bool, reason string) {
	if w.baseline != nil {
		var err error
		if base, err = w.baseline.wait(ctx); err == nil {
			return base, true, ""
		}
		if ctx.Err() != nil {
			return nil, false, "export interrupted"
		}
		if err := export.Clear(w.cfg.Worktree); err != nil {
			return nil, false, err.Error()
		}
	}
	if base == nil {
		var err error
		if base, err = baseTree(ctx, w.git, w.cfg.RepoRoot, w.cfg.BaseCommit); err != nil {
			return nil, false, err.Error()
		}
	}
	if w.baseline != nil {
		return base, false, ""
	}
	state, err := export.CheckLane(w.cfg.Worktree, base)
	switch {
	case err != nil:
		return nil, false, err.Error()
	case state == export.LaneBase:
		return base, true, ""
	case state == export.LanePartialBase:
		if err := export.Clear(w.cfg.Worktree); err != nil {
			return nil, false, err.Error()
		}
	}
	return base, false, ""
}

// diff computes the change against base into <RunDir>/diff.patch and fin,
// looking only at paths when they are given (nil: the whole tree); it
// returns why it failed, or "".
func (w *Workspace) diff(ctx context.Context, fin *sandbox.Finalization, base []export.BaseFile, paths []string) string {
	root, err := os.OpenRoot(w.cfg.Worktree)
	if err != nil {
		return "open the worktree: " + err.Error()
	}
	defer func() { _ = root.Close() }() // read-only
	path := filepath.Join(w.cfg.RunDir, "diff.patch")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "create the patch: " + err.Error()
	}
	maxPatch := w.cfg.MaxPatchMB
	if maxPatch <= 0 {
		maxPatch = defaultMaxPatchMB
	}
	var d *export.Diff
	if paths != nil {
		d, err = export.DiffPaths(ctx, root, base, paths, f, export.DiffOptions{MaxPatchMB: maxPatch})
	} else {
		d, err = export.DiffTree(ctx, root, base, f, export.DiffOptions{MaxPatchMB: maxPatch})
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s: %w", path, cerr)
	}
	if err != nil {
		return "diff the exported tree: " + err.Error()
	}
	fin.PatchPath = &path
	fin.DiffStat = d.Stat
	fin.FilesChanged, fin.FilesChangedTruncated = d.Files, d.FilesTruncated
	if fin.FilesChanged == nil {
		fin.FilesChanged = []string{}
	}
	return ""
}

// quarantine moves the tree's repositories out of the lane into the run
// dir, and with them every hard link elsewhere in the tree to a file of
// theirs (it shares their fate); reason is why it could not. When the
// lane was synced from the base, a repository the base itself holds and
// the worker left as it was (no changed path at or under it) stays: it is
// the operator's own.
func (w *Workspace) quarantine(sum export.Summary, base []export.BaseFile, changed []string, synced bool) ([]string, string) {
	repos := sum.Repositories
	if synced {
		repos = slices.DeleteFunc(slices.Clone(repos), func(dir string) bool {
			return !slices.ContainsFunc(changed, func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") })
		})
	}
	dest := filepath.Join(w.cfg.RunDir, QuarantineDir)
	moved, err := export.Quarantine(w.cfg.Worktree, repos, dest)
	if err != nil {
		return nil, err.Error()
	}
	links, err := export.QuarantineEntries(w.cfg.Worktree, sum.LinksInto(moved), dest)
	moved = append(moved, links...)
	if err != nil {
		return moved, err.Error()
	}
	// What is moved keeps its config: no git run in the quarantine may
	// find it a repository.
	if err := export.Disarm(dest, moved); err != nil {
		return moved, err.Error()
	}
	return moved, ""
}

// dropEscapingLinks takes out of the lane at laneDir each of names (the
// export's escaping links: their targets lead out of the tree, through
// other links too) but a link the base holds as it is: no lane holds a
// live link out of the repository that it did not have (host git and
// editors follow links; one into a volume's data dir on the host ran the
// worker's fsmonitor). They stay listed in escaping_symlinks. The
// extraction never writes beneath a link, so no name's parent is one.
func dropEscapingLinks(laneDir string, names []string, base []export.BaseFile) error {
	if len(names) == 0 {
		return nil
	}
	baseLinks := map[string]string{}
	for _, f := range base {
		if f.Mode == export.ModeSymlink {
			baseLinks[f.Path] = string(f.Blob)
		}
	}
	root, err := os.OpenRoot(laneDir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // a directory opened for reading
	for _, n := range names {
		fi, err := root.Lstat(n)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if target, err := root.Readlink(n); err == nil {
			if was, ok := baseLinks[n]; ok && was == target {
				continue
			}
		}
		if err := root.Remove(n); err != nil {
			return err
		}
	}
	return nil
}

// basePathsUnder are base's paths at or under any of dirs: after those
// were moved out, the diff must look at them.
func basePathsUnder(base []export.BaseFile, dirs []string) []string {
	var out []string
	for _, f := range base {
		for _, d := range dirs {
			if f.Path == d || strings.HasPrefix(f.Path, d+"/") {
				out = append(out, f.Path)
				break
			}
		}
	}
	return out
}

// unexported are the long paths the server listed that the export did not
// bring back: the daemon could not read them.
func unexported(long, exported []string) []string {
	out := []string{}
	if len(long) == 0 {
		return out
	}
	got := map[string]bool{}
	for _, p := range exported {
		got[p] = true
	}
	for _, p := range long {
		if !got[p] {
			out = append(out, p)
		}
	}
	return out
}
