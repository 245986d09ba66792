package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Options of the tmpfs mounts. A hiding tmpfs stays empty (Landlock allows
// no writes there) so it can be tiny; the fresh /dev/shm is bash's own
// shared memory, bounded so it cannot eat the host's memory.
const (
	hideOptions  = "mode=0755,size=64k"
	freshOptions = "mode=1777,size=256m"
	tmpfsFlags   = unix.MS_NOSUID | unix.MS_NODEV
)

// isolateMounts changes the launcher's private mount namespace: hides the
// directories holding host daemons' sockets, masks single sockets, gives
// bash its own /dev/shm, makes parts of a git store read-only, and mounts a
// /proc that shows only the new PID namespace. Nothing here reaches the
// host's mount namespace.
func isolateMounts(p Policy) error {
	// Without this, mounts could propagate back to the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// What must stay visible is opened before it is covered, and bound
	// back from the open descriptor afterwards.
	kept, err := openKept(p.Keep)
	if err != nil {
		return err
	}
	defer closeKept(kept)
	for _, dir := range p.Hide {
		if err := unix.Mount("tmpfs", dir, "tmpfs", tmpfsFlags|unix.MS_NOEXEC, hideOptions); err != nil {
			return fmt.Errorf("hide %s: %w", dir, err)
		}
	}
	for _, k := range kept {
		if err := bindBack(k.path, k.f); err != nil {
			return err
		}
	}
	for _, file := range p.Mask {
		err := unix.Mount("/dev/null", file, "", unix.MS_BIND, "")
		if err != nil && !errors.Is(err, unix.ENOENT) { // gone, or under a hidden directory
			return fmt.Errorf("mask %s: %w", file, err)
		}
	}
	for _, dir := range p.Fresh {
		if err := unix.Mount("tmpfs", dir, "tmpfs", tmpfsFlags, freshOptions); err != nil {
			return fmt.Errorf("mount a fresh tmpfs on %s: %w", dir, err)
		}
	}
	for _, dir := range p.ReadOnly {
		if err := bindReadOnly(dir); err != nil {
			return err
		}
	}
	// A fresh /proc lists only the namespace's processes. Where the kernel
	// refuses it (a /proc partly covered, as in some containers), the old
	// one stays: Landlock still keeps bash out of other processes' /proc
	// entries.
	if p.Namespace != NoNamespace {
		_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	}
	return nil
}

// keptFile is a file to bind back over a hiding tmpfs.
type keptFile struct {
	path string
	f    *os.File
}

// openKept opens the files to keep with O_PATH; missing ones are skipped.
func openKept(paths []string) ([]keptFile, error) {
	var kept []keptFile
	for _, path := range paths {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			closeKept(kept)
			return nil, fmt.Errorf("open %s to keep it visible: %w", path, err)
		}
		kept = append(kept, keptFile{path: path, f: os.NewFile(uintptr(fd), path)})
	}
	return kept, nil
}

// closeKept closes the O_PATH descriptors of kept files. They only name the
// files and were never read or written, so a close error loses nothing.
func closeKept(kept []keptFile) {
	for _, k := range kept {
		_ = k.f.Close()
	}
}

// bindBack recreates path (a file or a directory) on the tmpfs that now
// covers it and binds the original, open as f, over it.
func bindBack(path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s to keep it visible: %w", path, err)
	}
	if fi.IsDir() {
		err = os.MkdirAll(path, 0o755)
	} else if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		var stub *os.File
		if stub, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			err = stub.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("recreate %s: %w", path, err)
	}
	// /proc is still the one inherited from the host here, so the magic
	// link names the descriptor of this process.
	src := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := unix.Mount(src, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("keep %s visible: %w", path, err)
	}
	return nil
}

// bindReadOnly makes dir read-only by binding it over itself and remounting
// the bind read-only. The flags the mount already has are kept: in a user
// namespace the kernel refuses to clear ones the host set.
func bindReadOnly(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", dir, "", flags, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", dir, err)
	}
	return nil
}
