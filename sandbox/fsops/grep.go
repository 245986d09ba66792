package fsops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

const (
	// grepMaxChars caps grep's text, in characters (E-34).
	grepMaxChars = 8000
	// grepMaxColumns is the longest line grep prints, in characters;
	// longer ones are summarised as rg -M 300 does.
	grepMaxColumns = 300
	// grepMaxFileBytes is the largest file grep searches (the read_file
	// limit); larger files are skipped.
	grepMaxFileBytes = 5 << 20
	// grepBinaryProbe is how much of a file is checked for a NUL byte.
	grepBinaryProbe = 8 << 10
	// grepMaxReason caps the reason of a grep failure.
	grepMaxReason = 500
	// grepDefaultTimeout applies when the caller gives none.
	grepDefaultTimeout = 30 * time.Second
	// grepCheckEvery is how many lines pass between checks of the
	// deadline inside one file.
	grepCheckEvery = 1024
)

// errGrepFull stops the walk once the output has passed its cap, and
// errGrepTimeout once the timeout has passed.
var (
	errGrepFull    = errors.New("grep output is full")
	errGrepTimeout = errors.New("grep timed out")
)

// Grep is the grep tool (E-34): the lines matching pattern (Go RE2
// syntax, case-sensitive) in the file or below the directory at given,
// one a line as "relpath:lineno:text" like rg -n --no-heading -M 300,
// with paths relative to the tree root. A line longer than 300 characters
// prints as "[Omitted long line with N matches]"; a CR before the line's
// LF is not part of it.
//
// Files come in walk order: depth first, each directory's entries sorted
// by name (byte order); lines in file order. The walk, like rg's
// defaults, skips hidden entries (names starting with "."; .git among
// them), symbolic links (never followed, so nothing outside the tree is
// read), special files, whatever the .gitignore files of the directories
// on the way and .git/info/exclude exclude (only when .git is a
// directory: a linked worktree's exclude file lies outside the tree),
// files over 5 MiB, binary files (a NUL byte in the first 8 KiB), and
// directories and files it cannot read. glob narrows it further, with
// .gitignore syntax plus {a,b} alternatives: without a "/" it matches a
// base name, with one the path from the tree root; a leading "!" excludes
// what matches (directories too) instead of keeping only matching files.
// A file named explicitly is searched whatever the hidden, ignore and
// glob rules say; if it is too large or binary, the result says so.
//
// Collection stops once the output passes 8000 characters; the text is
// then cut there with a note. A timeout (30 s when not positive) gives
// the contract's timed-out result. Failures are results the model reads;
// the error is ctx's, or for a tree that is gone (its root closed).
func (f *FS) Grep(ctx context.Context, pattern, given, glob string, timeout time.Duration) (string, error) {
	return toolResult(f.grep(ctx, pattern, given, glob, timeout))
}

func (f *FS) grep(ctx context.Context, pattern, given, glob string, timeout time.Duration) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", grepFailure(err.Error())
	}
	rel, err := f.Resolve(given, false)
	if err != nil {
		return "", resolveFailure("search", given, err)
	}
	if timeout <= 0 {
		timeout = grepDefaultTimeout
	}
	s := &grepSearch{
		f: f, re: re, whole: wholeFilePrefilter(pattern), literal: requiredLiteral(pattern),
		glob: parseGlob(glob), deadline: time.Now().Add(timeout),
	}
	err = s.start(ctx, given, rel)
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, errGrepTimeout):
		return grepTimedOut(timeout), nil
	case errors.Is(err, errGrepFull), err == nil:
	default:
		return "", err
	}
	if s.out.Len() == 0 {
		return "No matches found.", nil
	}
	return truncateChars(s.out.String(), grepMaxChars, " — narrow the pattern or path for full results"), nil
}

// grepTimedOut is the contract's timeout result; it is not a command
// timeout (no flag, no count).
func grepTimedOut(timeout time.Duration) string {
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
	return fmt.Sprintf("ERROR: grep timed out after %ss — narrow the pattern or path.", secs)
}

// grepFailure is a failed search, its reason cut to grepMaxReason
// characters (an invalid pattern's message quotes the whole pattern).
func grepFailure(reason string) error {
	if r := []rune(reason); len(r) > grepMaxReason {
		reason = string(r[:grepMaxReason])
	}
	return failf("grep failed: %s", reason)
}

// grepSearch is one grep call's state.
type grepSearch struct {
	f  *FS
	re *regexp.Regexp
	// whole, when set, matches a whole file whenever any of its lines
	// matches re (see wholeFilePrefilter); nil means no prefilter.
	whole *regexp.Regexp
	// literal, when set, is text every matching line contains.
	literal []byte
	glob    globFilter
	// deadline is when the timeout passes. It is checked against the
	// clock rather than through a timer context, so a search past it
	// stops at the next check however the timer goroutine is scheduled.
	deadline time.Time
	out      strings.Builder
	// chars counts the characters in out, which stops growing once it
	// passes grepMaxChars.
	chars int
}

// start searches rel, the resolved form of given: a file as it is, a
// directory by walking it under the ignore rules of its ancestors.
func (s *grepSearch) start(ctx context.Context, given, rel string) error {
	fi, err := s.f.root.Stat(rel)
	if errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("grep %s: %w", given, err)
	}
	if err != nil {
		return grepFailure(fmt.Sprintf("'%s': %s", given, osReason(err)))
	}
	switch {
	case fi.Mode().IsRegular():
		skip, err := s.file(ctx, rel)
		if skip != "" {
			return grepFailure(fmt.Sprintf("'%s': %s", given, skip))
		}
		return err
	case fi.IsDir():
		return s.dir(ctx, rel, s.ancestorRules(rel))
	default:
		return grepFailure(fmt.Sprintf("'%s' is not a regular file or a directory", given))
	}
}

// ancestorRules are the ignore rules in force for the entries of rel
// before its own .gitignore is read: .git/info/exclude and the
// .gitignore files of the directories above it.
func (s *grepSearch) ancestorRules(rel string) ignoreRules {
	rules := ignoreRules(s.readIgnore(".git/info/exclude", ""))
	parts := splitPath(rel)
	dir := "."
	for i := 0; i < len(parts); i++ {
		rules = append(rules, s.readIgnore(joinRel(dir, ".gitignore"), ignoreBase(dir))...)
		dir = joinRel(dir, parts[i])
	}
	return rules
}

// readIgnore parses the ignore file at rel if it is a regular file of a
// sane size; anything else is no rules, as for git.
func (s *grepSearch) readIgnore(rel, base string) []ignoreRule {
	fi, err := s.f.root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > grepMaxFileBytes {
		return nil
	}
	data, err := s.f.root.ReadFile(rel)
	if err != nil {
		return nil
	}
	return parseIgnore(data, base)
}

func ignoreBase(dir string) string {
	if dir == "." {
		return ""
	}
	return dir
}

// dir walks the directory rel; rules are the ignore rules of its
// ancestors. The files of a directory are searched by several goroutines
// at once, opened relative to the directory's descriptor (one openat with
// O_NOFOLLOW each, instead of a walk from the root), and their lines are
// emitted in order.
func (s *grepSearch) dir(ctx context.Context, rel string, rules ignoreRules) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	d, err := s.f.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil // unreadable: skipped
	}
	defer func() { _ = d.Close() }() // read-only; nothing to lose
	// Entries come lstat'ed (the directory was opened in the root), so
	// their types and sizes are the entries' own, never a link target's.
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			// Clipped, append copies instead of writing into the
			// parent's array, which this directory's siblings share.
			rules = append(rules[:len(rules):len(rules)], s.readIgnore(joinRel(rel, ".gitignore"), ignoreBase(rel))...)
			break
		}
	}
	// files collects the regular files met since the last subdirectory;
	// they are searched before the walk descends, to keep the order.
	var files []string
	flush := func() error {
		err := s.files(ctx, int(d.Fd()), rel, files)
		files = files[:0]
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		child := joinRel(rel, name)
		switch {
		case e.IsDir():
			if rules.ignored(child, true) || s.glob.excludesDir(child) {
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			if err := s.dir(ctx, child, rules); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if rules.ignored(child, false) || !s.glob.admits(child) {
				continue
			}
			files = append(files, name)
		}
	}
	return flush()
}

// fileHits is what searching one file found.
type fileHits struct {
	lines []string
	err   error
}

// files searches the named files of the directory dirfd (rel) with up to
// GOMAXPROCS goroutines and emits their lines in name order.
func (s *grepSearch) files(ctx context.Context, dirfd int, rel string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	hits := make([]fileHits, len(names))
	var next atomic.Int64
	var full atomic.Bool
	work := func() {
		buf := grepBuffers.Get().(*bytes.Buffer)
		defer grepBuffers.Put(buf)
		for {
			i := int(next.Add(1)) - 1
			if i >= len(names) || full.Load() {
				return
			}
			hits[i].lines, hits[i].err = s.fileAt(ctx, dirfd, names[i], joinRel(rel, names[i]), buf)
			if hits[i].err != nil {
				full.Store(true) // a timeout or cancellation: stop the others
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(names))
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	for _, h := range hits {
		if h.err != nil {
			return h.err
		}
		for _, line := range h.lines {
			if s.emit(line) {
				return errGrepFull
			}
		}
	}
	return nil
}

// grepBuffers hold file contents, one per searching goroutine.
var grepBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// fileAt searches the file name in the directory dirfd: opened without
// following a link (a link swapped in since the listing is refused, so
// nothing outside the tree is read) and without blocking (a FIFO swapped
// in cannot hang the search). Files it cannot or will not search give no
// lines.
func (s *grepSearch) fileAt(ctx context.Context, dirfd int, name, rel string, buf *bytes.Buffer) ([]string, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	// Raw system calls: an *os.File would cost a poller registration and
	// a second read to see the end, on every one of thousands of files.
	defer func() { _ = unix.Close(fd) }() // read-only
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > grepMaxFileBytes {
		return nil, nil
	}
	buf.Reset()
	buf.Grow(int(st.Size))
	data := buf.Bytes()[:st.Size]
	n := 0
	for n < len(data) {
		m, err := unix.Read(fd, data[n:])
		if err != nil || m == 0 {
			break // shorter than it said: search what is there
		}
		n += m
	}
	data = data[:n]
	if bytes.IndexByte(data[:min(len(data), grepBinaryProbe)], 0) >= 0 {
		return nil, nil
	}
	return s.matches(ctx, rel, data)
}

// file searches the regular file rel, named by the caller. A file grep
// does not search is reported in skip (why) with a nil error; the error
// is the context's, errGrepTimeout or errGrepFull.
func (s *grepSearch) file(ctx context.Context, rel string) (skip string, err error) {
	if err := s.check(ctx); err != nil {
		return "", err
	}
	// Non-blocking, so a FIFO swapped in since the listing cannot hang us;
	// the root keeps the open inside the tree even then.
	fh, err := s.f.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return osReason(err), nil
	}
	defer func() { _ = fh.Close() }()
	var buf bytes.Buffer
	data, skip := readSearchable(fh, &buf)
	if skip != "" {
		return skip, nil
	}
	lines, err := s.matches(ctx, rel, data)
	if err != nil {
		return "", err
	}
	for _, line := range lines {
		if s.emit(line) {
			return "", errGrepFull
		}
	}
	return "", nil
}

// readSearchable reads an opened file into buf if grep searches it: a
// regular file of at most 5 MiB without a NUL byte in its first 8 KiB.
// Otherwise skip says why.
func readSearchable(fh *os.File, buf *bytes.Buffer) (data []byte, skip string) {
	fi, err := fh.Stat()
	switch {
	case err != nil:
		return nil, osReason(err)
	case !fi.Mode().IsRegular():
		return nil, "not a regular file"
	case fi.Size() > grepMaxFileBytes:
		return nil, fmt.Sprintf("over the %d-byte grep limit; not searched", grepMaxFileBytes)
	}
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(fh, grepMaxFileBytes+1)); err != nil {
		return nil, osReason(err)
	}
	data = buf.Bytes()
	if len(data) > grepMaxFileBytes {
		return nil, fmt.Sprintf("over the %d-byte grep limit; not searched", grepMaxFileBytes)
	}
	if bytes.IndexByte(data[:min(len(data), grepBinaryProbe)], 0) >= 0 {
		return nil, "binary file (NUL byte); not searched"
	}
	return data, ""
}

// matches returns data's matching lines as output lines. It stops early
// once its lines alone would fill the output.
func (s *grepSearch) matches(ctx context.Context, rel string, data []byte) ([]string, error) {
	// Most files hold no match: one pass of the prefilter over the whole
	// file rules them out without splitting it into lines. A CR makes a
	// line's end differ from what the multi-line pattern sees, so such
	// files take the line-by-line path.
	if s.literal != nil && !bytes.Contains(data, s.literal) {
		return nil, nil
	}
	if s.whole != nil && bytes.IndexByte(data, '\r') < 0 && !s.whole.Match(data) {
		return nil, nil
	}
	shown := strings.ToValidUTF8(rel, "\uFFFD")
	var lines []string
	chars := 0
	for lineNo := 1; len(data) > 0; lineNo++ {
		if lineNo%grepCheckEvery == 0 {
			if err := s.check(ctx); err != nil {
				return nil, err
			}
		}
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if !s.re.Match(line) {
			continue
		}
		text := strings.ToValidUTF8(string(line), "\uFFFD")
		if len(text) > grepMaxColumns && utf8.RuneCountInString(text) > grepMaxColumns {
			text = fmt.Sprintf("[Omitted long line with %d matches]", len(s.re.FindAllIndex(line, -1)))
		}
		out := fmt.Sprintf("%s:%d:%s", shown, lineNo, text)
		lines = append(lines, out)
		if chars += len(out) + 1; chars > 4*grepMaxChars {
			break // more than the output can hold, even in one-byte characters
		}
	}
	return lines, nil
}

// check ends the search when ctx is done or the timeout has passed.
func (s *grepSearch) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !time.Now().Before(s.deadline) {
		return errGrepTimeout
	}
	return nil
}

// emit appends one output line and reports whether the output has passed
// its cap.
func (s *grepSearch) emit(line string) bool {
	if s.out.Len() > 0 {
		s.out.WriteByte('\n')
		s.chars++
	}
	s.out.WriteString(line)
	s.chars += utf8.RuneCountInString(line)
	return s.chars > grepMaxChars
}

// wholeFilePrefilter returns a pattern that matches a file (without CR
// characters) whenever one of its lines matches pattern, or nil when
// there is none. In multi-line mode ^ and $ match at line boundaries, so
// a match of pattern inside a line is also a match of the multi-line
// pattern at the same place in the file (\b sees the newline as a
// non-word character, as it sees a line's end); a match that spans lines
// only lets a file through to the exact line-by-line check. \A and \z
// would be stricter over a whole file than over a line, so patterns using
// them get no prefilter.
func wholeFilePrefilter(pattern string) *regexp.Regexp {
	multi := "(?m:" + pattern + ")"
	re, err := syntax.Parse(multi, syntax.Perl)
	if err != nil || usesTextAnchors(re) {
		return nil
	}
	whole, err := regexp.Compile(multi)
	if err != nil {
		return nil
	}
	return whole
}

// usesTextAnchors reports whether re has \A or \z (\Z's OpEndText too).
func usesTextAnchors(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, sub := range re.Sub {
		if usesTextAnchors(sub) {
			return true
		}
	}
	return false
}

// requiredLiteral returns the longest case-sensitive literal text that
// every match of pattern contains, or nil: a file without it has no
// matching line, which bytes.Contains tells far faster than the pattern.
func requiredLiteral(pattern string) []byte {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	lit := longestRequired(re)
	if lit == "" {
		return nil
	}
	return []byte(lit)
}

func longestRequired(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture:
		return longestRequired(re.Sub[0])
	case syntax.OpPlus: // at least one repetition holds it
		return longestRequired(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return longestRequired(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := longestRequired(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}
