package export

import "golang.org/x/sys/unix"

// renameNoReplace renames from to to, both in the directory dirfd, and
// fails with EEXIST rather than replace an entry already named to.
func renameNoReplace(dirfd int, from, to string) error {
	return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}
