package seal

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/sandbox/fsops"
	"github.com/dirtywork/dirtywork/transcript"
)

// maxIgnoreFile bounds a .gitignore read: a larger one is no rules (as
// grep reads them).
const maxIgnoreFile = 1 << 20

// walker is one Seal or Snapshot: a walk of the tree by directory
// descriptors, nothing followed, judging each entry against the baseline
// and recording what stays in the manifest.
type walker struct {
	ctx     context.Context
	path    string
	root    *os.File
	b       Baseline
	since   int64
	tracked map[string]uint32
	// trackedDirs are the directories the base tree holds paths under:
	// an ignore rule never takes such a directory out whole.
	trackedDirs map[string]bool
	// recordOnly records the tree as it is (Snapshot): nothing is judged.
	recordOnly bool
	// readOnly never opens up what its owner made unreadable (Prehash,
	// which walks beside the worker): such an entry is an error.
	readOnly bool

	report   Report
	manifest *Manifest
	// removals are what apply takes out, in the order found.
	removals []removal
	// strips are the files and directories whose setuid and setgid bits
	// apply clears, with their mode.
	strips []strip
	// sums caches the digests of files with several links.
	sums map[[2]uint64][32]byte
	// buf is this goroutine's read buffer for file digests.
	buf []byte
	// pending are the files of the directory being walked whose digests
	// its flush takes; digest are the helpers that share the reading.
	pending []pendingFile
	digest  *digesters
	// linked are the paths of the regular files with several links the
	// walk met outside a repository, by device and inode.
	linked map[[2]uint64][]string
}

// removal is an entry apply takes out; dir says it is a directory.
type removal struct {
	rel string
	dir bool
}

type strip struct {
	rel  string
	mode uint32
}

func newWalker(ctx context.Context, dir string, b Baseline) (*walker, error) {
	return newWalkerWith(ctx, dir, b, helpersFor())
}

// newWalkerWith is newWalker with this many helpers reading files.
func newWalkerWith(ctx context.Context, dir string, b Baseline, helpers int) (*walker, error) {
	root, err := openRoot(dir)
	if err != nil {
		return nil, err
	}
	w := &walker{
		ctx: ctx, path: dir, root: root, b: b, tracked: b.Tracked, trackedDirs: map[string]bool{},
		manifest: newManifest(b.KeepRootGit), sums: map[[2]uint64][32]byte{}, buf: make([]byte, digestBufSize), digest: newDigesters(helpers), linked: map[[2]uint64][]string{},
	}
	switch {
	case b.Untimed:
		w.since = math.MaxInt64 // nothing is the run's by its time
	case !b.Since.IsZero():
		w.since = b.Since.UnixNano()
	}
	for p := range b.Tracked {
		for d := path.Dir(p); d != "." && !w.trackedDirs[d]; d = path.Dir(d) {
			w.trackedDirs[d] = true
		}
	}
	return w, nil
}

func (w *walker) close() {
	w.digest.stop()
	_ = w.root.Close() // a directory opened for reading
}

// touched reports whether an entry with this status was made or changed
// after the baseline.
func (w *walker) touched(st *unix.Stat_t) bool { return ctimeNS(st) > w.since }

// scan walks the whole tree from the root.
func (w *walker) scan() error {
	rules := fsops.ParseIgnore(w.b.Exclude, "")
	_, err := w.dir(int(w.root.Fd()), ".", rules, false)
	return err
}

// linksIntoRepositories adds to the repositories the files outside them
// that are hard links to a file inside one: they share the repository's
// fate (quarantined, taken out), or the repository's config or hooks
// would stay in the tree under another name.
func (w *walker) linksIntoRepositories() error {
	if len(w.report.Repositories) == 0 || len(w.linked) == 0 {
		return nil
	}
	root, err := os.OpenRoot(w.path)
	if err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	defer func() { _ = root.Close() }() // a directory opened for reading
	inRepo := map[[2]uint64]bool{}
	for _, repo := range w.report.Repositories {
		err := fs.WalkDir(root.FS(), repo, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil // what cannot be read holds no link we could follow
			}
			if info, ierr := d.Info(); ierr == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
					inRepo[[2]uint64{uint64(st.Dev), st.Ino}] = true //nolint:unconvert // Dev is uint64 on Linux, int32 on macOS
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seal: walk %s: %w", quote(repo), err)
		}
	}
	for key, paths := range w.linked {
		if !inRepo[key] {
			continue
		}
		for _, p := range paths {
			w.report.Repositories = append(w.report.Repositories, p)
			w.removals = append(w.removals, removal{rel: p})
			w.manifest.dropUnder(p)
		}
	}
	return nil
}

// dirSummary is what a directory held, for its parent: whether every
// entry in it was a git-ignored one the worker touched (so the directory
// goes, and is reported, as one), and the totals taken out.
type dirSummary struct {
	allIgnoredByWorker bool
	entries, bytes     int64
	// reported are the Ignored entries its walk added for what lies
	// below it (undone when the directory is reported whole).
	reported int
}

// entry is one directory entry and its status.
type entry struct {
	name string
	rel  string
	st   unix.Stat_t
}

// dir walks the directory open at fd (rel its path, "." for the root).
// rules are the ignore rules in force for its entries before its own
// .gitignore is read; ignored says the directory itself is ignored, so
// every entry in it not tracked is.
func (w *walker) dir(fd int, rel string, rules fsops.IgnoreRules, ignored bool) (dirSummary, error) {
	entries, err := list(fd, rel)
	if err != nil {
		return dirSummary{}, err
	}
	return w.walkEntries(fd, rel, entries, rules, ignored)
}

// walkEntries is dir on the entries already listed.
func (w *walker) walkEntries(fd int, rel string, entries []entry, rules fsops.IgnoreRules, ignored bool) (dirSummary, error) {
	if err := w.ctx.Err(); err != nil {
		return dirSummary{}, err
	}
	if !w.recordOnly {
		if data, ok := readIgnoreFile(fd, entries); ok {
			rules = rules.Then(fsops.ParseIgnore(data, rel))
		}
	}
	outer := w.pending
	w.pending = nil
	defer func() { w.pending = outer }()
	sum := dirSummary{allIgnoredByWorker: true}
	startReported := len(w.report.Ignored)
	for i := range entries {
		e := &entries[i]
		e.rel = joinRel(rel, e.name)
		all, n, b, err := w.entry(fd, e, rules, ignored)
		if err != nil {
			return dirSummary{}, err
		}
		sum.allIgnoredByWorker = sum.allIgnoredByWorker && all
		sum.entries += n
		sum.bytes += b
	}
	if err := w.flushFiles(fd); err != nil {
		return dirSummary{}, err
	}
	sum.reported = len(w.report.Ignored) - startReported
	return sum, nil
}

// entry judges one entry of the directory open at dirfd. It returns
// whether the entry is a git-ignored one the worker touched and will be
// taken out with everything under it, and what that holds.
func (w *walker) entry(dirfd int, e *entry, rules fsops.IgnoreRules, inIgnored bool) (bool, int64, int64, error) {
	kind := stMode(&e.st) & unix.S_IFMT
	if w.recordOnly {
		if e.rel == ".git" && w.b.KeepRootGit {
			return false, 0, 0, nil
		}
		return false, 0, 0, w.record(dirfd, e, kind, rules)
	}
	switch {
	case strings.EqualFold(e.name, ".git"):
		if e.rel == ".git" && w.b.KeepRootGit {
			return false, 0, 0, nil
		}
		// Whoever made it (a git dependency the setup fetched included),
		// no lane may hold it: quarantined.
		w.report.Repositories = append(w.report.Repositories, e.rel)
		w.removals = append(w.removals, removal{rel: e.rel, dir: kind == unix.S_IFDIR})
		return false, 0, 0, nil
	case w.b.DropLongPaths && len(e.rel) > LongPath:
		// Listed as the files and links it holds, which is what an
		// export would have carried.
		if err := w.listLong(dirfd, e); err != nil {
			return false, 0, 0, err
		}
		w.removals = append(w.removals, removal{rel: e.rel, dir: kind == unix.S_IFDIR})
		return false, 0, 0, nil
	}
	_, tracked := w.tracked[e.rel]
	switch kind {
	case unix.S_IFREG:
		if !tracked && (inIgnored || rules.Ignored(e.rel, false)) {
			size := max(e.st.Size, e.st.Blocks*512)
			if w.ignoredIsTheRuns(&e.st) {
				w.removals = append(w.removals, removal{rel: e.rel})
				w.addIgnored(e.rel, 1, size, w.maker(), "removed")
				return true, 1, size, nil
			}
			w.addIgnored(e.rel, 1, size, "setup", "kept")
		}
		if e.st.Nlink > 1 {
			key := [2]uint64{uint64(e.st.Dev), e.st.Ino} //nolint:unconvert // Dev is uint64 on Linux, int32 on macOS
			w.linked[key] = append(w.linked[key], e.rel)
		}
		w.noteModes(e, tracked)
		return false, 0, 0, w.record(dirfd, e, kind, rules)
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, e.name)
		if err != nil {
			return false, 0, 0, fmt.Errorf("seal: read link %s: %w", quote(e.rel), err)
		}
		if linkEscapes(path.Dir(e.rel), target) {
			if w.touched(&e.st) {
				w.report.Links = append(w.report.Links, Link{Path: e.rel, Target: target})
				w.removals = append(w.removals, removal{rel: e.rel})
				return false, 0, 0, nil
			}
			w.report.KeptLinks = append(w.report.KeptLinks, Link{Path: e.rel, Target: target})
		}
		if !tracked && (inIgnored || rules.Ignored(e.rel, false)) {
			if w.ignoredIsTheRuns(&e.st) {
				w.removals = append(w.removals, removal{rel: e.rel})
				w.addIgnored(e.rel, 1, 0, w.maker(), "removed")
				return true, 1, 0, nil
			}
			w.addIgnored(e.rel, 1, 0, "setup", "kept")
		}
		return false, 0, 0, w.recordLink(e, target)
	case unix.S_IFDIR:
		return w.subdir(dirfd, e, rules, inIgnored)
	default:
		// FIFOs, sockets, devices: no export brings them.
		w.report.Special = append(w.report.Special, e.rel)
		w.removals = append(w.removals, removal{rel: e.rel})
		return false, 0, 0, nil
	}
}

// listLong adds e, or the files and links below it, to Report.Long.
func (w *walker) listLong(dirfd int, e *entry) error {
	if len(w.report.Long) > maxListed {
		return nil
	}
	if stMode(&e.st)&unix.S_IFMT != unix.S_IFDIR {
		w.report.Long = append(w.report.Long, e.rel)
		return nil
	}
	fd, err := w.openDir(dirfd, e)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	entries, err := list(fd, e.rel)
	if err != nil {
		return err
	}
	for i := range entries {
		c := &entries[i]
		c.rel = joinRel(e.rel, c.name)
		if err := w.listLong(fd, c); err != nil {
			return err
		}
	}
	return nil
}

// subdir judges the directory e: a repository the run touched is
// reported; anything else is walked.
func (w *walker) subdir(dirfd int, e *entry, rules fsops.IgnoreRules, inIgnored bool) (bool, int64, int64, error) {
	fd, err := w.openDir(dirfd, e)
	if err != nil {
		return false, 0, 0, err
	}
	defer func() { _ = unix.Close(fd) }()
	entries, err := list(fd, e.rel)
	if err != nil {
		return false, 0, 0, err
	}
	if isRepository(fd, entries) {
		touched, err := w.subtreeTouched(fd, e)
		if err != nil {
			return false, 0, 0, err
		}
		if touched {
			w.report.Repositories = append(w.report.Repositories, e.rel)
			w.removals = append(w.removals, removal{rel: e.rel, dir: true})
			return false, 0, 0, nil
		}
		// The base's own (a test fixture of a git tool), as the checkout
		// left it: it stays.
	}
	ignored := inIgnored || (!w.trackedDirs[e.rel] && rules.Ignored(e.rel, true))
	removalsBefore := len(w.removals)
	sum, err := w.walkEntries(fd, e.rel, entries, rules, ignored)
	if err != nil {
		return false, 0, 0, err
	}
	if ignored && sum.allIgnoredByWorker && (w.ignoredIsTheRuns(&e.st) || sum.entries > 0) && !w.trackedDirs[e.rel] {
		// Everything in it goes: the directory goes as one, and is
		// reported as one.
		w.report.Ignored = w.report.Ignored[:len(w.report.Ignored)-sum.reported]
		w.removals = append(w.removals[:removalsBefore], removal{rel: e.rel, dir: true})
		w.manifest.dropUnder(e.rel)
		entries, bytes := sum.entries+1, sum.bytes+e.st.Blocks*512
		w.addIgnored(e.rel+"/", entries, bytes, w.maker(), "removed")
		return true, entries, bytes, nil
	}
	if ignored && !inIgnored && sum.entries == 0 && sum.reported == 0 && !w.touched(&e.st) && !w.trackedDirs[e.rel] {
		// An ignored directory the setup made and the worker left alone:
		// reported as one.
		w.report.Ignored = append(w.report.Ignored, transcript.IgnoredChange{Path: e.rel + "/", By: "setup", Action: "kept"})
	}
	w.manifest.add(e.rel, manifestEntry{kind: kindDir})
	w.noteDirMode(e)
	return false, sum.entries, sum.bytes, nil
}

// openDir opens the directory e of dirfd without following a link, and
// checks it is still the one listed. One its owner made unreadable is
// made readable by its owner first (the walker is the owner in a
// container; root reads it anyway).
func (w *walker) openDir(dirfd int, e *entry) (int, error) {
	open := func() (int, error) {
		return unix.Openat(dirfd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	fd, err := open()
	if errors.Is(err, unix.EACCES) && !w.readOnly {
		if cerr := unix.Fchmodat(dirfd, e.name, stMode(&e.st)&0o7777|0o700, 0); cerr == nil {
			fd, err = open()
		}
	}
	if err != nil {
		return -1, fmt.Errorf("seal: open %s: %w", quote(e.rel), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Ino != e.st.Ino || st.Dev != e.st.Dev {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("seal: %s changed while it was read", quote(e.rel))
	}
	return fd, nil
}

// subtreeTouched reports whether the directory open at fd, or anything
// below it, was touched after the baseline.
func (w *walker) subtreeTouched(fd int, e *entry) (bool, error) {
	if w.touched(&e.st) {
		return true, nil
	}
	entries, err := list(fd, e.rel)
	if err != nil {
		return false, err
	}
	for i := range entries {
		c := &entries[i]
		c.rel = joinRel(e.rel, c.name)
		if w.touched(&c.st) {
			return true, nil
		}
		if stMode(&c.st)&unix.S_IFMT == unix.S_IFDIR {
			sub, err := w.openDir(fd, c)
			if err != nil {
				return false, err
			}
			t, err := w.subtreeTouched(sub, c)
			_ = unix.Close(sub)
			if err != nil || t {
				return t, err
			}
		}
	}
	return false, nil
}

// ignoredIsTheRuns reports whether a git-ignored entry with this status
// is the run's: touched after the baseline, or any at all in an untimed
// tree.
func (w *walker) ignoredIsTheRuns(st *unix.Stat_t) bool { return w.b.Untimed || w.touched(st) }

// maker is who made what the run's ignored entries are: the worker, or
// in an untimed tree the run (the worker or its setup; nothing tells).
func (w *walker) maker() string {
	if w.b.Untimed {
		return "run"
	}
	return "worker"
}

// addIgnored reports an ignored entry.
func (w *walker) addIgnored(rel string, entries, bytes int64, by, action string) {
	w.report.Ignored = append(w.report.Ignored, transcript.IgnoredChange{Path: rel, Entries: entries, Bytes: bytes, By: by, Action: action})
}

// noteModes reports the modes of the regular file e a reviewer should
// see, and queues setuid and setgid bits for stripping.
func (w *walker) noteModes(e *entry, tracked bool) {
	mode := stMode(&e.st) & 0o7777
	if mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		w.strips = append(w.strips, strip{rel: e.rel, mode: mode})
		w.addMode(e.rel, mode, tracked, "setuid/setgid removed")
	}
	if mode&0o002 != 0 {
		w.addMode(e.rel, mode, tracked, "world-writable")
	}
	exec := mode&0o100 != 0
	if tracked {
		if wasExec := w.tracked[e.rel] == uint32(export.ModeExecutable); exec != wasExec {
			change := "executable bit added"
			if wasExec {
				change = "executable bit removed"
			}
			w.addMode(e.rel, mode, tracked, change)
		}
	} else if exec && w.touched(&e.st) {
		w.addMode(e.rel, mode, tracked, "new executable")
	}
}

// noteDirMode reports a world-writable or setuid/setgid directory; the
// bits are stripped.
func (w *walker) noteDirMode(e *entry) {
	mode := stMode(&e.st) & 0o7777
	if mode&(unix.S_ISUID|unix.S_ISGID) != 0 && w.touched(&e.st) {
		w.strips = append(w.strips, strip{rel: e.rel, mode: mode})
		w.addMode(e.rel+"/", mode, false, "setuid/setgid removed")
	}
	if mode&0o002 != 0 && mode&unix.S_ISVTX == 0 {
		w.addMode(e.rel+"/", mode, false, "world-writable")
	}
}

func (w *walker) addMode(rel string, mode uint32, tracked bool, change string) {
	m := transcript.ModeChange{Path: rel, Mode: strconv.FormatUint(uint64(mode), 8), Change: change}
	if tracked {
		m.Base = strconv.FormatUint(uint64(w.tracked[rel]&0o7777), 8)
	}
	w.report.Modes = append(w.report.Modes, m)
}

// record adds the regular file, link or directory e to the manifest (a
// directory's content is walked by dir; only Snapshot records a
// directory here).
func (w *walker) record(dirfd int, e *entry, kind uint32, rules fsops.IgnoreRules) error {
	switch kind {
	case unix.S_IFREG:
		k := kindFile
		if stMode(&e.st)&0o100 != 0 {
			k = kindExec
		}
		if w.readOnly && w.touched(&e.st) {
			return nil // changed after the baseline: no digest of it would be kept
		}
		if sum, ok := w.b.Known.lookup(e.rel, &e.st, k, w.since); ok {
			w.manifest.add(e.rel, manifestEntry{kind: k, sum: sum, ino: e.st.Ino, ctime: ctimeNS(&e.st), size: e.st.Size})
			return nil
		}
		if e.st.Nlink <= 1 {
			w.queueFile(e, k) // read with its directory's other files
			return nil
		}
		sum, err := w.fileSum(dirfd, e)
		if err != nil {
			return err
		}
		w.manifest.add(e.rel, manifestEntry{kind: k, sum: sum, ino: e.st.Ino, ctime: ctimeNS(&e.st), size: e.st.Size})
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, e.name)
		if err != nil {
			return fmt.Errorf("seal: read link %s: %w", quote(e.rel), err)
		}
		return w.recordLink(e, target)
	case unix.S_IFDIR:
		fd, err := w.openDir(dirfd, e)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Close(fd) }()
		w.manifest.add(e.rel, manifestEntry{kind: kindDir})
		_, err = w.dir(fd, e.rel, rules, false)
		return err
	default:
		w.manifest.add(e.rel, manifestEntry{kind: kindSpecial, ino: e.st.Ino, ctime: ctimeNS(&e.st)})
	}
	return nil
}

func (w *walker) recordLink(e *entry, target string) error {
	w.manifest.add(e.rel, manifestEntry{kind: kindLink, sum: sha256.Sum256([]byte(target)), ino: e.st.Ino, ctime: ctimeNS(&e.st)})
	return nil
}

// fileSum is the SHA-256 of the regular file e's content, read through
// its directory's descriptor without following a link.
func (w *walker) fileSum(dirfd int, e *entry) ([32]byte, error) {
	key := [2]uint64{uint64(e.st.Dev), e.st.Ino} //nolint:unconvert // Dev is uint64 on Linux, int32 on macOS
	if e.st.Nlink > 1 {
		if s, ok := w.sums[key]; ok {
			return s, nil
		}
	}
	sum, err := digestAt(dirfd, e.name, stMode(&e.st)&0o7777, w.buf, !w.readOnly)
	if err != nil {
		return sum, fmt.Errorf("seal: read %s: %w", quote(e.rel), err)
	}
	if e.st.Nlink > 1 {
		w.sums[key] = sum
	}
	return sum, nil
}

// digestAt hashes the regular file name in dirfd, reading it through buf.
// A file its owner made unreadable is made readable for the read and
// given its mode back (the walker is the owner in a container; root reads
// it anyway). It goes straight to the system calls: a seal reads every
// file of the tree, and an *os.File and a fresh copy buffer per file were
// most of its cost on a tree of small files.
func digestAt(dirfd int, name string, mode uint32, buf []byte, fix bool) ([32]byte, error) {
	open := func() (int, error) {
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	fd, err := open()
	if errors.Is(err, unix.EACCES) && fix {
		if cerr := unix.Fchmodat(dirfd, name, mode|0o400, 0); cerr == nil {
			fd, err = open()
			_ = unix.Fchmodat(dirfd, name, mode, 0)
		}
	}
	if err != nil {
		return [32]byte{}, err
	}
	defer func() { _ = unix.Close(fd) }() // read only
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return [32]byte{}, err
	}
	if stMode(&st)&unix.S_IFMT != unix.S_IFREG {
		return [32]byte{}, errors.New("no longer a regular file")
	}
	h := sha256.New()
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return [32]byte{}, err
		}
		if n == 0 {
			return [32]byte(h.Sum(nil)), nil
		}
		h.Write(buf[:n])
	}
}

// list reads the directory open at fd, with every entry's status, sorted
// by name. fd stays open and is read from its start.
func list(fd int, rel string) ([]entry, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, fmt.Errorf("seal: list %s: %w", quote(rel), err)
	}
	f := os.NewFile(uintptr(dup), rel)
	defer func() { _ = f.Close() }() // read only
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seal: list %s: %w", quote(rel), err)
	}
	var out []entry
	for {
		batch, err := f.ReadDir(1024)
		for _, de := range batch {
			var st unix.Stat_t
			if serr := unix.Fstatat(fd, de.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil {
				if errors.Is(serr, unix.ENOENT) {
					continue
				}
				return nil, fmt.Errorf("seal: inspect %s: %w", quote(joinRel(rel, de.Name())), serr)
			}
			out = append(out, entry{name: de.Name(), st: st})
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("seal: list %s: %w", quote(rel), err)
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// readIgnoreFile reads the directory's .gitignore when it is a regular
// file of a sane size.
func readIgnoreFile(fd int, entries []entry) ([]byte, bool) {
	i, ok := slices.BinarySearchFunc(entries, ".gitignore", func(e entry, name string) int { return strings.Compare(e.name, name) })
	if !ok || stMode(&entries[i].st)&unix.S_IFMT != unix.S_IFREG || entries[i].st.Size > maxIgnoreFile {
		return nil, false
	}
	f, err := unix.Openat(fd, ".gitignore", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	file := os.NewFile(uintptr(f), ".gitignore")
	defer func() { _ = file.Close() }() // read only
	data, err := io.ReadAll(io.LimitReader(file, maxIgnoreFile))
	return data, err == nil
}

// isRepository reports whether the directory open at fd, whose entries
// are given, holds what git takes for a repository (export.RepoSigns).
func isRepository(fd int, entries []entry) bool {
	var signs export.RepoSigns
	for _, e := range entries {
		hit := false
		if strings.EqualFold(e.name, "config") && stMode(&e.st)&unix.S_IFMT == unix.S_IFREG {
			cfd, err := unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if err == nil {
				f := os.NewFile(uintptr(cfd), e.name)
				hit, err = export.ConfigMarksRepository(f)
				_ = f.Close() // read only
			}
			if err != nil {
				// Unreadable: a repository's sign as much as not.
				hit = true
			}
		}
		signs.Note(e.name, hit)
	}
	return signs.Repository()
}

// readlinkat reads the link name in dirfd.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
		if size > 1<<16 {
			return "", fs.ErrInvalid
		}
	}
}

// linkEscapes reports whether a link in directory dir (root-relative)
// with this target is absolute or leads out of the tree by its text.
func linkEscapes(dir, target string) bool {
	if path.IsAbs(target) {
		return true
	}
	joined := path.Join(dir, target)
	return joined == ".." || strings.HasPrefix(joined, "../")
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// quote shows a worker-made path in an error.
func quote(p string) string { return strconv.Quote(p) }
