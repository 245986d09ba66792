package jail

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openBind makes a detached bind of source (open_tree with
// OPEN_TREE_CLONE): nosuid and nodev (a device's bind is noexec instead),
// read-only if ro, private (no propagation from the host), and idmapped
// through the user namespace usernsFD when that is not -1. recursive takes
// the mounts beneath source along. The caller attaches it with attach and
// closes it.
func openBind(source string, ro, recursive, device bool, usernsFD int) (int, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, source, flags)
	if err != nil {
		if errors.Is(err, unix.EINVAL) && !recursive && os.Geteuid() != 0 {
			// In a user namespace the mounts beneath source are locked to
			// it: a bind that would leave them out is refused.
			return -1, fmt.Errorf("clone the mount of %s: %w (is something mounted beneath it? an unprivileged jail cannot bind a writable directory with mounts inside)", source, err)
		}
		return -1, fmt.Errorf("clone the mount of %s: %w", source, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if device {
		attr.Attr_set = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
	}
	if ro {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	setFlags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		setFlags |= unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(fd, "", setFlags, &attr); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("set the flags of the bind of %s: %w", source, err)
	}
	if usernsFD >= 0 {
		// The id mapping goes on its own: a kernel that cannot idmap this
		// file system says so here, apart from the flags.
		idmap := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(usernsFD)}
		if err := unix.MountSetattr(fd, "", setFlags, &idmap); err != nil {
			_ = unix.Close(fd)
			return -1, &idmapError{source: source, err: err}
		}
	}
	return fd, nil
}

// idmapError is a bind that could not be idmapped.
type idmapError struct {
	source string
	err    error
}

func (e *idmapError) Error() string {
	return fmt.Sprintf("idmap the bind of %s (its file system may not support idmapped mounts): %v", e.source, e.err)
}

func (e *idmapError) Unwrap() error { return e.err }

// attach moves the detached mount fd onto target.
func attach(fd int, target string) error {
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach a bind at %s: %w", target, err)
	}
	return nil
}

// mountpoint makes sure target (an absolute path inside the jail, whose
// root is at root) exists as a directory (dir) or a file to mount on.
// Missing components are created only on the jail's own tmpfs mounts
// (ours reports their devices): one that would have to be made inside a
// bind would land on the host's disk, and is an error.
// Symlinks on the way are refused: the jail's tree must mean what it says.
func mountpoint(root string, ours func(dev uint64) bool, target string, dir bool) error {
	rel := strings.TrimPrefix(filepath.Clean(target), "/")
	if rel == "" {
		return errors.New("cannot mount over the jail's root")
	}
	parts := strings.Split(rel, "/")
	cur := root
	for i, part := range parts {
		next := filepath.Join(cur, part)
		last := i == len(parts)-1
		var st unix.Stat_t
		err := unix.Lstat(next, &st)
		switch {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return fmt.Errorf("%s: /%s is a symlink in the jail", target, filepath.Join(parts[:i+1]...))
		case err == nil && !last && st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return fmt.Errorf("%s: /%s is not a directory in the jail", target, filepath.Join(parts[:i+1]...))
		case err == nil && last:
			isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
			if isDir != dir {
				return fmt.Errorf("%s: a %s cannot be mounted over a %s", target, kindName(dir), kindName(isDir))
			}
			return nil
		case err != nil && !errors.Is(err, unix.ENOENT):
			return fmt.Errorf("%s: %w", target, err)
		case err == nil:
			cur = next // an existing directory on the way
			continue
		}
		var parent unix.Stat_t
		if err := unix.Stat(cur, &parent); err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		if !ours(parent.Dev) {
			return fmt.Errorf("%s: /%s does not exist, and it would have to be created inside another mount (on the host's disk)",
				target, filepath.Join(parts[:i+1]...))
		}
		if last && !dir {
			fd, err := unix.Open(next, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return fmt.Errorf("create mount point %s: %w", target, err)
			}
			_ = unix.Close(fd) // an empty file on the jail's tmpfs
			return nil
		}
		if err := unix.Mkdir(next, 0o755); err != nil {
			return fmt.Errorf("create mount point %s: %w", target, err)
		}
		cur = next
	}
	return nil
}

func kindName(dir bool) string {
	if dir {
		return "directory"
	}
	return "file"
}

// writeNew writes a new file of the jail's root tmpfs.
func writeNew(path, content string, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(content)
	return errors.Join(werr, f.Close())
}
