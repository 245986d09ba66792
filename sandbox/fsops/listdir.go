package fsops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

const (
	// listDirMaxEntries is how many entries list_dir shows (E-32).
	listDirMaxEntries = 2000
	// listDirMaxChars caps list_dir's text, in characters.
	listDirMaxChars = 8000
)

// ListDir is the list_dir tool (E-32): the entries of the directory at
// given, sorted by name, one a line: "name/" for a directory (a link to
// one included), "name  (<size> bytes)" otherwise (a link's size is its
// target's), "name  (symlink to outside the worktree)" for a link that
// leads outside the tree, "name  (broken symlink)" for one that dangles or
// loops. It shows at most 2000 entries and 8000
// characters, each with a note when cut. Failures are results the model
// reads; the error is for a tree that is gone (its root closed).
func (f *FS) ListDir(given string) (string, error) {
	return toolResult(f.listDir(given, listDirMaxEntries))
}

func (f *FS) listDir(given string, maxEntries int) (string, error) {
	rel, err := f.Resolve(given, false)
	if err != nil {
		return "", resolveFailure("list", given, err)
	}
	d, err := f.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", osFailure("list", given, err)
	}
	// A directory opened in a root lstats every entry as it reads, so
	// Info below costs nothing more.
	entries, err := d.ReadDir(-1)
	_ = d.Close()
	if err != nil {
		return "", osFailure("list", given, err)
	}
	if len(entries) == 0 {
		return "(empty directory)", nil
	}
	// Byte order of UTF-8 names is code-point order.
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	cut := len(entries) > maxEntries
	if cut {
		entries = entries[:maxEntries]
	}
	rows := make([]string, 0, len(entries)+1)
	for _, e := range entries {
		rows = append(rows, f.listRow(rel, e))
	}
	if cut {
		rows = append(rows, fmt.Sprintf("[listing truncated at %d entries]", maxEntries))
	}
	return truncateChars(strings.Join(rows, "\n"), listDirMaxChars, ""), nil
}

// listRow is one entry's line.
func (f *FS) listRow(dir string, e fs.DirEntry) string {
	name := strings.ToValidUTF8(e.Name(), "\uFFFD")
	info, err := e.Info()
	if err == nil && info.Mode()&fs.ModeSymlink != 0 {
		info, err = f.statLink(joinRel(dir, e.Name()))
	}
	var outside *errOutside
	switch {
	case errors.As(err, &outside):
		return name + "  (symlink to outside the worktree)"
	case err != nil:
		return name + "  (broken symlink)"
	case info.IsDir():
		return name + "/"
	default:
		return fmt.Sprintf("%s  (%d bytes)", name, info.Size())
	}
}

// statLink stats what the link at rel leads to, resolving it the way
// Resolve does (absolute targets against the display path) and never
// outside the tree.
func (f *FS) statLink(rel string) (fs.FileInfo, error) {
	target, err := f.resolveRel(rel, rel)
	if err != nil {
		return nil, err
	}
	return f.root.Stat(target)
}

// joinRel joins a root-relative directory and a name.
func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
