package fsops

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

const (
	// maxFileBytes caps what the file tools read or write: a file is read
	// whole (offset and limit only window the result), so an unbounded read
	// would let the model exhaust memory.
	maxFileBytes = 5 << 20 // 5242880, the contract's number

	// readCapChars caps read_file's result, in characters.
	readCapChars = 8000
	// defaultReadLimit is read_file's default window, in lines.
	defaultReadLimit = 400
)

// ReadFile is the read_file tool (E-29): lines [offset, offset+limit) of
// the file at path, numbered from 1 as "%6d\t<line>", with a note when more
// lines follow, capped at 8000 characters. The bytes are decoded as UTF-8
// with replacement and split like Python's str.splitlines(). An empty file
// gives "".
//
// The contract leaves negative arguments unvalidated; they are clamped
// here: an offset below 0 reads from the first line, and a limit below 1
// uses the default 400 (a limit of 0 would show nothing and point the
// model back at the same offset forever).
func (f *FS) ReadFile(path string, offset, limit int) (string, error) {
	rel, err := f.Resolve(path, false)
	if err != nil {
		return toolResult("", resolveFailure("read", path, err))
	}
	data, err := f.readRegular(path, rel)
	if err != nil {
		return toolResult("", err)
	}
	return numberLines(decodeLossy(data), max(offset, 0), limitOrDefault(limit)), nil
}

func limitOrDefault(limit int) int {
	if limit < 1 {
		return defaultReadLimit
	}
	return limit
}

// numberLines renders the window of text's lines read_file shows.
func numberLines(text string, offset, limit int) string {
	lines := SplitLines(text)
	end := len(lines)
	if offset < len(lines) && limit < len(lines)-offset {
		end = offset + limit
	}
	var b strings.Builder
	chars := 0
	for i := offset; i < end; i++ {
		row := fmt.Sprintf("%6d\t%s", i+1, lines[i])
		if i > offset {
			b.WriteByte('\n')
			chars++
		}
		b.WriteString(row)
		chars += utf8.RuneCountInString(row)
		if chars > readCapChars {
			// The cap cuts everything after this line anyway; stop
			// formatting a window of millions of lines early.
			return truncateChars(b.String(), readCapChars, " — re-run with offset/limit to see more")
		}
	}
	if end < len(lines) {
		fmt.Fprintf(&b, "\n[showing lines %d-%d of %d; re-run with offset=%d for more]", offset+1, end, len(lines), end)
	}
	return truncateChars(b.String(), readCapChars, " — re-run with offset/limit to see more")
}

// truncateChars keeps the first n characters of s and appends the
// contract's truncation note when s is longer.
func truncateChars(s string, n int, note string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := 0
	for i := 0; i < n; i++ {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return fmt.Sprintf("%s\n[output truncated at %d chars%s]", s[:cut], n, note)
}

// decodeLossy is Python's bytes.decode("utf-8", errors="replace"): each
// maximal ill-formed subsequence becomes one U+FFFD, as Unicode recommends,
// so a truncated three-byte character is one mark rather than two.
func decodeLossy(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/2)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[i : i+size])
			i += size
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += illFormedLen(b[i:])
	}
	return sb.String()
}

// illFormedLen is the length of the ill-formed sequence at the start of b:
// the bytes that begin a well-formed UTF-8 sequence without completing it,
// or one byte that cannot begin one.
func illFormedLen(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF)
	var n int
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c == 0xE0:
		n, lo = 3, 0xA0
	case c == 0xED:
		n, hi = 3, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		n = 3
	case c == 0xF0:
		n, lo = 4, 0x90
	case c >= 0xF1 && c <= 0xF3:
		n = 4
	case c == 0xF4:
		n, hi = 4, 0x8F
	default:
		return 1
	}
	k := 1
	for ; k < n && k < len(b) && b[k] >= lo && b[k] <= hi; k++ {
		lo, hi = 0x80, 0xBF
	}
	return k
}

// readRegular reads the regular file at rel (a Resolve result) whole.
// Failures are tool failures worded for reading and quoting given.
func (f *FS) readRegular(given, rel string) ([]byte, error) {
	file, size, err := f.openInTree(rel, unix.O_RDONLY, 0)
	switch {
	case errors.Is(err, errIsDir):
		return nil, failf("cannot read '%s': '%s' is a directory; use list_dir to see what it holds", given, f.abs(rel))
	case errors.Is(err, errNotRegular):
		return nil, failf("cannot read '%s': '%s' is not a regular file (refusing FIFO/device/socket)", given, f.abs(rel))
	case err != nil:
		return nil, osFailure("read", given, err)
	}
	defer func() { _ = file.Close() }()
	if size > maxFileBytes {
		return nil, tooBigToRead(given, f.abs(rel), size)
	}
	// Read one byte past the cap: the file may have grown since the stat.
	data, err := io.ReadAll(io.LimitReader(file, maxFileBytes+1))
	if err != nil {
		return nil, osFailure("read", given, err)
	}
	if len(data) > maxFileBytes {
		if fi, err := file.Stat(); err == nil {
			size = fi.Size()
		}
		return nil, tooBigToRead(given, f.abs(rel), max(size, int64(len(data))))
	}
	return data, nil
}

func tooBigToRead(given, abs string, size int64) error {
	return failf("cannot read '%s': '%s' is %d bytes, over the %d-byte read limit; use grep to search it instead of reading it whole",
		given, abs, size, maxFileBytes)
}

// errNotRegular is a file that is not a regular file (a FIFO, device,
// socket or directory), which the file tools refuse.
var errNotRegular = errors.New("not a regular file")

// errIsDir is a directory where a file was asked for; it matches
// errNotRegular too.
var errIsDir = fmt.Errorf("%w: a directory", errNotRegular)

// openInTree opens rel (a Resolve result) with flag, never following a
// symlink at the final component and never blocking on a FIFO, and returns
// it with its size if it is a regular file (errNotRegular otherwise).
//
// The parent directory is opened through the root, which keeps every step
// inside the tree; the final component is opened with openat(2) on it
// because Root.OpenFile follows an in-tree symlink at the final component
// even when asked for O_NOFOLLOW. O_NONBLOCK makes a FIFO open at once
// (read) or fail with ENXIO (write) instead of hanging; it is cleared once
// the file is known to be regular.
func (f *FS) openInTree(rel string, flag int, perm uint32) (*os.File, int64, error) {
	dirName, name := path.Split(rel)
	dir, err := f.root.Open(path.Clean(dirName))
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = dir.Close() }()
	raw, err := dir.SyscallConn()
	if err != nil {
		return nil, 0, fmt.Errorf("open directory of %s: %w", rel, err)
	}
	fd := -1
	var openErr error
	if err := raw.Control(func(dirFD uintptr) {
		for {
			fd, openErr = unix.Openat(int(dirFD), name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
			if openErr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return nil, 0, fmt.Errorf("open directory of %s: %w", rel, err)
	}
	if openErr != nil {
		return nil, 0, &os.PathError{Op: "openat", Path: rel, Err: openErr}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, 0, &os.PathError{Op: "fstat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return nil, 0, errIsDir
		}
		return nil, 0, errNotRegular
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, 0, &os.PathError{Op: "fcntl", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), f.abs(rel)), st.Size, nil
}

// abs is rel as the model knows it: under the display root.
func (f *FS) abs(rel string) string { return path.Join(f.display, rel) }

// toolFailure is a failed tool call. Its text, "ERROR: …", is the result
// the model reads. Helpers return it as an error so one check at each
// tool's edge tells a result from a failure that must end the run.
type toolFailure string

func (e toolFailure) Error() string { return string(e) }

func failf(format string, args ...any) error {
	return toolFailure("ERROR: " + fmt.Sprintf(format, args...))
}

// toolResult turns a tool's outcome into its return values: a tool
// failure becomes the result text with a nil error.
func toolResult(text string, err error) (string, error) {
	var tf toolFailure
	if errors.As(err, &tf) {
		return string(tf), nil
	}
	if err != nil {
		return "", err
	}
	return text, nil
}

// osFailure words an OS error met while op ("read", "write") worked on the
// path the model gave. A closed root is passed on as an error instead: the
// tree is gone from under the run, which no retry by the model can fix.
func osFailure(op, given string, err error) error {
	if errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("%s %s: %w", op, given, err)
	}
	return failf("cannot %s '%s': %s", op, given, osReason(err))
}

// resolveFailure words a Resolve refusal: the contract's own sentences for
// a path outside the tree or inside .git/, the OS error for a failed
// lookup.
func resolveFailure(op, given string, err error) error {
	var errno syscall.Errno
	if errors.Is(err, os.ErrClosed) || errors.As(err, &errno) {
		return osFailure(op, given, err)
	}
	return toolFailure("ERROR: " + err.Error())
}

// osReason is the part of an OS error the model can act on: "no such file
// or directory", not the system call and the internal relative path.
//
// A path that another process changes while it is looked up surfaces as
// EINVAL (a link replaced by a file between lstat and readlink) or as
// os.Root's own "race" errors; the model is told that in words.
func osReason(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if errno == syscall.EINVAL {
			return changedMeanwhile
		}
		return errno.Error()
	}
	if strings.Contains(err.Error(), "race") {
		return changedMeanwhile
	}
	return err.Error()
}

// changedMeanwhile is the reason given for a path that changed under a
// tool while it looked the path up.
const changedMeanwhile = "the path changed while it was being looked up (something else is changing it); try again"
