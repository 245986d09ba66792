package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
)

const (
	// maxReportChars caps diff_stat and untracked, in characters.
	maxReportChars = 64000
	// maxFilesChanged caps files_changed.
	maxFilesChanged = 1000
)

// Finalize measures the worktree and computes the run's changes against
// the base commit (E-40), with git in config-neutral mode: no global or
// system config, no hooks, no fsmonitor, no filters, textconv or external
// diff, no recursion into submodules (whose config the worker controls),
// and the repository pinned through GIT_DIR and GIT_WORK_TREE, since the
// worker may have written anything in the tree. A failing diff --stat or
// status becomes a bracketed note in its field; a tampered worktree git
// dir, or failing to list the changed files or to measure the tree, is an
// error.
func (w *Workspace) Finalize(ctx context.Context) (sandbox.Finalization, error) {
	fin := sandbox.Finalization{
		ExportStatus:      "n/a",
		DroppedGitEntries: []string{},
	}
	// A breach the last background walk found is reported as the
	// watchdog's (the run ends budget_exceeded); the changes are still
	// computed, for review.
	if err := w.usable(ctx); err != nil {
		var be *sandbox.BudgetError
		if !errors.As(err, &be) {
			return sandbox.Finalization{}, err
		}
		kind := "budget" // the contract's watchdog kind; the run ends budget_exceeded
		fin.WatchdogViolation, fin.WatchdogViolationKind = &be.Reason, &kind
	}
	if err := w.checkCommonDirLink(); err != nil {
		return fin, err
	}
	// One filter lookup serves every command below; they only read, so
	// they run at once (GIT_OPTIONAL_LOCKS=0 keeps status off index.lock).
	filters, err := w.git.NeutralFilters(ctx, w.neutralCall())
	if err != nil {
		return fin, fmt.Errorf("prepare config-neutral git: %w", err)
	}
	var (
		wg                   sync.WaitGroup
		stat, status         []byte
		statErr, statusErr   error
		files                []string
		truncated            bool
		filesErr, measureErr error
		m                    fsops.Measurement
	)
	wg.Go(func() {
		stat, statErr = w.gitNeutral(ctx, filters, "diff", "--stat", "--ignore-submodules=all", w.cfg.BaseCommit)
	})
	wg.Go(func() {
		status, statusErr = w.gitNeutral(ctx, filters, "status", "--porcelain", "-z", "--untracked-files=normal", "--ignore-submodules=all")
	})
	wg.Go(func() { files, truncated, filesErr = w.filesChanged(ctx, filters) })
	wg.Go(func() { m, measureErr = w.fs.Measure(ctx, fsops.Limits{}) })
	wg.Wait()

	if statErr != nil {
		fin.DiffStat = capChars(fmt.Sprintf("[diff --stat failed: %v]", statErr))
	} else {
		fin.DiffStat = capChars(strings.TrimRight(string(stat), "\n"))
	}
	if statusErr != nil {
		fin.Untracked = capChars(fmt.Sprintf("[status --porcelain failed: %v]", statusErr))
	} else {
		fin.Untracked = capChars(strings.Join(untrackedPaths(status), "\n"))
	}
	if filesErr != nil {
		return fin, filesErr
	}
	fin.FilesChanged, fin.FilesChangedTruncated = files, truncated
	if measureErr != nil {
		return fin, fmt.Errorf("measure worktree %s: %w", w.worktree, measureErr)
	}
	fin.WorktreeBytes, fin.WorktreeFiles = m.Bytes, m.Entries
	fin.EscapingSymlinks = m.EscapingSymlinks
	if fin.EscapingSymlinks == nil {
		fin.EscapingSymlinks = []string{}
	}
	return fin, nil
}

// filesChanged is the sorted union of the tracked files that differ from
// the base commit and the untracked files git does not ignore, at most
// maxFilesChanged of them.
func (w *Workspace) filesChanged(ctx context.Context, filters *gitops.Filters) ([]string, bool, error) {
	var tracked, untracked []byte
	var trackedErr, err error
	var wg sync.WaitGroup
	wg.Go(func() {
		tracked, trackedErr = w.gitNeutral(ctx, filters, "diff", "--name-only", "-z", "--ignore-submodules=all", w.cfg.BaseCommit)
	})
	untracked, err = w.gitNeutral(ctx, filters, "ls-files", "--others", "--exclude-standard", "-z")
	wg.Wait()
	if trackedErr != nil {
		return nil, false, fmt.Errorf("list files changed since %s: %w", w.cfg.BaseCommit, trackedErr)
	}
	if err != nil {
		return nil, false, fmt.Errorf("list untracked files: %w", err)
	}
	files := append(splitZ(tracked), splitZ(untracked)...)
	slices.Sort(files)
	files = slices.Compact(files)
	if len(files) > maxFilesChanged {
		return files[:maxFilesChanged], true, nil
	}
	if files == nil {
		files = []string{}
	}
	return files, false, nil
}

// checkCommonDirLink makes sure the worktree's git dir still names the
// repository's common dir. bash may write in that git dir, and a
// commondir file pointing at a repository of the worker's making would
// hand Finalize's git the worker's config.
func (w *Workspace) checkCommonDirLink() error {
	link := filepath.Join(w.adminDir, "commondir")
	data, err := os.ReadFile(link)
	if err != nil {
		return fmt.Errorf("read %s: %w", link, err)
	}
	target := strings.TrimSpace(string(data))
	if !filepath.IsAbs(target) {
		target = filepath.Join(w.adminDir, target)
	}
	if resolved, err := filepath.EvalSymlinks(target); err != nil || resolved != w.commonDir {
		return fmt.Errorf("%s no longer names the repository's git dir %s (it says %q): %w", link, w.commonDir, target, ErrTampered)
	}
	return nil
}

// gitNeutral runs git in the worktree in config-neutral mode, pinned to
// the worktree's own git dir so that a .git file rewritten in the tree
// cannot point it elsewhere.
func (w *Workspace) gitNeutral(ctx context.Context, filters *gitops.Filters, args ...string) ([]byte, error) {
	c := w.neutralCall()
	c.Args, c.Filters = args, filters
	return w.git.Run(ctx, c)
}

// neutralCall is a config-neutral git call in the worktree, pinned to the
// worktree's own git dir.
func (w *Workspace) neutralCall() gitops.Call {
	return gitops.Call{Dir: w.worktree, Neutral: true, GitDir: w.adminDir, WorkTree: w.worktree}
}

// untrackedPaths extracts the "??" paths from git status --porcelain -z
// output (directories come collapsed as "dir/"). A rename or copy entry
// carries its source in the next field, which is skipped.
func untrackedPaths(out []byte) []string {
	fields := bytes.Split(out, []byte{0})
	var paths []string
	for i := 0; i < len(fields); i++ {
		f := string(fields[i])
		if len(f) < 4 {
			continue
		}
		if p, ok := strings.CutPrefix(f, "?? "); ok {
			paths = append(paths, p)
			continue
		}
		if f[0] == 'R' || f[0] == 'C' {
			i++
		}
	}
	return paths
}

// splitZ splits NUL-terminated output into its non-empty fields.
func splitZ(out []byte) []string {
	var fields []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			fields = append(fields, string(f))
		}
	}
	return fields
}

// capChars cuts s after maxReportChars characters, with a note.
func capChars(s string) string {
	if utf8.RuneCountInString(s) <= maxReportChars {
		return s
	}
	n := 0
	for i := range s {
		if n == maxReportChars {
			return s[:i] + fmt.Sprintf("\n[truncated at %d chars]", maxReportChars)
		}
		n++
	}
	return s
}
