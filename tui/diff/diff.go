// Package diff parses a unified diff in git's format into files, hunks and
// lines, with per-file added and deleted counts. It is pure and
// forgiving: a patch cut short (diff.patch has a size cap) or holding
// lines it does not know still parses, and what it cannot place is kept
// as meta lines rather than dropped.
package diff

import (
	"strconv"
	"strings"
)

// LineKind says what a diff line is.
type LineKind uint8

// Line kinds.
const (
	Context LineKind = iota
	Add
	Del
	HunkHeader
	Meta      // file header lines: index, mode, rename, binary notes
	NoNewline // "\ No newline at end of file"
)

// Line is one line of a file's diff.
type Line struct {
	Kind LineKind
	// Old and New are the line numbers on each side (0 where the line is
	// not on that side).
	Old, New int
	// Text is the line without its leading marker.
	Text string
}

// File is one file's part of the patch.
type File struct {
	Path    string // the new path (the old one for a deletion)
	OldPath string // differs from Path for a rename or copy
	Status  string // modified, added, deleted, renamed, copied, mode
	Binary  bool
	Added   int
	Deleted int
	Lines   []Line
	// Hunks are the indices in Lines of the hunk headers.
	Hunks []int
}

// Parse splits patch into files.
func Parse(patch string) []File {
	var files []File
	var cur *File
	oldN, newN := 0, 0
	flush := func() {
		if cur != nil {
			files = append(files, *cur)
		}
		cur = nil
	}
	lines := strings.Split(patch, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	inHunk := false
	for _, raw := range lines {
		switch {
		case strings.HasPrefix(raw, "diff --git "):
			flush()
			a, b := gitHeaderPaths(strings.TrimPrefix(raw, "diff --git "))
			cur = &File{Path: b, OldPath: a, Status: "modified"}
			inHunk = false
			continue
		case cur == nil:
			// Text before the first file header (or a patch without
			// them): start a file from a "---" line, else keep it.
			if strings.HasPrefix(raw, "--- ") {
				cur = &File{Status: "modified"}
			} else {
				cur = &File{Status: "modified", Path: ""}
				cur.Lines = append(cur.Lines, Line{Kind: Meta, Text: raw})
				continue
			}
		}
		switch {
		case strings.HasPrefix(raw, "@@"):
			o, n, ok := hunkStarts(raw)
			if ok {
				oldN, newN = o, n
				inHunk = true
				cur.Hunks = append(cur.Hunks, len(cur.Lines))
				cur.Lines = append(cur.Lines, Line{Kind: HunkHeader, Text: raw})
				continue
			}
			cur.Lines = append(cur.Lines, Line{Kind: Meta, Text: raw})
		case inHunk && strings.HasPrefix(raw, "+"):
			cur.Added++
			cur.Lines = append(cur.Lines, Line{Kind: Add, New: newN, Text: raw[1:]})
			newN++
		case inHunk && strings.HasPrefix(raw, "-"):
			cur.Deleted++
			cur.Lines = append(cur.Lines, Line{Kind: Del, Old: oldN, Text: raw[1:]})
			oldN++
		case inHunk && strings.HasPrefix(raw, " "):
			cur.Lines = append(cur.Lines, Line{Kind: Context, Old: oldN, New: newN, Text: raw[1:]})
			oldN++
			newN++
		case inHunk && raw == "":
			// Some tools strip the space of an empty context line.
			cur.Lines = append(cur.Lines, Line{Kind: Context, Old: oldN, New: newN})
			oldN++
			newN++
		case strings.HasPrefix(raw, `\`):
			cur.Lines = append(cur.Lines, Line{Kind: NoNewline, Text: raw})
		default:
			inHunk = false
			cur.meta(raw)
		}
	}
	flush()
	// A leading file that holds only stray meta text and no path is kept
	// only if it has something in it.
	out := files[:0]
	for _, f := range files {
		if f.Path == "" && f.OldPath == "" && f.Added == 0 && f.Deleted == 0 && len(f.Lines) == 0 {
			continue
		}
		if f.Path == "" {
			f.Path = f.OldPath
		}
		out = append(out, f)
	}
	return out
}

// meta reads a file header line.
func (f *File) meta(raw string) {
	f.Lines = append(f.Lines, Line{Kind: Meta, Text: raw})
	switch {
	case strings.HasPrefix(raw, "--- "):
		f.OldPath = headerPath(strings.TrimPrefix(raw, "--- ")) // "" for /dev/null
	case strings.HasPrefix(raw, "+++ "):
		if p := headerPath(strings.TrimPrefix(raw, "+++ ")); p != "" {
			f.Path = p
		} else {
			f.Path = f.OldPath // a deletion is named by its old path
		}
	case strings.HasPrefix(raw, "new file mode"):
		f.Status = "added"
	case strings.HasPrefix(raw, "deleted file mode"):
		f.Status = "deleted"
	case strings.HasPrefix(raw, "rename from "):
		f.Status = "renamed"
		f.OldPath = unquote(strings.TrimPrefix(raw, "rename from "))
	case strings.HasPrefix(raw, "rename to "):
		f.Path = unquote(strings.TrimPrefix(raw, "rename to "))
	case strings.HasPrefix(raw, "copy from "):
		f.Status = "copied"
		f.OldPath = unquote(strings.TrimPrefix(raw, "copy from "))
	case strings.HasPrefix(raw, "copy to "):
		f.Path = unquote(strings.TrimPrefix(raw, "copy to "))
	case strings.HasPrefix(raw, "old mode") && f.Status == "modified":
		f.Status = "mode"
	case strings.HasPrefix(raw, "Binary files ") || raw == "GIT binary patch":
		f.Binary = true
	}
	if f.Status == "deleted" && f.Path == "" {
		f.Path = f.OldPath
	}
}

// headerPath reads a ---/+++ path: "a/x", "b/x", a quoted name, or
// /dev/null (empty result).
func headerPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 && !strings.HasPrefix(s, `"`) {
		s = s[:i] // a timestamp after a tab (non-git diffs)
	}
	s = unquote(s)
	if s == "/dev/null" {
		return ""
	}
	return stripPrefix(s)
}

func stripPrefix(s string) string {
	if len(s) > 2 && (s[:2] == "a/" || s[:2] == "b/") {
		return s[2:]
	}
	return s
}

// gitHeaderPaths reads "a/x b/y" (either side may be quoted). For
// unquoted names with spaces it splits where both halves agree.
func gitHeaderPaths(s string) (string, string) {
	if strings.HasPrefix(s, `"`) {
		if end := quotedEnd(s); end > 0 {
			a := unquote(s[:end])
			return stripPrefix(a), stripPrefix(unquote(strings.TrimSpace(s[end:])))
		}
	}
	if i := strings.Index(s, ` "`); i >= 0 {
		return stripPrefix(s[:i]), stripPrefix(unquote(s[i+1:]))
	}
	// Same name on both sides: "a/<p> b/<p>".
	if len(s)%2 == 1 {
		half := (len(s) - 1) / 2
		if s[half] == ' ' && stripPrefix(s[:half]) == stripPrefix(s[half+1:]) {
			return stripPrefix(s[:half]), stripPrefix(s[half+1:])
		}
	}
	if i := strings.Index(s, " b/"); i >= 0 {
		return stripPrefix(s[:i]), stripPrefix(s[i+1:])
	}
	return s, s
}

func quotedEnd(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// unquote decodes git's C-style quoting of unusual names.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// hunkStarts reads "@@ -a,b +c,d @@".
func hunkStarts(s string) (oldStart, newStart int, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, false
	}
	parse := func(x string) (int, bool) {
		x = x[1:]
		if i := strings.IndexByte(x, ','); i >= 0 {
			x = x[:i]
		}
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	o, ok1 := parse(f[1])
	n, ok2 := parse(f[2])
	return o, n, ok1 && ok2
}

// Totals sums the files' added and deleted lines.
func Totals(files []File) (added, deleted int) {
	for _, f := range files {
		added += f.Added
		deleted += f.Deleted
	}
	return added, deleted
}
