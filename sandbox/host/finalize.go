package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
	"github.com/dirtywork/dirtywork/sandbox/seal"
)

// defaultMaxPatchMB caps diff.patch when the config gives no cap.
const defaultMaxPatchMB = 10

// Finalize ends the jail and reports the run's changes with no host git
// reading anything the worker wrote but file contents:
//
//  1. the budget's last verdict is taken, and with AllowCommit the
//     worker's new commits are packed inside the jail (an untrusted file);
//  2. the jail is stopped: no worker process is left;
//  3. the worktree's .git file is made the lane's again should it differ,
//     and the tree is sealed (sealTree, package seal): every other entry
//     git would take for a repository that the worker made is moved to
//     <RunDir>/quarantine, FIFOs, links out of the tree and the ignored
//     files the worker made are taken out, setuid and setgid bits
//     cleared, and what every seal of the run found is listed;
//  4. the lane's index is rebuilt from the base commit (read-tree, no
//     work tree read), and the untracked, not ignored, files are listed
//     (ls-files --others, config-neutral, pinned to the lane's git dir);
//  5. files_changed, diff_stat and diff.patch are computed in Go against
//     the base commit's blobs (export.DiffPaths), as in docker mode, so
//     no .gitattributes of the worker is consulted;
//  6. with AllowCommit the commits are imported (gitops.ImportCommits),
//     and the lane's index is made from its branch's tip.
//
// A breach recorded earlier is reported as the watchdog's violation (the
// run ends budget_exceeded); the changes are still computed, for review.
func (w *Workspace) Finalize(ctx context.Context) (sandbox.Finalization, error) {
	w.stopVerifyAhead() // no verify comes after the finalize
	fin := sandbox.Finalization{
		ExportStatus:      "n/a",
		FilesChanged:      []string{},
		EscapingSymlinks:  []string{},
		DroppedGitEntries: []string{},
	}
	select {
	case <-w.ready:
	case <-ctx.Done():
		return fin, ctx.Err()
	}
	var pack *commitPack
	if w.startErr == nil {
		if c, err := w.client(ctx); err == nil {
			_ = w.settleBudget(ctx, c) // a breach is recorded as the violation
			if w.cfg.AllowCommit && w.currentViolation() == nil {
				var err error
				if pack, err = w.packCommits(ctx, c); err != nil {
					w.stopJail()
					return fin, err
				}
			}
		}
	}
	w.watch.stop()
	w.stopJail()
	w.trace("host_stopped")
	fin.Egress = w.egressSummary()
	if v := w.currentViolation(); v != nil {
		reason, kind := v.Reason, "budget" // the contract's watchdog kind; the run ends budget_exceeded
		fin.WatchdogViolation, fin.WatchdogViolationKind = &reason, &kind
	}
	if err := w.restoreGitFile(); err != nil {
		return fin, err
	}
	_, sealed, err := w.sealTree(ctx)
	if err != nil {
		return fin, fmt.Errorf("seal the worktree: %w", err)
	}
	fin.TreeHash = sealed.Hash()
	seal.Evidence(&fin, w.sealedReport())
	w.trace("host_sealed")
	// The tree is measured while the changes are computed: both only read.
	var m fsops.Measurement
	var measureErr error
	measured := make(chan struct{})
	go func() {
		defer close(measured)
		m, measureErr = w.fs.Measure(ctx, fsops.Limits{})
	}()
	err = w.changes(ctx, &fin)
	<-measured
	if err != nil {
		return fin, err
	}
	w.trace("host_diffed")
	head := w.startCommit
	if pack != nil {
		if err := w.importCommits(ctx, pack); err != nil {
			return fin, err
		}
		head = pack.tip
	}
	// The lane's index is its branch's: git status in the lane shows only
	// what is not committed.
	if head != w.cfg.BaseCommit {
		if _, err := w.git.Run(ctx, w.neutral("read-tree", head)); err != nil {
			return fin, fmt.Errorf("make the worktree's index from %s: %w", head, err)
		}
	}
	if measureErr != nil {
		return fin, fmt.Errorf("measure worktree %s: %w", w.worktree, measureErr)
	}
	fin.WorktreeBytes, fin.WorktreeFiles = m.Bytes, m.Entries
	return fin, nil
}

// neutral is a config-neutral git call on the lane, pinned to its own git
// dir and worktree.
func (w *Workspace) neutral(args ...string) gitops.Call {
	return gitops.Call{Dir: w.worktree, Neutral: true, GitDir: w.adminDir, WorkTree: w.worktree, Args: args}
}

// restoreGitFile makes the worktree's .git the lane's gitfile again if it
// is anything else. Inside the jail a read-only file covers it, so only a
// run without the jail can have changed it.
func (w *Workspace) restoreGitFile() error {
	p := filepath.Join(w.worktree, ".git")
	want := "gitdir: " + w.adminDir + "\n"
	if data, err := readRegular(p); err == nil && strings.TrimSpace(string(data)) == strings.TrimSpace(want) {
		return nil
	}
	if err := removeAll(p); err != nil {
		return fmt.Errorf("restore the worktree's .git file: %w", err)
	}
	if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
		return fmt.Errorf("restore the worktree's .git file: %w", err)
	}
	return nil
}

// readRegular reads p if it is a regular file (a final symlink is not
// followed).
func readRegular(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // only read
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return nil, errors.New("not a small regular file")
	}
	data := make([]byte, fi.Size())
	n, err := f.Read(data)
	return data[:n], err
}

// quarantineDir is where, under the run's dir, finalize moves what git
// would take for a repository: the same place as docker mode's.
const quarantineDir = "quarantine"

// changes rebuilds the lane's index from the base and fills fin's
// files_changed, diff_stat, untracked and patch path.
func (w *Workspace) changes(ctx context.Context, fin *sandbox.Finalization) error {
	// Three independent reads at once: git's view of the untracked files
	// (after the index is the base's), the tree's stat since the
	// checkout, and the base tree.
	var (
		wg       sync.WaitGroup
		out      []byte
		gitErr   error
		now      treeStats
		nowErr   error
		blobs    []gitops.TreeBlob
		blobsErr error
	)
	wg.Go(func() {
		if _, gitErr = w.git.Run(ctx, w.neutral("read-tree", w.cfg.BaseCommit)); gitErr != nil {
			gitErr = fmt.Errorf("rebuild the worktree's index from %s: %w", w.cfg.BaseCommit, gitErr)
			return
		}
		if out, gitErr = w.git.Run(ctx, w.neutral("ls-files", "--others", "--exclude-standard", "-z")); gitErr != nil {
			gitErr = fmt.Errorf("list untracked files: %w", gitErr)
		}
	})
	if w.checkedOut != nil {
		wg.Go(func() { now, nowErr = statTree(w.root) })
	}
	blobs, blobsErr = w.baseBlobs(ctx)
	wg.Wait()
	if gitErr != nil {
		return gitErr
	}
	if blobsErr != nil {
		return blobsErr
	}
	base := make([]export.BaseFile, len(blobs))
	paths := make([]string, 0, len(blobs))
	for i, b := range blobs {
		base[i] = export.BaseFile{Path: b.Path, Mode: export.BlobMode(b.Mode), Blob: b.Blob}
		paths = append(paths, b.Path)
	}
	others := splitZ(out)
	fin.Untracked = capChars(strings.Join(collapseUntracked(others, paths), "\n"))
	if w.checkedOut != nil && nowErr == nil {
		// Only what changed since the checkout can differ from the base:
		// the base paths among the changed ones, and the untracked files.
		inBase := make(map[string]bool, len(paths))
		for _, p := range paths {
			inBase[p] = true
		}
		paths = paths[:0]
		for _, p := range changedSince(w.checkedOut, now) {
			if inBase[p] {
				paths = append(paths, p)
			}
		}
	}
	paths = append(paths, others...)

	// The patch is evidence, not the result: on a run dir that cannot take
	// it (a full disk) the change is still reported, without a patch.
	patchPath := filepath.Join(w.cfg.RunDir, "diff.patch")
	f, ferr := os.OpenFile(patchPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	var patch io.Writer
	var kept *keptWriter
	if ferr == nil {
		kept = &keptWriter{w: f}
		patch = kept
	}
	maxPatch := w.cfg.MaxPatchMB
	if maxPatch <= 0 {
		maxPatch = defaultMaxPatchMB
	}
	// What is read is bounded by the tree's budget: only a tree over it
	// (a breach) holds more, and that much is all the review needs.
	d, err := export.DiffPaths(ctx, w.root, base, paths, patch, export.DiffOptions{MaxPatchMB: maxPatch, MaxReadBytes: w.cfg.Limits.MaxBytes})
	if f != nil {
		if cerr := f.Close(); kept.err == nil && cerr != nil {
			kept.err = cerr
		}
		ferr = kept.err
	}
	if err != nil {
		return fmt.Errorf("diff the worktree against %s: %w", w.cfg.BaseCommit, err)
	}
	if ferr == nil {
		fin.PatchPath = &patchPath
	} else {
		_ = os.Remove(patchPath) // a cut patch must not pass for the whole one
	}
	fin.DiffStat = d.Stat
	fin.FilesChanged, fin.FilesChangedTruncated = d.Files, d.FilesTruncated
	if fin.FilesChanged == nil {
		fin.FilesChanged = []string{}
	}
	return nil
}

// collapseUntracked is git status's view of the untracked files: a file in
// a directory that holds no tracked file is shown as its outermost such
// directory, "dir/", once; the rest as themselves. Sorted.
func collapseUntracked(untracked, tracked []string) []string {
	trackedDirs := map[string]bool{}
	for _, p := range tracked {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if trackedDirs[d] {
				break
			}
			trackedDirs[d] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range untracked {
		entry := p
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			if d := strings.Join(parts[:i], "/"); !trackedDirs[d] {
				entry = d + "/"
				break
			}
		}
		if !seen[entry] {
			seen[entry] = true
			out = append(out, entry)
		}
	}
	slices.Sort(out)
	return out
}

// splitZ splits NUL-terminated output into its non-empty fields.
func splitZ(out []byte) []string {
	var fields []string
	for f := range strings.SplitSeq(string(out), "\x00") {
		if f != "" {
			fields = append(fields, f)
		}
	}
	return fields
}

// maxReportChars caps untracked, in characters (E-40).
const maxReportChars = 64000

// capChars cuts s after maxReportChars characters, with a note.
func capChars(s string) string {
	n := 0
	for i := range s {
		if n == maxReportChars {
			return s[:i] + fmt.Sprintf("\n[truncated at %d chars]", maxReportChars)
		}
		n++
	}
	return s
}

// keptWriter writes to w until a write fails, and then only counts: the
// diff goes on, and err says the file is not whole.
type keptWriter struct {
	w   io.Writer
	err error
}

func (k *keptWriter) Write(p []byte) (int, error) {
	if k.err == nil {
		_, k.err = k.w.Write(p)
	}
	return len(p), nil
}
