package export

import "golang.org/x/sys/unix"

// renameNoReplace renames from to to, both in the directory dirfd, and
// fails with EEXIST rather than replace an entry already named to
// (macOS spells renameat2's RENAME_NOREPLACE as renameatx_np's RENAME_EXCL).
func renameNoReplace(dirfd int, from, to string) error {
	return unix.RenameatxNp(dirfd, from, dirfd, to, unix.RENAME_EXCL)
}
