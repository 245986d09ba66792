package export

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// DisarmedSuffix ends the name Disarm gives an entry it renames.
const DisarmedSuffix = ".quarantined"

// Disarm makes the repositories moved into the quarantine at dest inert:
// in each of paths (relative to dest, as Quarantine returned them) every
// entry named HEAD, in any letter case, and every non-directory named
// .git (a gitfile) below it is renamed with DisarmedSuffix, nothing
// followed. The entry itself keeps its name, as dropped_git_entries says.
//
// Moved whole, a worker's repository keeps its config: a core.fsmonitor,
// hooks and filters that a host git run anywhere in it would execute, and
// the reviewer who looks at what was dropped, or a shell prompt with git
// integration on the way in, runs git exactly there. git takes no
// directory for a repository without a HEAD (setup.c's is_git_directory),
// and a gitfile only leads to one, so with HEADs renamed no git anywhere in
// the quarantine finds a repository of the worker's (a moved gitfile can
// lead only to another quarantined one, or out of the worker's reach);
// everything else stays byte for byte, for review. Rename HEAD back to use
// one.
func Disarm(dest string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	q, err := openLane(dest)
	if err != nil {
		return fmt.Errorf("disarm the quarantine: %w", err)
	}
	defer func() { _ = q.Close() }()
	for _, p := range paths {
		if err := disarmAt(q, p, true); err != nil {
			return fmt.Errorf("disarm %s in the quarantine: %w", quoted(p), err)
		}
	}
	return nil
}

// disarmAt disarms the entry p of q and, for a directory, what it holds;
// top is set for the moved entry itself.
func disarmAt(q *lane, p string, top bool) error {
	st, err := q.lstat(p)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	isDir := kindOf(&st) == unix.S_IFDIR
	name := path.Base(p)
	if strings.EqualFold(name, "head") || !top && !isDir && strings.EqualFold(name, ".git") {
		return renameAside(q, p)
	}
	if !isDir {
		return nil
	}
	names, err := q.list(p)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, n := range names {
		if err := disarmAt(q, p+"/"+n, false); err != nil {
			return err
		}
	}
	return nil
}

// renameAside renames p to p+DisarmedSuffix (or a numbered variant when
// that is taken) beside it, replacing nothing.
func renameAside(q *lane, p string) error {
	fd, base, err := q.parent(p)
	if err != nil {
		return err
	}
	q.forget(p)
	for i := 0; i < 100; i++ {
		to := base + DisarmedSuffix
		if i > 0 {
			to = fmt.Sprintf("%s%s.%d", base, DisarmedSuffix, i)
		}
		err = renameNoReplace(fd, base, to)
		if !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return err
}
