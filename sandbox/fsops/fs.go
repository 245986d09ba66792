// Package fsops implements the file tools (read_file, write_file, edit_file,
// apply_edits, insert_before/after, list_dir, grep) and the tree
// measurement over an *os.Root, so no path the model names reaches outside
// the tree. Host mode calls it directly; the docker tool server runs the
// same code inside the container, so both modes give identical results.
//
// Tool failures are results: strings starting with "ERROR: ", returned
// with a nil error. Only failures that must end the run are errors.
package fsops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// FS is a tree the file tools act on.
type FS struct {
	root *os.Root
	// display is the absolute path the model knows the tree by (the
	// worktree path on the host, /work in a container). Absolute paths the
	// model sends are interpreted against it, and messages quote it.
	display string
}

// New returns the tools' view of root, which the model knows as display (an
// absolute, slash-separated, cleaned path).
func New(root *os.Root, display string) *FS {
	return &FS{root: root, display: path.Clean(display)}
}

// Root is the underlying root.
func (f *FS) Root() *os.Root { return f.root }

// Display is the path the model knows the tree by.
func (f *FS) Display() string { return f.display }

// maxSymlinkHops bounds symlink resolution, as the kernel's ELOOP does.
const maxSymlinkHops = 40

// errOutside is a path that resolves outside the tree. Its text is the
// contract's (E-36), without the "ERROR: " prefix tools add.
type errOutside struct{ given, resolved string }

func (e *errOutside) Error() string {
	return fmt.Sprintf("Path '%s' resolves outside the worktree (%s). Use paths relative to the worktree root.", e.given, e.resolved)
}

// errNUL is a path holding a NUL byte, which no file name can: the
// system would refuse it as an "invalid argument".
type errNUL struct{ given string }

func (e *errNUL) Error() string {
	return fmt.Sprintf("the path '%s' contains a NUL byte (shown as \\0); no file name can hold one", showNUL(e.given))
}

// showNUL is p with every NUL byte written as \0, so a message quoting it
// shows where it is instead of a blank.
func showNUL(p string) string { return strings.ReplaceAll(p, "\x00", `\0`) }

// errInGit refuses a write inside .git/.
type errInGit struct{ given string }

func (e *errInGit) Error() string {
	return fmt.Sprintf("Writing inside .git/ is not allowed (got '%s').", e.given)
}

// Resolve maps a path the model sent to a path relative to the root ("."
// for the root itself) with every symlink resolved. A path that resolves
// outside the tree is refused with the contract's message. For writing, the
// final component is left unresolved (the write opens it without following
// a link) and a first component ".git" is refused.
func (f *FS) Resolve(given string, writing bool) (string, error) {
	if strings.IndexByte(given, 0) >= 0 {
		return "", &errNUL{given: given}
	}
	abs := given
	if !path.IsAbs(abs) {
		abs = path.Join(f.display, given)
	}
	abs = path.Clean(abs)
	rel, ok := f.relative(abs)
	if !ok {
		return "", &errOutside{given: given, resolved: abs}
	}
	var resolved string
	var err error
	if writing && rel != "." {
		dir, name := path.Split(rel)
		var parent string
		parent, err = f.resolveRel(given, path.Clean("./"+dir))
		resolved = path.Join(parent, name)
		// Quote the whole path the write would reach, not just its parent.
		var out *errOutside
		if errors.As(err, &out) {
			out.resolved = path.Join(out.resolved, name)
		}
	} else {
		resolved, err = f.resolveRel(given, rel)
	}
	if err != nil {
		return "", err
	}
	if writing && (resolved == ".git" || strings.HasPrefix(resolved, ".git/")) {
		return "", &errInGit{given: given}
	}
	return resolved, nil
}

// relative turns an absolute display path into a root-relative one.
func (f *FS) relative(abs string) (string, bool) {
	if abs == f.display {
		return ".", true
	}
	prefix := f.display
	if prefix != "/" {
		prefix += "/"
	}
	if !strings.HasPrefix(abs, prefix) {
		return "", false
	}
	return strings.TrimPrefix(abs, prefix), true
}

// resolveRel resolves symlinks along rel, component by component, inside
// the root. A missing component ends resolution: the rest is kept as it is
// (already cleaned), since nothing there can be a link yet.
func (f *FS) resolveRel(given, rel string) (string, error) {
	pending := splitPath(rel)
	done := "."
	for hops := 0; len(pending) > 0; {
		comp := pending[0]
		pending = pending[1:]
		next := path.Join(done, comp)
		fi, err := f.root.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return path.Join(append([]string{next}, pending...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", fmt.Errorf("cannot resolve '%s': too many levels of symbolic links", given)
		}
		target, err := f.root.Readlink(next)
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, fs.ErrNotExist) {
			// Replaced or removed since the Lstat: look at it again.
			pending = append([]string{comp}, pending...)
			continue
		}
		if err != nil {
			return "", err
		}
		var abs string
		if path.IsAbs(target) {
			abs = path.Clean(target)
		} else {
			abs = path.Join(f.display, done, target)
		}
		r, ok := f.relative(abs)
		if !ok {
			return "", &errOutside{given: given, resolved: path.Join(append([]string{abs}, pending...)...)}
		}
		// Start over from the root with the link replaced by its target.
		pending = append(splitPath(r), pending...)
		done = "."
	}
	return done, nil
}

func splitPath(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}
