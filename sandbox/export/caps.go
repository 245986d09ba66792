package export

import (
	"errors"
	"io"
	"strings"
)

// Caps bound what a stream may bring back. Both are inclusive and hard:
// unlike the workspace's size limits, zero is not "no cap" but a cap of
// zero, since an export without bounds is never what a caller means.
type Caps struct {
	// MaxFiles is the most members the archive may hold, directories and
	// symlinks included.
	MaxFiles int64
	// MaxBytes bounds both the bytes read from the stream (headers, PAX
	// records and padding included) and the sum of the sizes the regular
	// files declare.
	MaxBytes int64
}

// Summary is what an accepted stream held. After a refusal it covers the
// members accepted before it.
type Summary struct {
	// Members counts every member, directories and symlinks included
	// (the export's worktree_files).
	Members int64
	// Bytes is the sum of the regular files' sizes (worktree_bytes).
	Bytes int64
	// Files are the names of the regular files and symlinks, in archive
	// order.
	Files []string
	// EscapingSymlinks are the names of the symlinks whose target is
	// absolute or leads out of the tree, resolved through the archive's
	// own links (a -> b -> /root escapes), in archive order. They are
	// created as they are and never followed.
	EscapingSymlinks []string
	// SkippedSpecial are the FIFOs and devices left out, and the hard
	// links to them (at most 1000 names, SkippedSpecialTruncated telling
	// when there were more).
	SkippedSpecial          []string
	SkippedSpecialTruncated bool
	// Repositories are the directories git would take for a repository
	// (see RepoSigns), outermost only, sorted. Extract and Sync write
	// them like any other; the caller moves them out (Quarantine).
	Repositories []string
	// HardLinks are the hard link members, in archive order, each with
	// the regular file member it shares (see LinksInto).
	HardLinks []HardLink
}

// HardLink is a hard link member and the regular file member whose data
// it shares: the start of its chain when it links to another link.
type HardLink struct {
	Name, Origin string
}

// LinksInto are the hard links of the summary that lie outside every one
// of dirs but share a file of one of them, in archive order. A hard link
// gets its file's fate: when dirs (repositories) leave the lane, so must
// these, or the repository's files stay in it under other names.
func (s Summary) LinksInto(dirs []string) []string {
	under := func(p string) bool {
		for _, d := range dirs {
			if p == d || strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	var out []string
	for _, l := range s.HardLinks {
		if under(l.Origin) && !under(l.Name) {
			out = append(out, l.Name)
		}
	}
	return out
}

// maxListed bounds the names a Summary lists of skipped entries.
const maxListed = 1000

// errStreamCap is what capReader returns once the stream went past the
// cap; callers look at capReader.over rather than at the error, since
// archive/tar may hand a reader's error back in another shape.
var errStreamCap = errors.New("stream exceeds the byte cap")

// capReader counts the bytes read through it and fails once they exceed
// max, so the cap holds for headers and padding too, not just the sizes
// members declare.
type capReader struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func newCapReader(r io.Reader, limit int64) *capReader {
	return &capReader{r: r, max: max(limit, 0)}
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errStreamCap
	}
	// Read at most one byte past the cap: enough to tell a stream that
	// ends exactly at it from one that goes on, without reading further.
	if room := c.max - c.n; room < int64(len(p))-1 {
		p = p[:room+1]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.over = true
		return n - int(c.n-c.max), errStreamCap
	}
	return n, err
}
