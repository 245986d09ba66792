package export

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

const (
	dirMode  fs.FileMode = 0o755
	execMode fs.FileMode = 0o755
	fileMode fs.FileMode = 0o644
	// copyBuffer is the buffer every file's data is copied through.
	copyBuffer = 64 << 10
)

// writer creates accepted members in a lane. The walk has already placed
// each member in its tree, so a member reaching here has a path of real
// directories, the ones it needs are listed in newDirs, and its own name
// is free; the lane still resolves every component without following
// anything, against a tree changed underneath it.
type writer struct {
	lane *lane
	buf  []byte
	// pool, when set, creates small new regular files on a few
	// goroutines (see createPool); the writer's user closes it.
	pool *createPool
}

func newWriter(l *lane) *writer {
	return &writer{lane: l, buf: make([]byte, copyBuffer)}
}

func (w *writer) put(m *member, data io.Reader) *Refusal {
	if w.pool != nil {
		// A failure of a file created meanwhile ends the walk here; a
		// hard link waits for the file it names to be written.
		wait := w.pool.err
		if m.kind == hardlinkNode {
			wait = w.pool.wait
		}
		if ref := wait(); ref != nil {
			return ref
		}
	}
	for _, dir := range m.newDirs {
		if ref := w.mkdir(m.raw, dir); ref != nil {
			return ref
		}
	}
	switch m.kind {
	case dirNode:
		if m.exists {
			return nil
		}
		return w.mkdir(m.raw, m.name)
	case linkNode:
		return w.symlink(m)
	case hardlinkNode:
		return w.hardlink(m)
	default:
		return w.create(m, data)
	}
}

func (w *writer) mkdir(raw, name string) *Refusal {
	if err := w.lane.mkdir(name, dirMode); err != nil {
		return osFailed(raw, err, "create directory "+quoted(name))
	}
	return nil
}

func (w *writer) symlink(m *member) *Refusal {
	if err := w.lane.symlink(m.target, m.name); err != nil {
		return osFailed(m.raw, err, "create symlink "+quoted(m.name))
	}
	return nil
}

// hardlink links m to the earlier member it names: both are beneath the
// lane, and the walk made sure the earlier one is a regular file of this
// archive.
func (w *writer) hardlink(m *member) *Refusal {
	if err := w.lane.link(m.target, m.name); err != nil {
		return osFailed(m.raw, err, "create hard link "+quoted(m.name))
	}
	return nil
}

// create writes a regular file. O_EXCL makes an existing name, a
// symlink included, an error rather than something to follow or
// overwrite.
func (w *writer) create(m *member, data io.Reader) *Refusal {
	if w.pool != nil && m.size <= pooledMax {
		fd, base, err := w.lane.parent(m.name)
		if err != nil {
			return osFailed(m.raw, err, "create "+quoted(m.name))
		}
		return w.pool.add(m, fd, base, data)
	}
	f, err := w.lane.create(m.name, m.perm())
	if err != nil {
		return osFailed(m.raw, err, "create "+quoted(m.name))
	}
	return w.fill(m, f, data)
}

// fill writes data into f, the file for m, sets its mode and closes it.
func (w *writer) fill(m *member, f *os.File, data io.Reader) *Refusal {
	return fillFile(m, f, data, w.buf)
}

// fillFile is fill through buf.
func fillFile(m *member, f *os.File, data io.Reader, buf []byte) *Refusal {
	perm := m.perm()
	// A new file gets holes for its zero blocks; one written over keeps
	// its old bytes wherever nothing is written, so it gets every byte.
	inPlace := f.Name() != m.name
	err := copySparse(f, data, buf, !inPlace)
	if err == nil && (umaskNarrows(perm) || (f.Name() != m.name && f.Name() != perm.String())) {
		err = f.Chmod(perm) // the umask narrowed perm, or the old mode stays
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return osFailed(m.raw, err, "write "+quoted(m.name))
	}
	return nil
}

// osFailed is failed for an error from the os package or a system call.
// The message keeps only the system's reason, since the os error repeats
// the path unescaped and the message already names it.
func osFailed(member string, err error, what string) *Refusal {
	ref := failed(member, err, what)
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		ref.Reason = "export extraction failed: " + what + ": " + pe.Err.Error()
	case errors.As(err, &le):
		ref.Reason = "export extraction failed: " + what + ": " + le.Err.Error()
	}
	return ref
}

// zeros is a block of zero bytes to compare data against.
var zeros = make([]byte, copyBuffer)

// copySparse copies data into f from its start through buf and leaves it
// exactly data's length. With sparse (a new, empty file) every all-zero
// block is skipped over instead of written: a file the worker made sparse
// (or that is mostly zeros) takes no more disk in the worktree than in
// the sandbox, however large it says it is.
func copySparse(f *os.File, data io.Reader, buf []byte, sparse bool) error {
	var size int64
	holeAtEnd := false
	for {
		n, err := io.ReadFull(data, buf)
		if n > 0 {
			chunk := buf[:n]
			if sparse && bytes.Equal(chunk, zeros[:n]) {
				if _, serr := f.Seek(int64(n), io.SeekCurrent); serr != nil {
					return serr
				}
				holeAtEnd = true
			} else {
				if _, werr := f.Write(chunk); werr != nil {
					return werr
				}
				holeAtEnd = false
			}
			size += int64(n)
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			if holeAtEnd || !sparse {
				// A trailing hole sets the size; a file written over
				// loses what is left of its old content.
				return f.Truncate(size)
			}
			return nil
		case err != nil:
			return err
		}
	}
}

// umaskNarrows reports whether the process's umask takes bits of perm
// away, so a created file needs a chmod. The umask is read once, from
// /proc where it is shown; elsewhere every create is followed by a chmod.
func umaskNarrows(perm fs.FileMode) bool {
	umaskOnce.Do(func() {
		umaskBits = 0o777
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					umaskBits = fs.FileMode(n)
				}
			}
		}
	})
	return perm&umaskBits != 0
}

var (
	umaskOnce sync.Once
	umaskBits fs.FileMode
)
