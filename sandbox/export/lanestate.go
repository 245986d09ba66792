package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"
)

// LaneState is what a worktree an export is to write into holds.
type LaneState int

const (
	// LaneEmpty: only its .git file. Extract writes into it.
	LaneEmpty LaneState = iota
	// LaneBase: exactly the base tree, as Populate writes it. Sync
	// writes into it.
	LaneBase
	// LanePartialBase: nothing but entries of the base tree, equal to
	// base's, some missing: a Populate that was stopped (the process was
	// killed). Nothing in it is anyone's work; Clear it, then Extract.
	LanePartialBase
)

// CheckLane tells what the worktree dest holds, compared with base,
// nothing followed. Anything that is not base's, as Populate would have
// written it (another file, other bytes or mode, a symlink, an extra
// directory), is someone's work and is refused with ErrNotEmpty naming
// the first such path: an export must not mix with it, nor clear it.
func CheckLane(dest string, base []BaseFile) (LaneState, error) {
	files, gitlinks, err := sortBase(base)
	if err != nil {
		return 0, err
	}
	l, err := openLane(dest)
	if err != nil {
		return 0, failed("", err, "open worktree")
	}
	defer func() { _ = l.Close() }()
	c := &laneCheck{l: l, files: map[string]*BaseFile{}, dirs: map[string]bool{}, gitlinks: gitlinks}
	for _, f := range files {
		c.files[f.Path] = f
		for d := parentDir(f.Path); d != "."; d = parentDir(d) {
			c.dirs[d] = true
		}
	}
	for p := range gitlinks {
		for d := p; d != "."; d = parentDir(d) {
			c.dirs[d] = true
		}
	}
	if err := c.dir("."); err != nil {
		return 0, err
	}
	switch {
	case c.matched == 0 && c.links == 0:
		if !c.gitFile {
			return 0, refuse(ErrNotEmpty, "", "worktree not empty: it has no .git file")
		}
		return LaneEmpty, nil
	case c.matched == len(files) && c.links == len(gitlinks):
		return LaneBase, nil
	}
	return LanePartialBase, nil
}

// laneCheck is one CheckLane walk.
type laneCheck struct {
	l        *lane
	files    map[string]*BaseFile
	dirs     map[string]bool // base's directories, gitlinks included
	gitlinks map[string]bool
	matched  int // base files found equal
	links    int // gitlink directories found
	gitFile  bool
	buf      [copyBuffer]byte
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

func (c *laneCheck) dir(dir string) error {
	names, err := c.l.list(dir)
	if err != nil {
		return failed("", err, "list worktree "+quoted(dir))
	}
	for _, name := range names {
		p := name
		if dir != "." {
			p = dir + "/" + name
		}
		st, err := c.l.lstat(p)
		if err != nil {
			return failed(p, err, "inspect "+quoted(p))
		}
		if p == gitFile {
			if kindOf(&st) != unix.S_IFREG {
				return refuse(ErrNotEmpty, p, "worktree not empty: its .git is not a file")
			}
			c.gitFile = true
			continue
		}
		if err := c.entry(p, &st); err != nil {
			return err
		}
	}
	return nil
}

func (c *laneCheck) entry(p string, st *unix.Stat_t) error {
	notBase := func() error {
		return refuse(ErrNotEmpty, p, "worktree not empty: %s is not the base tree's", quoted(p))
	}
	switch kindOf(st) {
	case unix.S_IFDIR:
		if !c.dirs[p] {
			return notBase()
		}
		if c.gitlinks[p] {
			c.links++
		}
		return c.dir(p)
	case unix.S_IFLNK:
		f := c.files[p]
		if f == nil || f.Mode != ModeSymlink {
			return notBase()
		}
		target, err := c.l.readlink(p)
		if err != nil {
			return failed(p, err, "read "+quoted(p))
		}
		if target != string(f.Blob) {
			return notBase()
		}
	case unix.S_IFREG:
		f := c.files[p]
		mode := ModeFile
		if st.Mode&0o100 != 0 {
			mode = ModeExecutable
		}
		if f == nil || f.Mode != mode || st.Size != int64(len(f.Blob)) {
			return notBase()
		}
		same, err := c.sameContent(p, f.Blob)
		if err != nil {
			return err
		}
		if !same {
			return notBase()
		}
	default:
		return notBase()
	}
	c.matched++
	return nil
}

// sameContent compares the file p with blob.
func (c *laneCheck) sameContent(p string, blob []byte) (bool, error) {
	f, err := c.l.open(p)
	if err != nil {
		return false, failed(p, err, "open "+quoted(p))
	}
	defer func() { _ = f.Close() }() // read-only
	rest := blob
	for {
		n, err := f.Read(c.buf[:])
		if n > len(rest) || !bytes.Equal(c.buf[:n], rest[:n]) {
			return false, nil
		}
		rest = rest[n:]
		if errors.Is(err, io.EOF) {
			return len(rest) == 0, nil
		}
		if err != nil {
			return false, failed(p, fmt.Errorf("read: %w", err), "read "+quoted(p))
		}
	}
}
