package gitops

import (
	"bytes"
	"strings"
)

// parseStatusZ turns `git status --porcelain -z` output into porcelain
// lines such as "?? f.txt" and " M g.txt". A rename or copy entry carries
// its source path in the next NUL field; it is shown as "R  old -> new",
// like the line-based porcelain format.
func parseStatusZ(out []byte) []string {
	fields := bytes.Split(out, []byte{0})
	lines := []string{}
	for i := 0; i < len(fields); i++ {
		f := string(fields[i])
		if len(f) < 4 { // "XY p" at least; the final empty field ends here
			continue
		}
		if (f[0] == 'R' || f[0] == 'C') && i+1 < len(fields) {
			lines = append(lines, f[:3]+string(fields[i+1])+" -> "+f[3:])
			i++
			continue
		}
		lines = append(lines, f)
	}
	return lines
}

// worktreeEntry is one record of `git worktree list --porcelain -z`.
type worktreeEntry struct {
	Path     string
	Head     string
	Branch   string // full ref, e.g. refs/heads/dirtywork/x; "" when detached
	Detached bool
	Bare     bool
	Locked   bool
	Prunable bool
}

// parseWorktreeListZ parses `git worktree list --porcelain -z`: attributes
// are NUL-terminated, and an empty attribute ends each record.
func parseWorktreeListZ(out []byte) []worktreeEntry {
	var entries []worktreeEntry
	var cur *worktreeEntry
	for _, field := range bytes.Split(out, []byte{0}) {
		attr := string(field)
		if attr == "" {
			if cur != nil {
				entries = append(entries, *cur)
				cur = nil
			}
			continue
		}
		key, val, _ := strings.Cut(attr, " ")
		if key == "worktree" {
			if cur != nil {
				entries = append(entries, *cur)
			}
			cur = &worktreeEntry{Path: val}
			continue
		}
		if cur == nil {
			continue
		}
		switch key {
		case "HEAD":
			cur.Head = val
		case "branch":
			cur.Branch = val
		case "detached":
			cur.Detached = true
		case "bare":
			cur.Bare = true
		case "locked":
			cur.Locked = true
		case "prunable":
			cur.Prunable = true
		}
	}
	if cur != nil {
		entries = append(entries, *cur)
	}
	return entries
}
