package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
)

// BlobMode is a git tree entry's mode.
type BlobMode uint32

// The modes a git tree holds.
const (
	ModeFile       BlobMode = 0o100644
	ModeExecutable BlobMode = 0o100755
	ModeSymlink    BlobMode = 0o120000
	// ModeGitlink is a submodule's commit; such entries, and whatever
	// the exported tree holds at their paths, are left out of the diff.
	ModeGitlink BlobMode = 0o160000
)

// MaxFilesChanged is how many paths Diff.Files lists at most.
const MaxFilesChanged = 1000

var (
	// ErrBaseTree means the base tree handed to DiffTree is malformed:
	// a duplicate, empty or non-relative path, or an unknown mode.
	ErrBaseTree = errors.New("invalid base tree")
	// ErrTreeChanged means a file of the exported tree was replaced
	// while it was read, which cannot happen once every worker process
	// is gone.
	ErrTreeChanged = errors.New("exported tree changed while it was read")
)

// BaseFile is one entry of the base commit's tree, as the host's own
// repository lists it (`git ls-tree -r -z`) and reads it (`git cat-file
// --batch`): operator content, never the worker's.
type BaseFile struct {
	// Path is slash-separated and relative to the tree's root.
	Path string
	Mode BlobMode
	// Blob is the content: a file's bytes or a symlink's target.
	Blob []byte
}

// DiffOptions tune DiffTree.
type DiffOptions struct {
	// MaxPatchMB caps the patch at this many MiB (max_patch_mb); a
	// longer patch is cut there and marked. Zero or less keeps nothing
	// but the mark, like the export caps, where zero is a cap too.
	MaxPatchMB int
	// Abbrev is the length of the blob ids in `index` lines; zero means
	// DefaultAbbrev.
	Abbrev int
	// MaxReadBytes, when above zero, bounds the bytes of changed files
	// read for the patch and the stat. A tree over its budget (the worker
	// made thousands of sparse files before the breach stopped it) could
	// otherwise hold terabytes to read; past the bound the patch is cut
	// and each further file is counted by its size, as binary, unread.
	MaxReadBytes int64
}

// Diff is what the exported tree changed against the base.
type Diff struct {
	// Files are the paths added, deleted or modified (content, exec
	// bit, symlink target or type), sorted, at most MaxFilesChanged.
	Files []string
	// FilesTruncated is set when there were more.
	FilesTruncated bool
	// Stat is `git diff --no-renames --stat` of the change, cut at
	// StatCap characters with a marker; "" when nothing changed.
	Stat string
	// PatchBytes is what was written to the patch writer, marker
	// included.
	PatchBytes int64
	// PatchTruncated is set when the patch was cut at MaxPatchMB.
	PatchTruncated bool
}

// change is one path that differs; old or new is nil when the path is
// absent on that side.
type change struct {
	path string
	old  *BaseFile
	new  *diskEntry
}

// DiffTree compares the exported tree beneath root with the base commit's
// tree and writes the patch to patch (nil: none). It computes everything
// itself, so no git runs on worker content and nothing in the tree, its
// `.gitattributes` least of all, changes the result: no textconv, no
// diff driver, no binary override, no eol conversion.
//
// The output is what `git diff --no-renames <base> <tree>` and its
// `--stat` print with no configuration, except that the `index` lines
// carry opts.Abbrev hex digits where git would lengthen an abbreviation
// that is ambiguous in its object store. Files are compared by size, then
// content; blobs are hashed only for the index lines of changed files.
func DiffTree(ctx context.Context, root *os.Root, base []BaseFile, patch io.Writer, opts DiffOptions) (*Diff, error) {
	return diffTree(ctx, root, base, nil, patch, opts)
}

// DiffPaths is DiffTree for a tree known to equal base everywhere but at
// paths (a Sync's Changed): only those paths are looked at, on disk and
// in base, so the cost follows the change, not the tree.
func DiffPaths(ctx context.Context, root *os.Root, base []BaseFile, paths []string, patch io.Writer, opts DiffOptions) (*Diff, error) {
	if paths == nil {
		paths = []string{}
	}
	return diffTree(ctx, root, base, paths, patch, opts)
}

// diffTree diffs the whole tree (paths nil) or only paths.
func diffTree(ctx context.Context, root *os.Root, base []BaseFile, paths []string, patch io.Writer, opts DiffOptions) (*Diff, error) {
	baseFiles, gitlinks, err := sortBase(base)
	if err != nil {
		return nil, err
	}
	var disk []diskEntry
	if paths == nil {
		disk, err = readTree(ctx, root, gitlinks)
	} else {
		want := make(map[string]bool, len(paths))
		for _, p := range paths {
			want[p] = true
		}
		baseFiles = slices.DeleteFunc(baseFiles, func(f *BaseFile) bool { return !want[f.Path] })
		disk, err = readPaths(ctx, root, paths, gitlinks)
	}
	if err != nil {
		return nil, err
	}
	changes, err := pairUp(ctx, root, baseFiles, disk)
	if err != nil {
		return nil, err
	}
	d := &Diff{}
	for _, c := range changes {
		if len(d.Files) == MaxFilesChanged {
			d.FilesTruncated = true
			break
		}
		d.Files = append(d.Files, c.path)
	}
	if patch == nil {
		patch = io.Discard
	}
	limitMB := max(opts.MaxPatchMB, 0)
	cw := &capWriter{w: patch, limit: int64(limitMB) << 20}
	abbrev := opts.Abbrev
	if abbrev <= 0 {
		abbrev = DefaultAbbrev
	}
	stat := make([]statEntry, 0, len(changes))
	var buf bytes.Buffer
	links := &linkCache{}
	var read int64
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("diff exported tree: %w", err)
		}
		if c.new != nil && c.new.mode != ModeSymlink && opts.MaxReadBytes > 0 {
			if read+c.new.size > opts.MaxReadBytes {
				cw.cut = true
				e := statEntry{name: quoteName(c.path), binary: true, added: c.new.size}
				if c.old != nil {
					e.deleted = int64(len(c.old.Blob))
				}
				stat = append(stat, e)
				continue
			}
			read += c.new.size
		}
		a, b, err := sides(root, c, links)
		if err != nil {
			return nil, err
		}
		if cw.cut {
			// Past the cap only the stat is still wanted.
			stat = append(stat, fileDiff(nil, c.path, a, b, abbrev))
			continue
		}
		buf.Reset()
		stat = append(stat, fileDiff(&buf, c.path, a, b, abbrev))
		if _, err := cw.Write(buf.Bytes()); err != nil {
			return nil, fmt.Errorf("write patch of %q: %w", c.path, err)
		}
	}
	if cw.cut {
		n, err := io.WriteString(patch, patchCutMarker(limitMB))
		cw.n += int64(n)
		if err != nil {
			return nil, fmt.Errorf("write patch truncation marker: %w", err)
		}
	}
	d.PatchBytes, d.PatchTruncated = cw.n, cw.cut
	d.Stat = capStat(renderStat(stat))
	return d, nil
}

// sortBase checks the base entries and returns the blobs by path, and the
// gitlink paths apart.
func sortBase(base []BaseFile) ([]*BaseFile, map[string]bool, error) {
	files := make([]*BaseFile, 0, len(base))
	gitlinks := map[string]bool{}
	for i := range base {
		f := &base[i]
		if f.Path == "" || strings.HasPrefix(f.Path, "/") || strings.HasSuffix(f.Path, "/") {
			return nil, nil, fmt.Errorf("base entry %q: %w: path not relative", f.Path, ErrBaseTree)
		}
		switch f.Mode {
		case ModeFile, ModeExecutable, ModeSymlink:
			files = append(files, f)
		case ModeGitlink:
			gitlinks[f.Path] = true
		default:
			return nil, nil, fmt.Errorf("base entry %q: %w: mode %06o", f.Path, ErrBaseTree, f.Mode)
		}
	}
	slices.SortFunc(files, func(a, b *BaseFile) int { return strings.Compare(a.Path, b.Path) })
	for i := 1; i < len(files); i++ {
		if files[i].Path == files[i-1].Path {
			return nil, nil, fmt.Errorf("base entry %q: %w: listed twice", files[i].Path, ErrBaseTree)
		}
	}
	return files, gitlinks, nil
}

// pairUp walks both sorted lists and returns the paths that differ.
func pairUp(ctx context.Context, root *os.Root, base []*BaseFile, disk []diskEntry) ([]change, error) {
	var out []change
	i, j := 0, 0
	for i < len(base) || j < len(disk) {
		switch {
		case j == len(disk) || i < len(base) && base[i].Path < disk[j].path:
			out = append(out, change{path: base[i].Path, old: base[i]})
			i++
		case i == len(base) || disk[j].path < base[i].Path:
			out = append(out, change{path: disk[j].path, new: &disk[j]})
			j++
		default:
			differs, err := differ(root, base[i], &disk[j])
			if err != nil {
				return nil, err
			}
			if differs {
				out = append(out, change{path: disk[j].path, old: base[i], new: &disk[j]})
			}
			i++
			j++
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("diff exported tree: %w", err)
		}
	}
	return out, nil
}

// differ compares a base entry with the exported one at the same path:
// mode, then size, then, only when those agree, the bytes.
func differ(root *os.Root, old *BaseFile, e *diskEntry) (bool, error) {
	if old.Mode != e.mode || int64(len(old.Blob)) != e.size {
		return true, nil
	}
	data, err := readContent(root, *e)
	if err != nil {
		return false, err
	}
	return !bytes.Equal(data, old.Blob), nil
}

// sides loads both sides of a change; a file with several hard links is
// read and hashed once (links).
func sides(root *os.Root, c change, links *linkCache) (side, side, error) {
	var a, b side
	if c.old != nil {
		a = side{present: true, mode: c.old.Mode, data: c.old.Blob}
	}
	if c.new != nil {
		if cached, ok := links.get(c.new); ok {
			cached.mode = c.new.mode
			return a, cached, nil
		}
		data, err := readContent(root, *c.new)
		if err != nil {
			return a, b, err
		}
		b = side{present: true, mode: c.new.mode, data: data}
		links.put(c.new, &b)
	}
	return a, b, nil
}

// maxLinkCache bounds the bytes linkCache holds.
const maxLinkCache = 512 << 20

// linkCache holds the content and blob id of files with several hard
// links, by inode: 500 names of one 100 MB file cost one read and one
// hash, not 500.
type linkCache struct {
	byInode map[[2]uint64]side
	bytes   int
}

func inodeOf(e *diskEntry) ([2]uint64, bool) {
	if e.info == nil {
		return [2]uint64{}, false
	}
	st, ok := e.info.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true //nolint:unconvert // Dev is uint64 on Linux, int32 on macOS
}

func (l *linkCache) get(e *diskEntry) (side, bool) {
	key, ok := inodeOf(e)
	if !ok || l.byInode == nil {
		return side{}, false
	}
	s, ok := l.byInode[key]
	return s, ok
}

func (l *linkCache) put(e *diskEntry, s *side) {
	key, ok := inodeOf(e)
	if !ok || len(s.data) > maxLinkCache {
		return
	}
	if l.byInode == nil || l.bytes+len(s.data) > maxLinkCache {
		l.byInode, l.bytes = map[[2]uint64]side{}, 0
	}
	s.id = blobID(s.data)
	l.byInode[key] = *s
	l.bytes += len(s.data)
}
