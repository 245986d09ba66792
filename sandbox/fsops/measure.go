package fsops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Limits are caps on a tree's size. A zero field is no cap. The field set
// is sandbox.Limits', so one converts to the other.
type Limits struct {
	MaxBytes   int64 // allocated bytes
	MaxEntries int64 // entries of any kind below the root
}

// Measurement is what a walk of the tree found (E-39).
type Measurement struct {
	// Bytes is, for every entry, the larger of the space allocated to it
	// (st_blocks × 512) and, for a regular file, its size: what the tree
	// costs on disk, and what an export writing it costs even when it is
	// sparse (20 files of 500 MB holding 28 KB count 10 GB). Directories
	// and links count their allocation; the root does not. A file with
	// several hard links counts once.
	Bytes int64
	// Entries counts every entry below the root: files, directories,
	// links (never followed) and the ignored and .git ones alike.
	Entries int64
	// EscapingSymlinks are the root-relative paths of links whose target
	// is absolute or leads out of the tree from the link's directory,
	// sorted. A walk stopped by a cap lists those it saw.
	EscapingSymlinks []string
	// Violation is the first breach found, in the contract's words
	// ("worktree exceeds <MB> MB", "worktree exceeds <n> entries"), or "".
	Violation string
	// Unreadable are the root-relative paths of directories the walk
	// could not read (a worker's chmod 000), sorted. Each is counted as
	// an entry; what it holds is not, so whoever relies on the totals
	// backs them with a measurement that can read everything (docker's
	// of the volume from outside, the export's hard caps).
	Unreadable []string
	// LongPaths are the files and links whose path below the root is
	// longer than LongPath bytes (at most 1000 of them, sorted): a reader
	// that opens the tree by full path under a prefix of its own (the
	// docker daemon exporting a volume) cannot reach them, past PATH_MAX.
	LongPaths []string
}

// LongPath is the root-relative path length past which Measurement lists
// an entry in LongPaths: PATH_MAX (4096) less room for a daemon's own
// prefix (/var/lib/docker/volumes/<name>/_data/ and the like).
const LongPath = 3800

// maxLongListed bounds Measurement.LongPaths.
const maxLongListed = 1000

const (
	// measureChunk is how many entries are read from a directory at a
	// time, so a huge directory is neither held in memory whole nor read
	// to its end once a cap has tripped.
	measureChunk = 1024
	// measureMaxWorkers bounds the directories read at once.
	measureMaxWorkers = 8
)

// Measure walks the whole tree without following links and totals it.
// It stops at the entry that takes the tree past a cap (Entries is then
// the cap plus one), so callers that want full totals whatever the size
// (finalization) pass zero Limits. An unreadable directory is recorded and
// the walk goes on. The error is ctx's, or for a tree that is gone (its
// root closed).
//
// Directories are read by up to GOMAXPROCS goroutines (at most 8): the
// walk is one lstat per entry, and the kernel's stat cost bounds it.
func (f *FS) Measure(ctx context.Context, limits Limits) (Measurement, error) {
	w := &measureWalk{
		f:      f,
		ctx:    ctx,
		limits: limits,
		slots:  make(chan struct{}, min(runtime.GOMAXPROCS(0), measureMaxWorkers)-1),
	}
	w.dir(measureDir{rel: "."})
	w.wg.Wait()
	slices.Sort(w.m.EscapingSymlinks)
	slices.Sort(w.m.Unreadable)
	slices.Sort(w.m.LongPaths)
	if err := ctx.Err(); err != nil {
		return w.m, err
	}
	return w.m, w.err
}

// measureWalk is one Measure call's state.
type measureWalk struct {
	f      *FS
	ctx    context.Context
	limits Limits
	// slots holds a token for each extra goroutine reading a directory;
	// when none is free the reader goes down itself.
	slots chan struct{}
	wg    sync.WaitGroup

	mu  sync.Mutex
	m   Measurement // guarded by mu
	err error       // guarded by mu: the root was closed
	// linked are the files with more than one link already counted, by
	// device and inode, so each is counted once.
	linked  map[[2]uint64]bool // guarded by mu
	stopped atomic.Bool        // a cap tripped or the root closed: every reader stops
}

// measureDir is a directory to read, with what its parent's listing saw
// of it, so a directory swapped for a link before it is opened is not
// walked through.
type measureDir struct {
	rel      string
	dev, ino uint64
}

// measured is one entry, stat'ed and judged outside the lock.
type measured struct {
	rel      string
	bytes    int64
	dir      *measureDir
	escaping bool
	// inode is set for a regular file with several links.
	inode *[2]uint64
}

func (w *measureWalk) done() bool { return w.stopped.Load() || w.ctx.Err() != nil }

// dir reads the directory d, counts its entries and then walks its
// subdirectories. It closes d before going down, so open descriptors stay
// bounded by the workers, not the tree's depth.
func (w *measureWalk) dir(d measureDir) {
	if w.done() {
		return
	}
	fh, err := w.f.openForMeasure(d)
	if errors.Is(err, errMeasureGone) {
		return
	}
	if errors.Is(err, os.ErrClosed) {
		w.mu.Lock()
		w.err = fmt.Errorf("measure %s: %w", w.f.display, err)
		w.mu.Unlock()
		w.stopped.Store(true)
		return
	}
	if err != nil {
		w.unreadable(d.rel)
		return
	}
	var subdirs []measureDir
	for !w.done() {
		// A directory opened in a root lstats each entry relative to its
		// own descriptor as it reads, so Info below costs nothing more.
		entries, err := fh.ReadDir(measureChunk)
		batch := make([]measured, 0, len(entries))
		for _, e := range entries {
			if m, ok := w.f.measureEntry(d.rel, e); ok {
				batch = append(batch, m)
			}
		}
		if !w.fold(batch) {
			break
		}
		for _, m := range batch {
			if m.dir != nil {
				subdirs = append(subdirs, *m.dir)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			w.unreadable(d.rel)
			break
		}
	}
	_ = fh.Close()
	for _, sub := range subdirs {
		w.descend(sub)
	}
}

// descend walks sub on a goroutine of its own when a slot is free, else
// on this one.
func (w *measureWalk) descend(sub measureDir) {
	select {
	case w.slots <- struct{}{}:
		w.wg.Go(func() {
			defer func() { <-w.slots }()
			w.dir(sub)
		})
	default:
		w.dir(sub)
	}
}

// fold adds a batch to the totals one entry at a time, so a cap trips at
// exactly the entry that passes it. It reports whether the walk goes on.
func (w *measureWalk) fold(batch []measured) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped.Load() {
		return false
	}
	for _, e := range batch {
		w.m.Entries++
		if e.dir == nil && len(e.rel) > LongPath && len(w.m.LongPaths) < maxLongListed {
			w.m.LongPaths = append(w.m.LongPaths, e.rel)
		}
		if e.inode != nil {
			if w.linked == nil {
				w.linked = map[[2]uint64]bool{}
			}
			if w.linked[*e.inode] {
				e.bytes = 0 // counted at its first name
			}
			w.linked[*e.inode] = true
		}
		w.m.Bytes += e.bytes
		if e.escaping {
			w.m.EscapingSymlinks = append(w.m.EscapingSymlinks, e.rel)
		}
		if breach := w.limits.breach(w.m); breach != "" {
			if w.m.Violation == "" {
				w.m.Violation = breach
			}
			w.stopped.Store(true)
			return false
		}
	}
	return true
}

// unreadable records a directory the walk could not read: it is counted
// (its parent's listing did) and listed, not a breach.
func (w *measureWalk) unreadable(rel string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m.Unreadable = append(w.m.Unreadable, rel)
}

// measureEntry stats and judges one entry of directory dir; false when it
// vanished while being read.
func (f *FS) measureEntry(dir string, e fs.DirEntry) (measured, bool) {
	info, err := e.Info()
	if err != nil {
		return measured{}, false
	}
	m := measured{rel: joinRel(dir, e.Name())}
	st, ok := info.Sys().(*syscall.Stat_t)
	if ok {
		m.bytes = st.Blocks * 512
		if info.Mode().IsRegular() {
			m.bytes = max(m.bytes, st.Size)
			if st.Nlink > 1 {
				m.inode = &[2]uint64{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev is uint64 on Linux, int32 on macOS
			}
		}
	}
	switch {
	case info.IsDir() && ok:
		m.dir = &measureDir{rel: m.rel, dev: uint64(st.Dev), ino: st.Ino} //nolint:unconvert // Dev is uint64 on Linux, int32 on macOS
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := f.root.Readlink(m.rel)
		m.escaping = err == nil && linkEscapes(dir, target)
	}
	return m, true
}

// errMeasureGone is a directory that vanished or changed into something
// else between its listing and its opening: nothing left to count.
var errMeasureGone = errors.New("directory gone")

// openForMeasure opens d, making sure it is still what the listing saw.
func (f *FS) openForMeasure(d measureDir) (*os.File, error) {
	fh, err := openDirForMeasure(f.root, d.rel)
	if errors.Is(err, fs.ErrNotExist) && d.rel != "." {
		return nil, errMeasureGone
	}
	if err != nil || d.rel == "." {
		return fh, err
	}
	fi, err := fh.Stat()
	if err != nil {
		_ = fh.Close()
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || uint64(st.Dev) != d.dev || st.Ino != d.ino { //nolint:unconvert // Dev is uint64 on Linux, int32 on macOS
		_ = fh.Close()
		return nil, errMeasureGone
	}
	return fh, nil
}

// openDirForMeasure opens a directory for Measure. Tests replace it to
// stand for a directory the process may not read, which a test running
// as root cannot make otherwise.
var openDirForMeasure = func(root *os.Root, rel string) (*os.File, error) {
	return root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
}

// breach is the cap m has gone past, in the contract's words, or "".
func (l Limits) breach(m Measurement) string {
	switch {
	case l.MaxBytes > 0 && m.Bytes > l.MaxBytes:
		return fmt.Sprintf("worktree exceeds %d MB", l.MaxBytes>>20)
	case l.MaxEntries > 0 && m.Entries > l.MaxEntries:
		return fmt.Sprintf("worktree exceeds %d entries", l.MaxEntries)
	}
	return ""
}

// linkEscapes reports whether a link in directory dir (root-relative)
// with this target is absolute or leads out of the tree. Only the text is
// judged, as the contract's escaping_symlinks asks: a relative target
// through other links is not followed.
func linkEscapes(dir, target string) bool {
	if path.IsAbs(target) {
		return true
	}
	joined := path.Join(dir, target)
	return joined == ".." || strings.HasPrefix(joined, "../")
}

// StatBytes is the space allocated to the entry at rel (root-relative,
// not followed if it is a link), for callers that account a single
// file's change between walks: its size after a write minus before. It
// counts that entry alone; directories a write created are not in it.
func (f *FS) StatBytes(rel string) (bytes int64, exists bool) {
	fi, err := f.root.Lstat(rel)
	if err != nil {
		return 0, false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512, true
	}
	return 0, true
}
