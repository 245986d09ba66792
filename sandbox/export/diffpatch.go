package export

import (
	"bytes"
	// git names objects by SHA-1; nothing here relies on it resisting collisions.
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

const (
	// DefaultAbbrev is the blob id length in `index` lines: git's
	// default for a repository small enough that 7 hex digits are
	// unique. Larger repositories make git print more.
	DefaultAbbrev = 7
	// binaryProbe is how much of a file git looks at for a NUL byte.
	binaryProbe = 8000
	// bigFileThreshold is git's core.bigFileThreshold default, past
	// which a file is binary whatever it holds.
	bigFileThreshold = 512 << 20
	devNull          = "/dev/null"
)

// side is one side of a file pair in the patch: absent, or a blob with a
// mode.
type side struct {
	present bool
	mode    BlobMode
	data    []byte
	// id is data's blob id when already known ("": computed on demand).
	id string
}

// blobID is the git object name of a blob holding data.
func blobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// isBinary is git's test without attributes: a NUL in the first 8000
// bytes, or a size past core.bigFileThreshold.
func isBinary(data []byte) bool {
	if len(data) > bigFileThreshold {
		return true
	}
	return bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0
}

// fileDiff diffs one path whose content or mode differs between a and b
// and returns its stat line. With out set it also writes the patch: a
// type change (file to symlink or back) as a deletion and an addition, as
// git does, anything else as one patch. abbrev is the blob id length.
func fileDiff(out *bytes.Buffer, path string, a, b side, abbrev int) statEntry {
	e := statEntry{name: quoteName(path)}
	binary := isBinary(a.data) || isBinary(b.data)
	same := bytes.Equal(a.data, b.data)
	typeChange := a.present && b.present && (a.mode == ModeSymlink) != (b.mode == ModeSymlink)
	var hunks *bytes.Buffer
	if out != nil && !binary && !typeChange {
		hunks = &bytes.Buffer{}
	}
	switch {
	case binary && !same:
		e.binary, e.added, e.deleted = true, int64(len(b.data)), int64(len(a.data))
	case binary:
		e.binary = true
	case !same:
		c := textDiff(a.data, b.data, hunks)
		e.added, e.deleted = int64(c.added), int64(c.deleted)
	}
	if out == nil {
		return e
	}
	if typeChange {
		writePatch(out, path, a, side{}, abbrev, nil)
		writePatch(out, path, side{}, b, abbrev, nil)
	} else {
		writePatch(out, path, a, b, abbrev, hunks)
	}
	return e
}

// writePatch writes the patch of one file pair of the same kind; hunks,
// when not nil, are its text hunks already computed.
func writePatch(out *bytes.Buffer, path string, a, b side, abbrev int, hunks *bytes.Buffer) {
	na, nb := quoteName("a/"+path), quoteName("b/"+path)
	fmt.Fprintf(out, "diff --git %s %s\n", na, nb)
	switch {
	case !a.present:
		fmt.Fprintf(out, "new file mode %06o\n", b.mode)
	case !b.present:
		fmt.Fprintf(out, "deleted file mode %06o\n", a.mode)
	case a.mode != b.mode:
		fmt.Fprintf(out, "old mode %06o\nnew mode %06o\n", a.mode, b.mode)
	}
	if a.present && b.present && bytes.Equal(a.data, b.data) {
		return
	}
	fmt.Fprintf(out, "index %s..%s", abbrevID(a, abbrev), abbrevID(b, abbrev))
	if a.present && b.present && a.mode == b.mode {
		fmt.Fprintf(out, " %06o", a.mode)
	}
	out.WriteByte('\n')
	la, lb := devNull, devNull
	if a.present {
		la = na
	}
	if b.present {
		lb = nb
	}
	if isBinary(a.data) || isBinary(b.data) {
		fmt.Fprintf(out, "Binary files %s and %s differ\n", la, lb)
		return
	}
	if hunks == nil {
		hunks = &bytes.Buffer{}
		textDiff(a.data, b.data, hunks)
	}
	if hunks.Len() == 0 {
		return
	}
	fmt.Fprintf(out, "--- %s%s\n+++ %s%s\n", la, tabIfSpace(la), lb, tabIfSpace(lb))
	out.Write(hunks.Bytes())
}

// tabIfSpace is the tab git puts after a file label holding a space, so
// patch tools can tell where the name ends.
func tabIfSpace(label string) string {
	if strings.Contains(label, " ") {
		return "\t"
	}
	return ""
}

func abbrevID(s side, abbrev int) string {
	if !s.present {
		return strings.Repeat("0", abbrev)
	}
	if s.id != "" {
		return s.id[:abbrev]
	}
	return blobID(s.data)[:abbrev]
}

// quoteName is git's C-style quoting with core.quotePath on: a name with
// a control character, '"', '\\' or any byte past ASCII is put in double
// quotes with those bytes escaped; any other name is left as it is.
func quoteName(name string) string {
	needs := false
	for i := 0; i < len(name); i++ {
		if mustEscape(name[i]) {
			needs = true
			break
		}
	}
	if !needs {
		return name
	}
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !mustEscape(c) {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('\\')
		switch c {
		case '\a':
			sb.WriteByte('a')
		case '\b':
			sb.WriteByte('b')
		case '\t':
			sb.WriteByte('t')
		case '\n':
			sb.WriteByte('n')
		case '\v':
			sb.WriteByte('v')
		case '\f':
			sb.WriteByte('f')
		case '\r':
			sb.WriteByte('r')
		case '"', '\\':
			sb.WriteByte(c)
		default:
			o := strconv.FormatUint(uint64(c), 8)
			sb.WriteString(strings.Repeat("0", 3-len(o)) + o)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

func mustEscape(c byte) bool {
	return c < 0x20 || c == '"' || c == '\\' || c >= 0x7f
}

// capWriter keeps the first limit bytes written through it and counts
// the rest, so the producer runs to the end either way.
type capWriter struct {
	w     io.Writer
	limit int64
	n     int64 // bytes passed to w
	cut   bool
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.cut {
		return len(p), nil
	}
	keep := p
	if room := c.limit - c.n; int64(len(p)) > room {
		keep = p[:room]
		c.cut = true
	}
	n, err := c.w.Write(keep)
	c.n += int64(n)
	if err != nil {
		return n, err
	}
	return len(p), nil
}

// patchCutMarker is what follows a patch cut at limitMB MiB.
func patchCutMarker(limitMB int) string {
	return fmt.Sprintf("\n[patch truncated at %d MB]\n", limitMB)
}
