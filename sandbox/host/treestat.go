package host

import (
	"io/fs"
	"os"
	"path"
	"strings"
)

// fileStat is what lstat says of a file: enough to tell that it changed.
// The ctime is the kernel's: no one in the jail can set it back, so a
// file rewritten with its old size and mtime restored still differs.
type fileStat struct {
	ino, size    uint64
	mtime, ctime int64
	mode         uint32
}

// treeStats is every file and link of a tree (directories are implied by
// them) by root-relative path; ".git" names and what is under them are
// left out, as the diff leaves them out.
type treeStats map[string]fileStat

// statTree lstats every entry of root without following a link.
func statTree(root *os.Root) (treeStats, error) {
	stats := treeStats{}
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable directory: its files are judged by the diff
		}
		if p != "." && strings.EqualFold(path.Base(p), ".git") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := statOf(fi); ok {
			stats[p] = st
		}
		return nil
	})
	return stats, err
}

// changedSince lists the paths whose entry differs between before and
// now: changed, added or removed.
func changedSince(before, now treeStats) []string {
	var out []string
	for p, s := range now {
		if b, ok := before[p]; !ok || b != s {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := now[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}
