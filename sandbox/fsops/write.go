package fsops

import (
	"errors"
	"fmt"
	"io"
	"path"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// WriteFile is the write_file tool (E-30): it creates or replaces the file
// at path with content, creating missing parent directories, and describes
// what changed (E-33, verb "Wrote"), or reports a new file's size and line
// count when there was no previous text to compare with.
//
// The write truncates the file in place (no temporary file and rename), so
// a failure in the middle of it, such as a full disk, may leave the file
// truncated; the result then says the write failed.
func (f *FS) WriteFile(path, content string) (string, error) {
	if len(content) > maxFileBytes {
		return fmt.Sprintf("ERROR: content is %d bytes, over the %d-byte write limit; write the file in smaller pieces",
			len(content), maxFileBytes), nil
	}
	rel, err := f.Resolve(path, true)
	if err != nil {
		return toolResult("", resolveFailure("write", path, err))
	}
	before, hadText := f.previousText(rel)
	if err := f.makeParents(path, rel); err != nil {
		return toolResult("", err)
	}
	if err := f.writeRegular(path, rel, content); err != nil {
		return toolResult("", err)
	}
	if !hadText {
		n := len(SplitLines(content))
		return fmt.Sprintf("Wrote %d bytes to %s (new file, %d %s)", len(content), path, n, lineWord(n)), nil
	}
	return DescribeChange("Wrote", path, before, content), nil
}

// previousText is the file's text before a write, for the change
// description. It is best effort: a missing file, a symlink, a FIFO, a
// file over the read limit or one that is not UTF-8 has none, and the
// write then reads as a new file. It never fails the write.
func (f *FS) previousText(rel string) (string, bool) {
	file, size, err := f.openInTree(rel, unix.O_RDONLY, 0)
	if err != nil {
		return "", false
	}
	defer func() { _ = file.Close() }()
	if size > maxFileBytes {
		return "", false
	}
	data, err := io.ReadAll(io.LimitReader(file, maxFileBytes+1))
	if err != nil || len(data) > maxFileBytes || !utf8.Valid(data) {
		return "", false
	}
	return string(data), true
}

// makeParents creates rel's missing parent directories. The mode leaves
// the rest to the umask, as mkdir -p does.
func (f *FS) makeParents(given, rel string) error {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	if err := f.root.MkdirAll(dir, 0o777); err != nil {
		return osFailure("write", given, err)
	}
	return nil
}

// writeRegular replaces the contents of the regular file at rel (a
// Resolve result for writing), creating it with mode 0644 (less the
// umask) if it is missing. A symlink at rel is refused, even one whose
// target is inside the tree, and so is anything that is not a regular
// file. Failures are tool failures quoting given.
func (f *FS) writeRegular(given, rel, data string) error {
	file, _, err := f.openInTree(rel, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	switch {
	case errors.Is(err, unix.ELOOP):
		return symlinkRefusal(given)
	case errors.Is(err, unix.ENXIO):
		// A FIFO with no reader (or a socket, or a device without a
		// driver): O_NONBLOCK turned the hang into this error.
		return failf("'%s' is not a regular file (refusing FIFO/device/socket)", given)
	case errors.Is(err, errNotRegular):
		return failf("cannot write '%s': '%s' is not a regular file (refusing FIFO/device/socket)", given, f.abs(rel))
	case err != nil:
		return osFailure("write", given, err)
	}
	_, werr := io.WriteString(file, data)
	// Close reports a deferred write error, so it is checked too.
	cerr := file.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return osFailure("write", given, err)
	}
	return nil
}

func symlinkRefusal(given string) error {
	return failf("'%s' is a symlink; writing through a symlink is not allowed even when its target is inside the worktree", given)
}
