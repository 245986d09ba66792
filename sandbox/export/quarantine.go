package export

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Quarantine moves each of dirs (paths relative to the lane at laneDir,
// as Summary.Repositories lists them) out of the lane into dest, at the
// same relative path, nothing followed on either side; dest and the
// directories it needs are made 0700. What dest already holds at such a
// path (an earlier attempt's) is replaced. It returns the paths moved, in
// order; a path no longer in the lane as a directory is left out.
func Quarantine(laneDir string, dirs []string, dest string) ([]string, error) {
	return quarantine(laneDir, dirs, dest, true)
}

// QuarantineEntries moves each of paths out of the lane at laneDir into
// dest as Quarantine does, whatever is there (the hard links
// Summary.LinksInto names, which share a file of a repository moved
// out); a path no longer in the lane is left out.
func QuarantineEntries(laneDir string, paths []string, dest string) ([]string, error) {
	return quarantine(laneDir, paths, dest, false)
}

func quarantine(laneDir string, dirs []string, dest string, onlyDirs bool) ([]string, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	src, err := openLane(laneDir)
	if err != nil {
		return nil, fmt.Errorf("quarantine: open the worktree: %w", err)
	}
	defer func() { _ = src.Close() }()
	q, err := openQuarantine(dest)
	if err != nil {
		return nil, err
	}
	defer func() { _ = q.Close() }()
	var moved []string
	for _, d := range dirs {
		st, err := src.lstat(d)
		if err != nil || (onlyDirs && kindOf(&st) != unix.S_IFDIR) {
			continue
		}
		if err := move(src, q, d); err != nil {
			return moved, err
		}
		moved = append(moved, d)
	}
	return moved, nil
}

// QuarantineRepositories finds, in the tree at laneDir as it is on disk,
// every directory git would take for a repository (RepoSigns, outermost
// only) and every entry named .git in any letter case below the root, and
// moves each out into dest as Quarantine does. The root's own .git (the
// worktree's link to its repository) stays. Nothing is followed: a
// symlink is never entered. It returns the paths moved, sorted.
func QuarantineRepositories(laneDir, dest string) ([]string, error) {
	src, err := openLane(laneDir)
	if err != nil {
		return nil, fmt.Errorf("quarantine: open the worktree: %w", err)
	}
	defer func() { _ = src.Close() }()
	var found []string
	if err := findRepositories(src, ".", &found); err != nil {
		return nil, fmt.Errorf("quarantine: %w", err)
	}
	if len(found) == 0 {
		return nil, nil
	}
	q, err := openQuarantine(dest)
	if err != nil {
		return nil, err
	}
	defer func() { _ = q.Close() }()
	slices.Sort(found)
	for i, p := range found {
		if err := move(src, q, p); err != nil {
			return found[:i], err
		}
	}
	return found, nil
}

// findRepositories appends to found the repositories and .git entries at
// or under dir.
func findRepositories(l *lane, dir string, found *[]string) error {
	names, err := l.list(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", quoted(dir), err)
	}
	slices.Sort(names)
	join := func(name string) string {
		if dir == "." {
			return name
		}
		return dir + "/" + name
	}
	var signs RepoSigns
	var subdirs []string
	for _, name := range names {
		p := join(name)
		if strings.EqualFold(name, ".git") {
			if dir != "." || name != ".git" {
				*found = append(*found, p)
			}
			continue
		}
		st, err := l.lstat(p)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", quoted(p), err)
		}
		hit := false
		if strings.EqualFold(name, "config") && kindOf(&st) == unix.S_IFREG {
			if hit, err = configAt(l, p); err != nil {
				return err
			}
		}
		signs.Note(name, hit)
		if kindOf(&st) == unix.S_IFDIR {
			subdirs = append(subdirs, p)
		}
	}
	if dir != "." && signs.Repository() {
		// Whatever it held was appended above; the directory goes whole.
		*found = slices.DeleteFunc(*found, func(p string) bool { return strings.HasPrefix(p, dir+"/") })
		*found = append(*found, dir)
		return nil
	}
	for _, d := range subdirs {
		if err := findRepositories(l, d, found); err != nil {
			return err
		}
	}
	return nil
}

// configAt judges the config file at p.
func configAt(l *lane, p string) (bool, error) {
	f, err := l.open(p)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", quoted(p), err)
	}
	defer func() { _ = f.Close() }() // read-only
	hit, err := ConfigMarksRepository(f)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", quoted(p), err)
	}
	return hit, nil
}

// openQuarantine makes dest (0700) and opens it as a lane.
func openQuarantine(dest string) (*lane, error) {
	if err := os.MkdirAll(dest, 0o700); err != nil {
		return nil, fmt.Errorf("quarantine: make %s: %w", dest, err)
	}
	q, err := openLane(dest)
	if err != nil {
		return nil, fmt.Errorf("quarantine: open %s: %w", dest, err)
	}
	return q, nil
}

// move moves p from the lane src to the same path in q: a rename when
// both are on one file system, else a copy (nothing followed, FIFOs and
// devices left out) and a removal.
func move(src, q *lane, p string) error {
	if dir := path.Dir(p); dir != "." {
		if err := mkdirAll(q, dir); err != nil {
			return fmt.Errorf("quarantine %s: %w", quoted(p), err)
		}
	}
	if err := q.remove(p); err != nil {
		return fmt.Errorf("quarantine %s: clear the earlier copy: %w", quoted(p), err)
	}
	sfd, sbase, err := src.parent(p)
	if err != nil {
		return fmt.Errorf("quarantine %s: %w", quoted(p), err)
	}
	sfd, err = unix.Dup(sfd)
	if err != nil {
		return fmt.Errorf("quarantine %s: %w", quoted(p), err)
	}
	defer func() { _ = unix.Close(sfd) }()
	src.forget(p)
	dfd, dbase, err := q.parent(p)
	if err != nil {
		return fmt.Errorf("quarantine %s: %w", quoted(p), err)
	}
	err = unix.Renameat(sfd, sbase, dfd, dbase)
	if errors.Is(err, unix.EXDEV) {
		if err = copyAt(sfd, sbase, dfd, dbase); err == nil {
			err = removeAt(sfd, sbase)
		}
	}
	if err != nil {
		return fmt.Errorf("quarantine %s: %w", quoted(p), err)
	}
	return nil
}

// mkdirAll makes dir and its parents in l, 0700.
func mkdirAll(l *lane, dir string) error {
	parts := strings.Split(dir, "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/")
		st, err := l.lstat(d)
		switch {
		case err == nil && kindOf(&st) == unix.S_IFDIR:
			continue
		case err == nil:
			if err := l.remove(d); err != nil {
				return err
			}
		}
		if err := l.mkdir(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// copyAt copies the entry sbase of the directory sfd to dbase in dfd:
// directories with what they hold, files by content, symlinks as links;
// nothing is followed, FIFOs and devices are left out.
func copyAt(sfd int, sbase string, dfd int, dbase string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, sbase, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	switch kindOf(&st) {
	case unix.S_IFLNK:
		buf := make([]byte, maxTarget+1)
		n, err := unix.Readlinkat(sfd, sbase, buf)
		if err != nil {
			return err
		}
		return unix.Symlinkat(string(buf[:n]), dfd, dbase)
	case unix.S_IFREG:
		in, err := openat(sfd, sbase, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
		if err != nil {
			return err
		}
		fin := os.NewFile(uintptr(in), sbase)
		defer func() { _ = fin.Close() }() // read-only
		out, err := openat(dfd, dbase, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW)
		if err != nil {
			return err
		}
		fout := os.NewFile(uintptr(out), dbase)
		_, err = io.Copy(fout, fin)
		if cerr := fout.Close(); err == nil {
			err = cerr
		}
		return err
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dfd, dbase, 0o700); err != nil {
			return err
		}
		in, err := openat(sfd, sbase, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		if err != nil {
			return err
		}
		din := os.NewFile(uintptr(in), sbase)
		defer func() { _ = din.Close() }() // read-only
		out, err := openat(dfd, dbase, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Close(out) }()
		names, err := din.Readdirnames(-1)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := copyAt(in, n, out, n); err != nil {
				return err
			}
		}
	}
	return nil
}
