package fsops

import (
	"strings"
	"unicode/utf8"
)

// SplitLines splits s into lines the way Python's str.splitlines() does,
// without the line endings. Besides "\n", "\r\n" and "\r" it breaks on
// "\v", "\f", "\x1c", "\x1d", "\x1e", U+0085, U+2028 and U+2029. A final
// line ending does not start another line: "a\n" is one line, "" is none.
//
// read_file numbers the lines it shows this way, and write_file counts the
// lines of a new file this way, so both agree with what the model was told
// in the contract.
func SplitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isLineBoundary(r) {
			i += size
			continue
		}
		lines = append(lines, s[start:i])
		if r == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			size = 2
		}
		i += size
		start = i
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// isLineBoundary reports whether r ends a line for str.splitlines().
// utf8.RuneError (an undecodable byte) is not one: a stray 0x85 byte is not
// the character U+0085.
func isLineBoundary(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', '\x1c', '\x1d', '\x1e', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// splitKeepNewlines splits s after every "\n" and keeps the endings, so
// only the text's true last line can lack one. The change descriptions
// compare lines this way: a line that merely contains a form feed or a
// U+2028 stays whole, and a change to the final newline alone is seen.
func splitKeepNewlines(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// countKeepNewlines is len(splitKeepNewlines(s)) without the slice.
func countKeepNewlines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		n++
	}
	return n
}
