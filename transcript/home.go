package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// HomeEnv names the environment variable that replaces ~/.dirtywork as a whole.
const HomeEnv = "DIRTYWORK_HOME"

// dirMode is the only mode our private directories may have: they hold task
// text, transcripts and diffs, which are nobody else's business.
const dirMode fs.FileMode = 0o700

// Home returns the dirtywork home directory: $DIRTYWORK_HOME when it is set and
// non-empty (made absolute), else ~/.dirtywork. It does not create anything;
// see EnsureDir.
func Home() (string, error) {
	if h := os.Getenv(HomeEnv); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", fmt.Errorf("make %s=%q absolute: %w", HomeEnv, h, err)
		}
		return abs, nil
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory (set %s to choose another place): %w", HomeEnv, err)
	}
	return filepath.Join(userHome, ".dirtywork"), nil
}

// RunsRoot returns <home>/runs, the directory holding one directory per run.
func RunsRoot() (string, error) {
	return underHome("runs")
}

// BenchRoot returns <home>/bench, the directory holding benchmark sweeps.
func BenchRoot() (string, error) {
	return underHome("bench")
}

// EnsureRunsRoot makes sure the home directory and the runs root are safe
// private directories (see EnsureDir) and returns the runs root.
func EnsureRunsRoot() (string, error) {
	return ensureUnderHome("runs")
}

// EnsureBenchRoot makes sure the home directory and the bench root are safe
// private directories (see EnsureDir) and returns the bench root.
func EnsureBenchRoot() (string, error) {
	return ensureUnderHome("bench")
}

func underHome(name string) (string, error) {
	home, err := Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, name), nil
}

func ensureUnderHome(name string) (string, error) {
	home, err := Home()
	if err != nil {
		return "", err
	}
	if err := EnsureDir(home); err != nil {
		return "", err
	}
	dir := filepath.Join(home, name)
	if err := EnsureDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// EnsureDir makes path a private directory of the current user: it creates it
// (and any missing parents) with mode 0700 when absent, refuses anything that
// is not a real directory (a symlink, even to a directory, is refused) or that
// another user owns, and strips group and other permission bits.
func EnsureDir(path string) error {
	// Something already in the way (EEXIST for a dangling symlink, ENOTDIR for
	// a file) is left to the checks below, which say what it is in plain words.
	err := os.MkdirAll(path, dirMode)
	if err != nil && !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("create directory %s: %w", path, err)
	}
	// Inspect and fix the directory through one descriptor opened without
	// following symlinks, so it cannot be swapped between check and chmod.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return describeUnusableDir(path, err)
	}
	// The descriptor only inspects and chmods the directory; closing it
	// cannot undo either.
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("inspect directory %s: %w", path, err)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("refusing to use %s: it is owned by uid %d, not by the current user (uid %d)",
			path, st.Uid, os.Getuid())
	}
	if info.Mode().Perm() != dirMode {
		if err := f.Chmod(dirMode); err != nil {
			return fmt.Errorf("restrict permissions of %s to 0700: %w", path, err)
		}
	}
	return nil
}

// describeUnusableDir turns a failed no-follow open of path into an error that
// says what is in the way.
func describeUnusableDir(path string, openErr error) error {
	info, err := os.Lstat(path)
	switch {
	case err != nil:
		return fmt.Errorf("open directory %s: %w", path, openErr)
	case info.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("refusing to use %s: it is a symlink, not a real directory", path)
	case !info.IsDir():
		return fmt.Errorf("refusing to use %s: it exists but is not a directory", path)
	default:
		return fmt.Errorf("open directory %s: %w", path, openErr)
	}
}
