package export

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

const (
	dirMode  fs.FileMode = 0o755
	execMode fs.FileMode = 0o755
	fileMode fs.FileMode = 0o644
	// copyBuffer is the buffer every file's data is copied through.
	copyBuffer = 64 << 10
)

// writer creates accepted members under root. The walk has already
// placed each member in its tree, so a member reaching here has a path of
// real directories, the ones it needs are listed in newDirs, and its own
// name is free; the *os.Root still guards every call against a tree
// changed underneath it.
type writer struct {
	root *os.Root
	buf  []byte
}

func newWriter(root *os.Root) *writer {
	return &writer{root: root, buf: make([]byte, copyBuffer)}
}

func (w *writer) put(m *member, data io.Reader) *Refusal {
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
		if err := w.root.Symlink(m.target, m.name); err != nil {
			return osFailed(m.raw, err, "create symlink "+quoted(m.name))
		}
		return nil
	default:
		return w.create(m, data)
	}
}

func (w *writer) mkdir(raw, name string) *Refusal {
	if err := w.root.Mkdir(name, dirMode); err != nil {
		return osFailed(raw, err, "create directory "+quoted(name))
	}
	// The umask may have narrowed the mode Mkdir asked for.
	if err := w.root.Chmod(name, dirMode); err != nil {
		return osFailed(raw, err, "set the mode of "+quoted(name))
	}
	return nil
}

// create writes a regular file. O_EXCL makes an existing name, a
// symlink included, an error rather than something to follow or
// overwrite; os.Root adds O_NOFOLLOW.
func (w *writer) create(m *member, data io.Reader) *Refusal {
	perm := fileMode
	if m.exec {
		perm = execMode
	}
	f, err := w.root.OpenFile(m.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return osFailed(m.raw, err, "create "+quoted(m.name))
	}
	// Hiding *os.File's ReadFrom keeps io.CopyBuffer on our buffer; the
	// generic ReadFrom would allocate a fresh one for every file.
	_, err = io.CopyBuffer(struct{ io.Writer }{f}, data, w.buf)
	if err == nil {
		err = f.Chmod(perm) // the umask may have narrowed perm
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return osFailed(m.raw, err, "write "+quoted(m.name))
	}
	return nil
}

// osFailed is failed for an error from the os package. The message keeps
// only the system's reason, since the os error repeats the path unescaped
// and the message already names it.
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
