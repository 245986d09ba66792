package policy

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
)

// rewriteWorktrees returns command with every reference to a worktree root
// read as ".", longer roots first (see Options.Worktrees). Models cd into
// the worktree by absolute path all the time; the rewrite lets that pass
// while whatever follows the root — "/../x", or "evil" glued onto it — is
// still judged by the rules.
func rewriteWorktrees(command string, worktrees []string) string {
	for _, root := range worktreeRoots(worktrees) {
		command = replaceRoot(command, root)
	}
	return command
}

// worktreeRoots cleans the usable roots, drops duplicates and sorts them
// longest first.
func worktreeRoots(paths []string) []string {
	roots := make([]string, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if p == string(filepath.Separator) || slices.Contains(roots, p) {
			continue
		}
		roots = append(roots, p)
	}
	slices.SortStableFunc(roots, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return roots
}

// replaceRoot replaces each occurrence of root in s that ends at a path or
// word boundary (/, whitespace, a quote, or the end of s) with ".". The
// match is case-sensitive, like the file system the root names.
func replaceRoot(s, root string) string {
	var b strings.Builder
	copied := 0 // s[:copied] is already in b
	for from := 0; ; {
		k := strings.Index(s[from:], root)
		if k < 0 {
			break
		}
		k += from
		end := k + len(root)
		if !endsRoot(s, end) {
			from = k + 1
			continue
		}
		b.WriteString(s[copied:k])
		b.WriteByte('.')
		copied, from = end, end
	}
	if copied == 0 {
		return s
	}
	b.WriteString(s[copied:])
	return b.String()
}

// endsRoot reports whether a root occurrence ending at offset end is a whole
// path component: the end of s, or /, whitespace or a quote.
func endsRoot(s string, end int) bool {
	if end == len(s) {
		return true
	}
	c := s[end]
	return c == '/' || c == '\'' || c == '"' || isSpace(c)
}
