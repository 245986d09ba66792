package export

import (
	"archive/tar"
	"bufio"
	"errors"
	"io"
	"strings"
)

// streamBuffer is the read-ahead under the byte count: archive/tar reads
// in 512-byte blocks, which would otherwise be a read call each on a pipe.
const streamBuffer = 64 << 10

// member is one accepted archive entry.
type member struct {
	raw    string // the name as the archive spells it, for messages
	name   string // a directory's trailing slash dropped
	kind   nodeKind
	size   int64  // regular files
	exec   bool   // a regular file with any exec bit
	target string // symlinks
	placement
}

// sink writes an accepted member. data yields a regular file's content;
// the walk reads whatever the sink leaves of it.
type sink func(m *member, data io.Reader) *Refusal

// walker is one pass over a stream.
type walker struct {
	caps Caps
	cr   *capReader
	tree *node
	sum  Summary
	// last is the raw name of the last member accepted, for messages
	// about what follows it.
	last string
}

// walk reads the stream once, checks every member against caps and the
// tree the earlier members made, hands each accepted member to put (nil
// checks only) and totals them. The byte count sits above the read-ahead,
// so it counts what archive/tar consumed, not what was buffered.
func walk(r io.Reader, caps Caps, put sink) (Summary, error) {
	caps.MaxFiles = max(caps.MaxFiles, 0)
	caps.MaxBytes = max(caps.MaxBytes, 0)
	w := &walker{
		caps: caps,
		cr:   newCapReader(bufio.NewReaderSize(r, streamBuffer), caps.MaxBytes),
		tree: &node{},
	}
	if ref := w.run(put); ref != nil {
		return w.sum, ref
	}
	return w.sum, nil
}

func (w *walker) run(put sink) *Refusal {
	tr := tar.NewReader(w.cr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return w.drain()
		}
		// With GODEBUG=tarinsecurepath=0 archive/tar flags names that are
		// not local but still returns the header; accept refuses every
		// such name itself, with the message callers expect.
		if err != nil && (!errors.Is(err, tar.ErrInsecurePath) || hdr == nil) {
			return w.broken(err, "", "read archive header "+position(w.last))
		}
		m, ref := w.accept(hdr)
		if ref != nil {
			return ref
		}
		if ref := w.consume(m, tr, put); ref != nil {
			return ref
		}
		w.record(m)
	}
}

// accept checks a header against the rules and caps and places it in the
// tree.
func (w *walker) accept(hdr *tar.Header) (*member, *Refusal) {
	raw := hdr.Name
	var k nodeKind
	switch hdr.Typeflag {
	case tar.TypeReg:
		k = fileNode
	case tar.TypeDir:
		k = dirNode
	case tar.TypeSymlink:
		k = linkNode
	case tar.TypeXGlobalHeader:
		return nil, refuse(ErrGlobalHeader, "", "archive contains a PAX global header %s", position(w.last))
	default:
		return nil, refuse(ErrDisallowedType, raw, "disallowed member type at %s (%s)", quoted(raw), typeName(hdr.Typeflag))
	}
	parts, ref := splitName(raw, k == dirNode)
	if ref != nil {
		return nil, ref
	}
	if k == linkNode {
		if ref := checkTarget(raw, hdr.Linkname); ref != nil {
			return nil, ref
		}
	}
	if w.sum.Members >= w.caps.MaxFiles {
		return nil, refuse(ErrTooManyFiles, raw, "archive exceeds %d files at %s", w.caps.MaxFiles, quoted(raw))
	}
	// Declared sizes are checked before any data is read, so a member
	// claiming more than is left is refused without reading it.
	if k == fileNode && hdr.Size > w.caps.MaxBytes-w.sum.Bytes {
		return nil, w.tooManyBytes(raw)
	}
	pl, ref := w.tree.place(raw, parts, k)
	if ref != nil {
		return nil, ref
	}
	m := &member{raw: raw, name: strings.Join(parts, "/"), kind: k, placement: pl}
	switch k {
	case fileNode:
		m.size = hdr.Size
		m.exec = hdr.Mode&0o111 != 0
	case linkNode:
		m.target = hdr.Linkname
	}
	return m, nil
}

// consume hands m to put and reads the rest of its data, so a stream cap
// tripped inside a member's data is reported at that member.
func (w *walker) consume(m *member, tr *tar.Reader, put sink) *Refusal {
	if put != nil {
		d := &dataReader{r: tr}
		if ref := put(m, d); ref != nil {
			// A failed copy fails on either side; the stream's side is
			// the one to report.
			if d.err != nil {
				return w.broken(d.err, m.raw, "read "+quoted(m.raw))
			}
			return ref
		}
	}
	if m.kind == fileNode {
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return w.broken(err, m.raw, "read "+quoted(m.raw))
		}
	}
	return nil
}

func (w *walker) record(m *member) {
	w.sum.Members++
	switch m.kind {
	case fileNode:
		w.sum.Bytes += m.size
		w.sum.Files = append(w.sum.Files, m.name)
	case linkNode:
		w.sum.Files = append(w.sum.Files, m.name)
		if linkEscapes(m.name, m.target) {
			w.sum.EscapingSymlinks = append(w.sum.EscapingSymlinks, m.name)
		}
	}
	w.last = m.raw
}

// drain reads what follows the end-of-archive marker (`git archive` pads
// to a 10 KiB record), still under the cap, so the producer is not left
// blocked on a full pipe.
func (w *walker) drain() *Refusal {
	if _, err := io.Copy(io.Discard, w.cr); err != nil {
		return w.broken(err, "", "read the end of the archive")
	}
	return nil
}

// broken reports a failed read: the cap when the count tripped, else the
// stream's error. member is the member whose data was being read, "" for a
// header or the trailer.
func (w *walker) broken(err error, member, what string) *Refusal {
	if w.cr.over {
		return w.tooManyBytes(member)
	}
	return failed(member, err, what)
}

func (w *walker) tooManyBytes(member string) *Refusal {
	where := position(w.last)
	if member != "" {
		where = "at " + quoted(member)
	}
	return refuse(ErrTooManyBytes, member, "archive exceeds %d bytes %s", w.caps.MaxBytes, where)
}

// dataReader remembers the error reading a member's data ended with, so
// a failed copy can be told a broken stream from a failed write.
type dataReader struct {
	r   io.Reader
	err error
}

func (d *dataReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		d.err = err
	}
	return n, err
}
