package export

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// gitFile is the one entry a destination holds before an extraction: the
// worktree's link to its repository.
const gitFile = ".git"

// Extract checks the tar stream r as Validate does and, in the same pass,
// writes each accepted member into dest, which must hold nothing but a
// regular `.git` file (else ErrNotEmpty, before reading anything).
//
// Directories are made 0755, regular files 0755 when the archive gives
// them any exec bit and 0644 otherwise, whatever the umask; symlinks are
// made as they are and never followed, hard links as links to the earlier
// member; FIFOs and devices, and hard links to them, are left out and
// listed. Owners and times in
// the archive are ignored. Every path is resolved one component at a time
// from dest without following anything, so no member reaches outside it,
// not even through a symlink an earlier member or anyone else made there;
// a member under such a symlink is refused before anything is written.
//
// On any refusal after the check of dest, everything in dest but `.git`
// is deleted before Extract returns, and r is left part-read: the caller
// stops its producer. The Summary covers the members accepted before the
// refusal.
func Extract(r io.Reader, dest string, caps Caps) (Summary, error) {
	l, err := openLane(dest)
	if err != nil {
		return Summary{}, failed("", err, "open worktree")
	}
	defer func() { _ = l.Close() }()
	if ref := onlyGitFile(l); ref != nil {
		return Summary{}, ref
	}
	w := newWriter(l)
	w.pool = newCreatePool()
	sum, err := walk(r, caps, w.put)
	// Every file the pool took is written, or refused, before Extract
	// returns or clears the tree.
	if ref := w.pool.close(); ref != nil && err == nil {
		err = ref
	}
	if err == nil {
		return sum, nil
	}
	if cerr := reduceToGitFile(l); cerr != nil {
		return sum, errors.Join(err, fmt.Errorf("reduce %s to its .git file: %w", dest, cerr))
	}
	return sum, err
}

// onlyGitFile refuses a destination holding anything but a regular .git
// file: extracting over other content would mix it with the export, and
// clearing it after a refusal would destroy it.
func onlyGitFile(l *lane) *Refusal {
	names, err := l.list(".")
	if err != nil {
		return failed("", err, "list worktree")
	}
	if len(names) != 1 || names[0] != gitFile {
		return refuse(ErrNotEmpty, "", "worktree not empty")
	}
	st, err := l.lstat(gitFile)
	if err != nil {
		return failed("", err, "inspect the worktree's .git")
	}
	if kindOf(&st) != unix.S_IFREG {
		return refuse(ErrNotEmpty, "", "worktree not empty")
	}
	return nil
}

// reduceToGitFile deletes everything in the lane but .git, links
// unfollowed.
func reduceToGitFile(l *lane) error {
	names, err := l.list(".")
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	var errs []error
	for _, name := range names {
		if name == gitFile {
			continue
		}
		if err := l.remove(name); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
