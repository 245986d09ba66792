package export

import (
	"archive/tar"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxComponent is the longest file name Linux file systems hold
	// (NAME_MAX); a longer one could never be created, so it is refused
	// up front rather than failing half-way through a write.
	maxComponent = 255
	// maxTarget is the longest symlink target the kernel accepts
	// (PATH_MAX less the terminating NUL).
	maxTarget = 4095
	// maxShown bounds how much of a name a message quotes.
	maxShown = 256
)

// splitName checks a member's name and returns its components. raw is
// the name as the archive spells it; a directory's single trailing slash
// is dropped first.
func splitName(raw string, dir bool) ([]string, *Refusal) {
	name := raw
	if dir {
		name = strings.TrimSuffix(name, "/")
	}
	if strings.HasPrefix(name, "/") {
		return nil, refuse(ErrAbsolutePath, raw, "absolute path at %s", quoted(raw))
	}
	parts := strings.Split(name, "/")
	for _, p := range parts {
		switch {
		case p == "" || p == "." || p == ".." || len(p) > maxComponent:
			return nil, refuse(ErrInvalidComponent, raw, "invalid path component at %s", quoted(raw))
		case strings.EqualFold(p, ".git"):
			// Case-insensitively, because a case-folding file system
			// would take `.GIT` for the repository's own.
			return nil, refuse(ErrGitEntry, raw, ".git-named entry at %s", quoted(raw))
		}
	}
	return parts, nil
}

// checkTarget refuses a symlink target no symlink can hold, which would
// otherwise fail only when written.
func checkTarget(raw, target string) *Refusal {
	if target == "" || len(target) > maxTarget {
		return refuse(ErrInvalidTarget, raw, "invalid symlink target at %s", quoted(raw))
	}
	return nil
}

// linkEscapes reports whether a link named name with this target is
// absolute or leads out of the tree from the link's directory. Only the
// text is judged: a target through other links is not followed.
func linkEscapes(name, target string) bool {
	if path.IsAbs(target) {
		return true
	}
	joined := path.Join(path.Dir(name), target)
	return joined == ".." || strings.HasPrefix(joined, "../")
}

// typeName is a member type for a message.
func typeName(flag byte) string {
	switch flag {
	case tar.TypeLink:
		return "hardlink"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	case tar.TypeCont:
		return "contiguous file"
	case tar.TypeGNUSparse:
		return "sparse file"
	}
	return fmt.Sprintf("type %q", flag)
}

// quoted renders a member name for a message, in single quotes. The name
// comes from the worker, and messages reach terminals and logs, so
// control and format characters and bytes that are not UTF-8 are escaped,
// and a very long name is cut.
func quoted(name string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i, r := range name {
		if b.Len() > maxShown {
			b.WriteString("…")
			break
		}
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(name[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, name[i])
		case !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// position says where in the stream something happened: after the last
// member read, or before any.
func position(last string) string {
	if last == "" {
		return "at the start of the archive"
	}
	return "after " + quoted(last)
}
