package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// excludeLine is what EnsureExcluded appends to the exclude file.
const excludeLine = lanesDirName + "/"

// EnsureExcluded makes sure .worktrees/ is listed in the repository's
// COMMON exclude file (git rev-parse --git-path info/exclude), so lanes
// never show up as "?? .worktrees/" in the operator's status, without
// authoring a change in any tracked file. A linked-worktree repository
// updates the exclude file shared by all its worktrees.
//
// The exclude file must resolve inside the resolved common dir and must not
// be a symlink or anything but a regular file (ErrUnsafeFile). The line is
// appended only when no line already excludes .worktrees, so it is written
// once however many lanes are opened.
func (g *Git) EnsureExcluded(ctx context.Context, repo Repo) error {
	out, err := g.run(ctx, repo.Root, "rev-parse", "--git-path", "info/exclude")
	if err != nil {
		return fmt.Errorf("locate the exclude file of %s: %w", repo.Root, err)
	}
	path := strings.TrimSuffix(string(out), "\n")
	if !filepath.IsAbs(path) {
		path = filepath.Join(repo.Root, path) // relative to -C
	}
	infoDir := filepath.Dir(path)
	if err := os.MkdirAll(infoDir, 0o755); err != nil {
		return fmt.Errorf("create the directory of the exclude file %s: %w", path, err)
	}
	resolvedDir, err := filepath.EvalSymlinks(infoDir)
	if err != nil {
		return fmt.Errorf("resolve the directory of the exclude file %s: %w", path, err)
	}
	if !within(resolvedDir, repo.CommonDir) {
		return fmt.Errorf("exclude file %s %w: it resolves outside the git common dir %s", path, ErrUnsafeFile, repo.CommonDir)
	}
	return appendExcludeLine(filepath.Join(resolvedDir, filepath.Base(path)))
}

// appendExcludeLine adds excludeLine to the file at path unless a line
// already excludes the lanes directory. The file is opened without
// following a final symlink, and appended to through the same descriptor
// it was checked and read through.
func appendExcludeLine(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return fmt.Errorf("exclude file %s %w: it is a symlink", path, ErrUnsafeFile)
		}
		return fmt.Errorf("open exclude file %s: %w", path, err)
	}
	// Closed explicitly after the write; this one is for the early returns,
	// when nothing was written and closing cannot lose data.
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("inspect exclude file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("exclude file %s %w: it is not a regular file", path, ErrUnsafeFile)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read exclude file %s: %w", path, err)
	}
	if excludesLanes(data) {
		return nil
	}
	add := excludeLine + "\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		add = "\n" + add
	}
	if _, err := f.WriteString(add); err != nil {
		return fmt.Errorf("append to exclude file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close exclude file %s: %w", path, err)
	}
	return nil
}

// excludesLanes reports whether some line of an exclude file already
// ignores the lanes directory at the root. Whole lines are compared, so
// "!.worktrees/" or "foo.worktrees/" do not count.
func excludesLanes(data []byte) bool {
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		switch string(bytes.TrimSpace(line)) {
		case ".worktrees/", "/.worktrees/", ".worktrees", "/.worktrees":
			return true
		}
	}
	return false
}
