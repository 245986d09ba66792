package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Populate writes base into dest, which must hold nothing but its .git
// file: each file with its blob's bytes (0755 when executable, else
// 0644), each symlink as it is, and an empty directory for each gitlink,
// as a checkout with no filters would. Sync then brings dest to an
// exported tree by writing only what differs from base, so a large tree
// of which the worker changed little costs reads, not writes, once the
// worker is done; Populate itself can run while the worker works.
//
// Every path goes through an *os.Root on dest and nothing is followed.
// On failure dest is reduced to its .git file again.
func Populate(ctx context.Context, dest string, base []BaseFile) error {
	files, gitlinks, err := sortBase(base)
	if err != nil {
		return err
	}
	l, err := openLane(dest)
	if err != nil {
		return fmt.Errorf("open worktree %s: %w", dest, err)
	}
	defer func() { _ = l.Close() }()
	if ref := onlyGitFile(l); ref != nil {
		return ref
	}
	if err := populate(ctx, l, files, gitlinks); err != nil {
		if cerr := reduceToGitFile(l); cerr != nil {
			return errors.Join(err, fmt.Errorf("reduce %s to its .git file: %w", dest, cerr))
		}
		return err
	}
	return nil
}

func populate(ctx context.Context, l *lane, files []*BaseFile, gitlinks map[string]bool) error {
	made := map[string]bool{".": true}
	mkdirs := func(dir string) error {
		var todo []string
		for d := dir; !made[d]; d = path.Dir(d) {
			todo = append(todo, d)
		}
		for _, d := range slices.Backward(todo) {
			if err := l.mkdir(d, dirMode); err != nil {
				return fmt.Errorf("populate directory %q: %w", d, err)
			}
			made[d] = true
		}
		return nil
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("populate worktree: %w", err)
		}
		if err := mkdirs(path.Dir(f.Path)); err != nil {
			return err
		}
		if err := writeBase(l, f); err != nil {
			return err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(gitlinks)) {
		if err := mkdirs(p); err != nil {
			return err
		}
	}
	return nil
}

// writeBase creates the file or symlink f in the lane.
func writeBase(l *lane, f *BaseFile) error {
	if f.Mode == ModeSymlink {
		if err := l.symlink(string(f.Blob), f.Path); err != nil {
			return fmt.Errorf("populate symlink %q: %w", f.Path, err)
		}
		return nil
	}
	perm := fileMode
	if f.Mode == ModeExecutable {
		perm = execMode
	}
	out, err := l.create(f.Path, perm)
	if err != nil {
		return fmt.Errorf("populate %q: %w", f.Path, err)
	}
	_, err = out.Write(f.Blob)
	if err == nil {
		err = out.Chmod(perm) // the umask may have narrowed perm
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("populate %q: %w", f.Path, err)
	}
	return nil
}

// Synced is what Sync did beyond the Summary: the paths of the files and
// symlinks it wrote or removed, sorted. Every other file or symlink of
// the tree is base's, byte for byte and mode for mode, so DiffPaths over
// Changed gives the same diff as DiffTree over the whole tree.
type Synced struct {
	Changed []string
}

// Clear reduces dest to its .git file, links unfollowed: what Extract
// wants to find.
func Clear(dest string) error {
	l, err := openLane(dest)
	if err != nil {
		return fmt.Errorf("open worktree %s: %w", dest, err)
	}
	defer func() { _ = l.Close() }()
	if err := reduceToGitFile(l); err != nil {
		return fmt.Errorf("reduce %s to its .git file: %w", dest, err)
	}
	return nil
}

// Sync checks the tar stream r exactly as Extract does, with the same
// caps and refusals and the same Summary, for a dest that holds base as
// Populate wrote it (and nothing else but .git), and makes dest the
// archive's tree: a member equal to base's entry at its path (same type
// and mode, same bytes or target) is left as it is, any other is written
// in place of what is there, and base's entries the archive does not hold
// are removed. On a refusal dest is reduced to its .git file, as Extract
// leaves it.
func Sync(r io.Reader, dest string, caps Caps, base []BaseFile) (Summary, Synced, error) {
	files, gitlinks, err := sortBase(base)
	if err != nil {
		return Summary{}, Synced{}, err
	}
	l, err := openLane(dest)
	if err != nil {
		return Summary{}, Synced{}, failed("", err, "open worktree")
	}
	defer func() { _ = l.Close() }()
	s := newSyncer(l, files, gitlinks)
	sum, err := walk(r, caps, s.put)
	if err == nil {
		err = s.removeUnseen()
	}
	if err != nil {
		if cerr := reduceToGitFile(l); cerr != nil {
			err = errors.Join(err, fmt.Errorf("reduce %s to its .git file: %w", dest, cerr))
		}
		return sum, Synced{}, err
	}
	return sum, Synced{Changed: slices.Sorted(maps.Keys(s.changed))}, nil
}

// syncer is Sync's sink and its record of what the archive held.
type syncer struct {
	*writer
	base     map[string]*BaseFile
	gitlinks map[string]bool
	// seen are the archive's paths, directories included (made or
	// implied).
	seen map[string]bool
	// changed are the files and symlinks written or removed.
	changed map[string]bool
	cmp     []byte
}

func newSyncer(l *lane, files []*BaseFile, gitlinks map[string]bool) *syncer {
	s := &syncer{
		writer: newWriter(l), base: make(map[string]*BaseFile, len(files)), gitlinks: gitlinks,
		seen: make(map[string]bool, len(files)), changed: map[string]bool{}, cmp: make([]byte, copyBuffer),
	}
	for _, f := range files {
		s.base[f.Path] = f
	}
	return s
}

func (s *syncer) put(m *member, data io.Reader) *Refusal {
	for _, dir := range m.newDirs {
		if ref := s.ensureDir(m.raw, dir); ref != nil {
			return ref
		}
	}
	s.seen[m.name] = true
	switch m.kind {
	case dirNode:
		return s.ensureDir(m.raw, m.name)
	case linkNode:
		if old := s.base[m.name]; old != nil && old.Mode == ModeSymlink && string(old.Blob) == m.target {
			return nil
		}
		if ref := s.clear(m.raw, m.name); ref != nil {
			return ref
		}
		s.changed[m.name] = true
		return s.symlink(m)
	case hardlinkNode:
		// Written as a link to the earlier member; the diff tells
		// whether the content at this path changed.
		if ref := s.clear(m.raw, m.name); ref != nil {
			return ref
		}
		s.changed[m.name] = true
		return s.hardlink(m)
	default:
		return s.file(m, data)
	}
}

// ensureDir makes name a directory: one there already stays, anything
// else there is removed first.
func (s *syncer) ensureDir(raw, name string) *Refusal {
	s.seen[name] = true
	st, err := s.lane.lstat(name)
	switch {
	case err == nil && kindOf(&st) == unix.S_IFDIR:
		return nil
	case err == nil:
		if ref := s.clear(raw, name); ref != nil {
			return ref
		}
	case !errors.Is(err, fs.ErrNotExist):
		return osFailed(raw, err, "inspect "+quoted(name))
	}
	return s.mkdir(raw, name)
}

// file leaves a regular file equal to base's as it is and writes any
// other in place of what is there.
func (s *syncer) file(m *member, data io.Reader) *Refusal {
	mode := ModeFile
	if m.exec {
		mode = ModeExecutable
	}
	old := s.base[m.name]
	if old == nil || old.Mode != mode || int64(len(old.Blob)) != m.size {
		return s.replace(m, data)
	}
	same, n, chunk, err := s.compare(data, old.Blob)
	if err != nil {
		return nil // the walk reports the stream's error at this member
	}
	if same {
		return nil
	}
	return s.replace(m, io.MultiReader(bytes.NewReader(old.Blob[:n]), bytes.NewReader(chunk), data))
}

// compare reads data while it matches blob. same reports a full match;
// otherwise the first n bytes matched and chunk is what was read after
// them.
func (s *syncer) compare(data io.Reader, blob []byte) (same bool, n int, chunk []byte, err error) {
	for {
		k, err := io.ReadFull(data, s.cmp[:min(len(s.cmp), max(len(blob)-n, 1))])
		if k > 0 {
			if n+k > len(blob) || !bytes.Equal(s.cmp[:k], blob[n:n+k]) {
				return false, n, bytes.Clone(s.cmp[:k]), nil
			}
			n += k
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return n == len(blob), n, nil, nil
		case err != nil:
			return false, n, nil, err
		}
	}
}

// replace writes m's file in place of whatever is at its name.
func (s *syncer) replace(m *member, data io.Reader) *Refusal {
	s.changed[m.name] = true
	// A base file in place is rewritten where it is: truncating costs the
	// file system far less than an unlink and a create.
	if f, err := s.lane.rewrite(m.name, s.modeOf(m.name)); err == nil {
		return s.fill(m, f, data)
	}
	if ref := s.clear(m.raw, m.name); ref != nil {
		return ref
	}
	return s.create(m, data)
}

// clear removes what is at name (a directory with everything in it),
// nothing followed: a name whose parent is now a symlink or a file is not
// there, so nothing is removed through the link. Nothing there is fine.
// Base's files under a removed directory count as changed.
func (s *syncer) clear(raw, name string) *Refusal {
	st, err := s.lane.lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return osFailed(raw, err, "inspect "+quoted(name))
	}
	if kindOf(&st) == unix.S_IFDIR {
		prefix := name + "/"
		for p := range s.base {
			if strings.HasPrefix(p, prefix) {
				s.changed[p] = true
			}
		}
	} else if _, ok := s.base[name]; ok {
		s.changed[name] = true
	}
	err = s.lane.remove(name)
	if err != nil {
		return osFailed(raw, err, "replace "+quoted(name))
	}
	return nil
}

// removeUnseen removes base's entries the archive did not hold: first
// the directories (base's own or implied by its paths, gitlinks
// included) it held no directory for, outermost first, then the files
// and symlinks left.
func (s *syncer) removeUnseen() error {
	dirs := map[string]bool{}
	for p := range s.gitlinks {
		dirs[p] = true
	}
	for p := range s.base {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	gone := map[string]bool{}
	under := func(p string) bool {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if gone[d] {
				return true
			}
		}
		return false
	}
	outermostFirst := func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") }
	for _, d := range slices.SortedFunc(maps.Keys(dirs), outermostFirst) {
		if s.seen[d] || under(d) {
			continue
		}
		if ref := s.clear(d, d); ref != nil {
			return ref
		}
		gone[d] = true
	}
	for p := range s.base {
		if s.seen[p] || under(p) {
			continue
		}
		if ref := s.clear(p, p); ref != nil {
			return ref
		}
		s.changed[p] = true
	}
	return nil
}

// modeOf is the permission Populate gave base's file at name (0: none).
func (s *syncer) modeOf(name string) fs.FileMode {
	switch f := s.base[name]; {
	case f == nil:
		return 0
	case f.Mode == ModeExecutable:
		return execMode
	case f.Mode == ModeFile:
		return fileMode
	}
	return 0
}
