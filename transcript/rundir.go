package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

var (
	// ErrInvalidSlug marks a run slug that breaks the slug rule or does not
	// resolve directly under the runs root.
	ErrInvalidSlug = errors.New("invalid run slug")
	// ErrSlugCollision marks a run directory that could not be created because
	// something (of any kind) already exists at its path.
	ErrSlugCollision = errors.New("run slug collision")
	// ErrNoSuchRun marks a slug with no run directory under the runs root.
	ErrNoSuchRun = errors.New("no such run")
)

// runError is an error worded for users that still matches its sentinel
// kind with errors.Is, and keeps any underlying cause reachable.
type runError struct {
	kind  error
	msg   string
	cause error
}

func (e *runError) Error() string        { return e.msg }
func (e *runError) Is(target error) bool { return target == e.kind }
func (e *runError) Unwrap() error        { return e.cause }

// CreateRunDir makes the runs root safe (EnsureDir) and creates
// <runsRoot>/<slug> exclusively with mode 0700. Anything already at that path
// — a directory, a file, a symlink, even a dangling one — is a collision
// matching ErrSlugCollision; an invalid slug matches ErrInvalidSlug.
func CreateRunDir(runsRoot, slug string) (string, error) {
	if err := ValidSlug(slug); err != nil {
		return "", err
	}
	if err := EnsureDir(runsRoot); err != nil {
		return "", err
	}
	dir := filepath.Join(runsRoot, slug)
	// mkdir never follows a symlink at its final component, so EEXIST covers
	// every kind of entry in the way, dangling symlinks included.
	if err := os.Mkdir(dir, dirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", &runError{
				kind:  ErrSlugCollision,
				msg:   fmt.Sprintf("run directory %s already exists (slug collision)", dir),
				cause: err,
			}
		}
		return "", fmt.Errorf("create run directory %s: %w", dir, err)
	}
	// The umask can only remove bits; set the mode outright so it is exactly
	// 0700 whatever the umask.
	if err := os.Chmod(dir, dirMode); err != nil {
		return "", fmt.Errorf("set permissions of run directory %s: %w", dir, err)
	}
	return dir, nil
}

// RunDirPath returns <runsRoot>/<slug> for a valid slug whose entry, if it
// exists, resolves directly under the runs root; otherwise the error matches
// ErrInvalidSlug. The directory need not exist; see FindRunDir.
func RunDirPath(runsRoot, slug string) (string, error) {
	if err := ValidSlug(slug); err != nil {
		return "", err
	}
	dir := filepath.Join(runsRoot, slug)
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return dir, nil
	}
	if err != nil {
		return "", fmt.Errorf("inspect run directory %s: %w", dir, err)
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		return dir, nil
	}
	// The slug rule keeps the name itself inside the root, but a symlink
	// planted there could still point anywhere.
	if !resolvesDirectlyUnder(dir, runsRoot) {
		return "", &runError{kind: ErrInvalidSlug, msg: fmt.Sprintf("invalid run slug '%s'", slug)}
	}
	return dir, nil
}

// FindRunDir is RunDirPath for a run that must exist: an absent entry matches
// ErrNoSuchRun, and an entry that is not a directory is an error.
func FindRunDir(runsRoot, slug string) (string, error) {
	dir, err := RunDirPath(runsRoot, slug)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", &runError{
			kind:  ErrNoSuchRun,
			msg:   fmt.Sprintf("no such run '%s' under %s", slug, runsRoot),
			cause: err,
		}
	}
	if err != nil {
		return "", fmt.Errorf("inspect run directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("run '%s' is not a directory: %s", slug, dir)
	}
	return dir, nil
}

// resolvesDirectlyUnder reports whether path, with symlinks resolved, is a
// direct child of root, with symlinks resolved.
func resolvesDirectlyUnder(path, root string) bool {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	resolvedRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	return filepath.Dir(resolved) == resolvedRoot
}
