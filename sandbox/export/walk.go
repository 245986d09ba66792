package export

import (
	"archive/tar"
	"bufio"
	"errors"
	"io"
	"io/fs"
	"math"
	"path"
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
	target string // symlinks: the target; hard links: the earlier member's name
	// origin is a hard link's regular file member: target, or the start
	// of target's own chain.
	origin string
	// configHit is set for a file named config whose text makes its
	// directory a repository's (see ConfigMarksRepository); sniffed for
	// a file whose text was judged.
	configHit, sniffed bool
	placement
}

// perm is the permission a regular file member is written with.
func (m *member) perm() fs.FileMode {
	if m.exec {
		return execMode
	}
	return fileMode
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
	// signs are the repository signs seen in each directory, by name.
	signs map[string]*RepoSigns
	// links are the symlink members, in archive order, judged for
	// escaping once the whole tree is known (a chain a -> b -> /root).
	links []*member
	// skipped are the names of the members left out (FIFOs, devices, and
	// hard links to them): a hard link to one shares its fate.
	skipped map[string]bool
	// salvage, when set, leaves a member it would refuse the stream for
	// out instead (Salvage).
	salvage *salvage
	// broke is set once the stream itself failed: nothing more can be
	// read from it.
	broke bool
}

// walk reads the stream once, checks every member against caps and the
// tree the earlier members made, hands each accepted member to put (nil
// checks only) and totals them. The byte count sits above the read-ahead,
// so it counts what archive/tar consumed, not what was buffered.
func walk(r io.Reader, caps Caps, put sink) (Summary, error) {
	return walkWith(r, caps, put, nil)
}

// walkWith is walk, salvaging when sv is set: the stream has no byte cap
// then (the caps bound what is written), and a member the walk would
// refuse the stream for is left out and listed instead.
func walkWith(r io.Reader, caps Caps, put sink, sv *salvage) (Summary, error) {
	caps.MaxFiles = max(caps.MaxFiles, 0)
	caps.MaxBytes = max(caps.MaxBytes, 0)
	streamCap := caps.MaxBytes
	if sv != nil {
		streamCap = math.MaxInt64
	}
	w := &walker{
		caps:    caps,
		cr:      newCapReader(bufio.NewReaderSize(r, streamBuffer), streamCap),
		tree:    &node{kind: dirNode},
		signs:   map[string]*RepoSigns{},
		skipped: map[string]bool{},
		salvage: sv,
	}
	ref := w.run(put)
	w.finish()
	if ref != nil {
		return w.sum, ref
	}
	return w.sum, nil
}

// finish totals what needs the whole tree: which symlinks escape, chains
// through other links included, and which directories git would take
// for repositories (outermost only).
func (w *walker) finish() {
	for _, m := range w.links {
		if w.escapes(m.name) {
			w.sum.EscapingSymlinks = append(w.sum.EscapingSymlinks, m.name)
		}
	}
	var repos []string
	for dir, s := range w.signs {
		if s.Repository() {
			if n := w.tree.lookup(strings.Split(dir, "/")); n != nil && n.kind == dirNode {
				repos = append(repos, dir)
			}
		}
	}
	w.sum.Repositories = outermost(repos)
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
		if ref == errSkipped {
			continue // archive/tar skips its data, if any, at the next Next
		}
		if ref != nil {
			if w.salvage != nil {
				w.salvage.leaveOut(hdr.Name, ref)
				continue
			}
			return ref
		}
		if ref := w.consume(m, tr, put); ref != nil {
			if w.salvage != nil && !w.broke {
				w.salvage.leaveOut(m.raw, ref)
				w.salvage.undo(m.name)
				continue
			}
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
	case tar.TypeLink:
		if w.skipped[hdr.Linkname] {
			// A second name of a FIFO or device is one too.
			return nil, w.skipSpecial(hdr)
		}
		k = hardlinkNode
	case tar.TypeXGlobalHeader:
		return nil, refuse(ErrGlobalHeader, "", "archive contains a PAX global header %s", position(w.last))
	case tar.TypeFifo, tar.TypeChar, tar.TypeBlock:
		// Nothing git could track or a reviewer needs, and nothing to
		// write into a worktree: left out, and said.
		return nil, w.skipSpecial(hdr)
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
	var linked, origin string
	if k == hardlinkNode {
		var ref *Refusal
		if linked, origin, ref = w.hardlinkTarget(raw, hdr.Linkname); ref != nil {
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
		pl.node.target = hdr.Linkname
	case hardlinkNode:
		m.target, m.origin = linked, origin
		pl.node.target = origin
	}
	return m, nil
}

// errSkipped marks a member accept left out on purpose: the walk reads
// past it and goes on.
var errSkipped = &Refusal{Reason: "skipped"}

// skipSpecial records a FIFO or device member, or a hard link to one,
// which is not exported.
func (w *walker) skipSpecial(hdr *tar.Header) *Refusal {
	name := strings.TrimSuffix(hdr.Name, "/")
	w.skipped[name] = true
	if len(w.sum.SkippedSpecial) < maxListed {
		w.sum.SkippedSpecial = append(w.sum.SkippedSpecial, name)
	} else {
		w.sum.SkippedSpecialTruncated = true
	}
	return errSkipped
}

// hardlinkTarget checks a hard link's target: an earlier regular file
// member (or hard link), named as members are. It returns the member's
// name and the regular file member at the start of its chain.
func (w *walker) hardlinkTarget(raw, target string) (name, origin string, _ *Refusal) {
	parts, ref := splitName(target, false)
	if ref != nil {
		return "", "", refuse(ErrDisallowedType, raw, "hard link at %s to an invalid name", quoted(raw))
	}
	n := w.tree.lookup(parts)
	if n == nil || (n.kind != fileNode && n.kind != hardlinkNode) {
		return "", "", refuse(ErrDisallowedType, raw, "hard link at %s to %s, which is no earlier file of the archive", quoted(raw), quoted(target))
	}
	name = strings.Join(parts, "/")
	if n.kind == hardlinkNode {
		return name, n.target, nil
	}
	return name, name, nil
}

// escapes reports whether the symlink at name leads out of the tree, its
// target resolved through the archive's own tree, following the links it
// meets (more than maxHops of them count as escaping): an absolute
// target, one that climbs above the root, or one whose chain does
// (a -> b -> /root).
func (w *walker) escapes(name string) bool {
	const maxHops = 40
	parts := strings.Split(name, "/")
	n := w.tree.lookup(parts)
	if n == nil || n.kind != linkNode {
		return false
	}
	cur := append([]string(nil), parts[:len(parts)-1]...)
	queue := strings.Split(n.target, "/")
	if path.IsAbs(n.target) {
		return true
	}
	for hops := 0; len(queue) > 0; {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return true
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, c)
		next := w.tree.lookup(cur)
		if next == nil || next.kind != linkNode {
			continue // a directory, a file or nothing: the text decides the rest
		}
		if hops++; hops > maxHops || path.IsAbs(next.target) {
			return true
		}
		cur = cur[:len(cur)-1]
		queue = append(strings.Split(next.target, "/"), queue...)
	}
	return false
}

// consume hands m to put and reads the rest of its data, so a stream cap
// tripped inside a member's data is reported at that member.
func (w *walker) consume(m *member, tr *tar.Reader, put sink) *Refusal {
	var src io.Reader = tr
	var sniff *configSniffer
	if m.kind == fileNode && strings.EqualFold(path.Base(m.name), "config") && strings.Contains(m.name, "/") {
		sniff = &configSniffer{}
		src = io.TeeReader(tr, sniff)
		defer func() { m.configHit, m.sniffed = sniff.hit(), true }()
	}
	if put != nil {
		d := &dataReader{r: src}
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
		if _, err := io.Copy(io.Discard, src); err != nil {
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
		w.links = append(w.links, m)
	case hardlinkNode:
		// Its bytes are the earlier member's, counted once.
		w.sum.Files = append(w.sum.Files, m.name)
		w.sum.HardLinks = append(w.sum.HardLinks, HardLink{Name: m.name, Origin: m.origin})
		if strings.EqualFold(path.Base(m.name), "config") {
			// A config's text is judged as it streams past; a second
			// name of a file judged under another name was not, and
			// counts as a sign (the sniffer errs on the side of yes).
			o := w.tree.lookup(strings.Split(m.origin, "/"))
			m.configHit = o == nil || !o.sniffed || o.configHit
		}
	}
	if m.kind == fileNode && m.sniffed {
		m.node.sniffed, m.node.configHit = true, m.configHit
	}
	w.noteSigns(m)
	w.last = m.raw
}

// noteSigns records what m says of its directory being a repository.
func (w *walker) noteSigns(m *member) {
	dir, base := ".", m.name
	if i := strings.LastIndexByte(m.name, '/'); i >= 0 {
		dir, base = m.name[:i], m.name[i+1:]
	}
	if dir == "." {
		return // the root is the lane itself, its own .git decides
	}
	if !repoSignName(base) && !m.configHit {
		return
	}
	s := w.signs[dir]
	if s == nil {
		s = &RepoSigns{}
		w.signs[dir] = s
	}
	s.Note(base, m.configHit)
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
	w.broke = true
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
