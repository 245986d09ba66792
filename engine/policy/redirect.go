package policy

import "strings"

// redirectsOutside is rule 7: > or >>, optional whitespace and an optional
// quote, then an escape target — except /dev/null, so "2>/dev/null" stays
// allowed. The exemption is a negative look-ahead RE2 lacks, hence a scanner
// over the folded command s.
func redirectsOutside(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '>' {
			continue
		}
		// For ">>" the first '>' fails on its own (the next byte is no
		// target) and the second is tried next, so one case covers both.
		j := i + 1
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j < len(s) && (s[j] == '\'' || s[j] == '"') {
			j++
		}
		target := s[j:]
		if strings.HasPrefix(target, "/dev/null") {
			continue
		}
		if escapeTargetPrefixRE.MatchString(target) {
			return true
		}
	}
	return false
}
