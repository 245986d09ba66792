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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
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
	s := &grepSearch{f: f, re: re, glob: parseGlob(glob), deadline: time.Now().Add(timeout)}
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
	f    *FS
	re   *regexp.Regexp
	glob globFilter
	// deadline is when the timeout passes. It is checked against the
	// clock rather than through a timer context, so a search past it
	// stops at the next check however the timer goroutine is scheduled.
	deadline time.Time
	buf      bytes.Buffer // file contents, reused
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
// ancestors.
func (s *grepSearch) dir(ctx context.Context, rel string, rules ignoreRules) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	d, err := s.f.root.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil // unreadable: skipped
	}
	// Entries come lstat'ed (the directory was opened in the root), so
	// their types and sizes are the entries' own, never a link target's.
	entries, err := d.ReadDir(-1)
	_ = d.Close()
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
			if err := s.dir(ctx, child, rules); err != nil {
				return err
			}
		case e.Type().IsRegular():
			if rules.ignored(child, false) || !s.glob.admits(child) {
				continue
			}
			if _, err := s.file(ctx, child); err != nil {
				return err
			}
		}
	}
	return nil
}

// file searches the regular file rel. A file grep does not search is
// reported in skip (why) with a nil error; the error is the context's,
// errGrepTimeout or errGrepFull.
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
	fi, err := fh.Stat()
	switch {
	case err != nil:
		return osReason(err), nil
	case !fi.Mode().IsRegular():
		return "not a regular file", nil
	case fi.Size() > grepMaxFileBytes:
		return fmt.Sprintf("over the %d-byte grep limit; not searched", grepMaxFileBytes), nil
	}
	s.buf.Reset()
	if _, err := s.buf.ReadFrom(io.LimitReader(fh, grepMaxFileBytes+1)); err != nil {
		return osReason(err), nil
	}
	data := s.buf.Bytes()
	if len(data) > grepMaxFileBytes {
		return fmt.Sprintf("over the %d-byte grep limit; not searched", grepMaxFileBytes), nil
	}
	if bytes.IndexByte(data[:min(len(data), grepBinaryProbe)], 0) >= 0 {
		return "binary file (NUL byte); not searched", nil
	}
	return "", s.scan(ctx, rel, data)
}

// scan adds data's matching lines to the output.
func (s *grepSearch) scan(ctx context.Context, rel string, data []byte) error {
	shown := strings.ToValidUTF8(rel, "\uFFFD")
	for lineNo := 1; len(data) > 0; lineNo++ {
		if lineNo%grepCheckEvery == 0 {
			if err := s.check(ctx); err != nil {
				return err
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
		if s.emit(fmt.Sprintf("%s:%d:%s", shown, lineNo, text)) {
			return errGrepFull
		}
	}
	return nil
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
