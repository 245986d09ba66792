package policy

// The package's one definition of the character classes it matches on; see
// "How commands are matched" in the package doc for why they are ASCII.

// spaceClass is the regular-expression form of isSpace. RE2's \s leaves out
// \v, so the class is spelled out to keep expressions and scanners in step.
const spaceClass = `[\t\n\v\f\r ]`

// isSpace reports whether b is ASCII whitespace.
func isSpace(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

// isWord reports whether b is an ASCII word character (RE2's \w).
func isWord(b byte) bool {
	return b == '_' || isDigit(b) || ('a' <= b && b <= 'z') || isUpper(b)
}

// isDigit reports whether b is an ASCII digit.
func isDigit(b byte) bool {
	return '0' <= b && b <= '9'
}

// isUpper reports whether b is an ASCII upper-case letter.
func isUpper(b byte) bool {
	return 'A' <= b && b <= 'Z'
}

// foldASCII lowercases ASCII letters and leaves every other byte alone, so
// offsets into the result are offsets into s.
func foldASCII(s string) string {
	i := 0
	for i < len(s) && !isUpper(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if isUpper(b[i]) {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// hasWordPrefix reports whether s starts with word and the word ends there:
// the next byte, if any, is not a word character (RE2's ^word\b). word must
// end in a word character.
func hasWordPrefix(s, word string) bool {
	if len(s) < len(word) || s[:len(word)] != word {
		return false
	}
	return len(s) == len(word) || !isWord(s[len(word)])
}
