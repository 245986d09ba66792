package export

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// lane is a directory tree that is read, written and removed through
// directory file descriptors, one component at a time, never following a
// symlink in any component: a name whose parent is (now) a symlink or a
// file does not exist, it is never resolved through the link. That is
// what keeps a tree the worker reshaped from redirecting a removal or a
// write (`mv src lib && ln -s lib src` must not make the removal of
// base's src/a remove lib/a), and since every call names one component
// relative to an open directory, paths of any length work, past PATH_MAX.
//
// Names are slash-separated and relative to the root, with no empty, "."
// or ".." component (the walk checked them); "." is the root itself.
//
// The directories of the last name looked up stay open (a stack of
// descriptors), so a tar stream's members, which come directory by
// directory, cost one open per directory rather than one per component
// per member.
type lane struct {
	root  int
	stack []openDir // stack[i] is the directory of the first i+1 components
}

type openDir struct {
	name string // its first i+1 components
	fd   int
}

// errNotBeneath: a component of the name is a symlink, a file or missing,
// so the name is not beneath the root as a path of real directories.
var errNotBeneath = errors.New("not a directory beneath the lane")

// openLane opens the lane rooted at dir.
func openLane(dir string) (*lane, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &lane{root: fd}, nil
}

// Close closes every descriptor.
func (l *lane) Close() error {
	l.drop(0)
	return unix.Close(l.root)
}

// drop closes the stack from depth i on.
func (l *lane) drop(i int) {
	for _, d := range l.stack[i:] {
		_ = unix.Close(d.fd) // a directory opened for reading
	}
	l.stack = l.stack[:i]
}

// forget drops every cached directory at or under name, which is about
// to be removed or replaced.
func (l *lane) forget(name string) {
	for i, d := range l.stack {
		if d.name == name || strings.HasPrefix(d.name, name+"/") {
			l.drop(i)
			return
		}
	}
}

// dir returns a descriptor of the directory name ("." is the root),
// opened component by component with O_NOFOLLOW. The descriptor belongs
// to the lane: callers never close it. errNotBeneath (wrapping the
// system's reason) when a component is not a real directory.
func (l *lane) dir(name string) (int, error) {
	if name == "." || name == "" {
		return l.root, nil
	}
	parts := strings.Split(name, "/")
	// Keep the cached prefix name shares.
	keep := 0
	for keep < len(l.stack) && keep < len(parts) && l.stack[keep].name == strings.Join(parts[:keep+1], "/") {
		keep++
	}
	l.drop(keep)
	parent := l.root
	if keep > 0 {
		parent = l.stack[keep-1].fd
	}
	for i := keep; i < len(parts); i++ {
		fd, err := openat(parent, parts[i], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				return -1, fmt.Errorf("%w: %w", errNotBeneath, err)
			}
			return -1, err
		}
		l.stack = append(l.stack, openDir{name: strings.Join(parts[:i+1], "/"), fd: fd})
		parent = fd
	}
	return parent, nil
}

// parent returns the descriptor of name's directory and its last
// component.
func (l *lane) parent(name string) (int, string, error) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return l.root, name, nil
	}
	fd, err := l.dir(name[:i])
	return fd, name[i+1:], err
}

// openat is unix.Openat with O_CLOEXEC, retried on EINTR.
func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// lstat is name's own status, the name itself not followed. A name under
// a component that is not a real directory does not exist: fs.ErrNotExist.
func (l *lane) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if name == "." {
		return st, unix.Fstat(l.root, &st)
	}
	fd, base, err := l.parent(name)
	if err != nil {
		if errors.Is(err, errNotBeneath) {
			return st, fs.ErrNotExist
		}
		return st, err
	}
	if err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return st, fs.ErrNotExist
		}
		return st, err
	}
	return st, nil
}

// kindOf is a stat's file type.
func kindOf(st *unix.Stat_t) uint32 { return uint32(st.Mode) & unix.S_IFMT } //nolint:unconvert // Mode is uint16 on macOS

// remove removes name, and everything under it when it is a directory,
// nothing followed; nothing there (or a parent that is no directory) is
// fine.
func (l *lane) remove(name string) error {
	l.forget(name)
	fd, base, err := l.parent(name)
	if err != nil {
		if errors.Is(err, errNotBeneath) {
			return nil
		}
		return err
	}
	return removeAt(fd, base)
}

// removeAt removes base in the directory dirfd, recursively, by
// descriptor.
func removeAt(dirfd int, base string) error {
	err := unix.Unlinkat(dirfd, base, 0)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM):
		return err
	}
	fd, err := openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if errors.Is(err, unix.EACCES) {
		// A directory made unreadable (unlinkat said it is one): it is
		// ours, so open it up.
		if unix.Fchmodat(dirfd, base, 0o700, 0) == nil {
			fd, err = openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		}
	}
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), base)
	for {
		names, rerr := d.Readdirnames(1024)
		for _, n := range names {
			if err := removeAt(fd, n); err != nil {
				_ = d.Close()
				return err
			}
		}
		if rerr != nil {
			break
		}
	}
	_ = d.Close() // read-only
	if err := unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// mkdir makes the directory name with mode, whatever the umask.
func (l *lane) mkdir(name string, mode fs.FileMode) error {
	fd, base, err := l.parent(name)
	if err != nil {
		return err
	}
	if err := unix.Mkdirat(fd, base, uint32(mode.Perm())); err != nil {
		return err
	}
	// The umask may have narrowed the mode; base is a directory just made.
	return unix.Fchmodat(fd, base, uint32(mode.Perm()), 0)
}

// symlink makes name a symlink to target.
func (l *lane) symlink(target, name string) error {
	fd, base, err := l.parent(name)
	if err != nil {
		return err
	}
	return unix.Symlinkat(target, fd, base)
}

// link makes name a hard link to the file oldname, neither followed.
func (l *lane) link(oldname, name string) error {
	ofd, obase, err := l.parent(oldname)
	if err != nil {
		return err
	}
	// parent may reuse the stack; keep oldname's directory open on its own.
	ofd, err = unix.Dup(ofd)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(ofd) }()
	fd, base, err := l.parent(name)
	if err != nil {
		return err
	}
	return unix.Linkat(ofd, obase, fd, base, 0)
}

// create makes name a new regular file with perm (O_EXCL: nothing there,
// not even a symlink, is overwritten or followed).
func (l *lane) create(name string, perm fs.FileMode) (*os.File, error) {
	fd, base, err := l.parent(name)
	if err != nil {
		return nil, err
	}
	f, err := createAt(fd, base, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(f), name), nil
}

// createAt makes base in dirfd a new regular file with perm (O_EXCL,
// nothing followed), retried on EINTR.
func createAt(dirfd int, base string, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// rewritten names the files rewrite opens whose mode may not be what the
// new content wants, so it is set.
const rewritten = "(rewritten)"

// rewrite opens the regular file name, which must have one link only,
// for writing over from the start (not truncated: see the writer's fill),
// nothing followed. Anything else
// there is an error, and the caller replaces it instead. mode is what
// the file's permission was made (0: unknown); the returned file is
// named after it (fileMode, execMode or rewritten) so the writer can
// tell whether a chmod is due.
func (l *lane) rewrite(name string, mode fs.FileMode) (*os.File, error) {
	fd, base, err := l.parent(name)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO there must not block the open (fstat refuses it).
	f, err := openat(fd, base, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil || kindOf(&st) != unix.S_IFREG || st.Nlink != 1 {
		_ = unix.Close(f)
		return nil, errNotBeneath
	}
	// Not truncated: the writer overwrites from the start and cuts the
	// file to its new length at the end, so a file of the same length or
	// longer frees no block (on a file system mounted with discard, every
	// freed block costs a TRIM).
	tag := rewritten
	if mode != 0 && fs.FileMode(st.Mode&0o777) == mode {
		tag = mode.String()
	}
	return os.NewFile(uintptr(f), tag), nil
}

// open opens the regular file name for reading, nothing followed.
func (l *lane) open(name string) (*os.File, error) {
	fd, base, err := l.parent(name)
	if err != nil {
		return nil, err
	}
	f, err := openat(fd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(f), name), nil
}

// readlink is the target of the symlink name.
func (l *lane) readlink(name string) (string, error) {
	fd, base, err := l.parent(name)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(fd, base, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// list returns the names in the directory name.
func (l *lane) list(name string) ([]string, error) {
	fd, err := l.dir(name)
	if err != nil {
		return nil, err
	}
	dup, err := openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), name)
	defer func() { _ = d.Close() }() // read-only
	return d.Readdirnames(-1)
}
