package policy

import (
	"crypto/sha256"
	"strings"
)

// Fingerprint identifies a bash call for the progress and repeat trackers
// (E-48, E-51): SHA-256 of command, a NUL byte, and result with its
// volatile tokens deleted. The first line ("exit code: N") is kept
// verbatim, because a changed exit status is real news. In the rest, tokens
// that differ between otherwise identical runs are deleted: durations, clock
// times, ISO dates and long lowercase hex ids (commit and container ids).
// Everything else — a test count, a counter, a line number, a decimal —
// still counts as a different result.
func Fingerprint(command, result string) [sha256.Size]byte {
	return sha256.Sum256([]byte(command + "\x00" + normalizeResult(result)))
}

// normalizeResult keeps result's first line, with its newline, and deletes
// the volatile tokens from the rest. At each offset it tries, in order, a
// duration, a clock time, an ISO date and a hex id, deletes the first that
// matches and continues after it: the leftmost-first alternation of the
// Perl-syntax expression
//
//	\d+(?:\.\d+)?\s?(?:ms|s|secs?|seconds?|min|mins?|minutes?|h|hours?)\b
//	| \d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?
//	| \d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?
//	| \b(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b
//
// written as a scanner because RE2 has no look-ahead for the last branch.
// Matching is case-sensitive, the classes \d, \s and \b are ASCII (see
// text.go), and word boundaries are taken in the body alone, as if it were
// the whole text.
func normalizeResult(result string) string {
	head, body, found := strings.Cut(result, "\n")
	if !found {
		return result
	}
	var b strings.Builder
	b.Grow(len(result))
	b.WriteString(head)
	b.WriteByte('\n')
	// A number that fails as a duration fails from each of its later
	// digits too (they reach the same end and the same unit), so those
	// offsets skip the duration test; without this a long run of digits
	// would cost quadratic time.
	noDurationBefore := 0
	for i := 0; i < len(body); {
		n := 0
		if i >= noDurationBefore {
			var digitsEnd int
			n, digitsEnd = durationAt(body, i)
			if n == 0 {
				noDurationBefore = digitsEnd
			}
		}
		if n == 0 {
			n = clockAt(body, i)
		}
		if n == 0 {
			n = isoDateAt(body, i)
		}
		if n == 0 {
			n = hexIDAt(body, i)
		}
		if n > 0 {
			i += n
			continue
		}
		b.WriteByte(body[i])
		i++
	}
	return b.String()
}

// durationUnits are the units a duration may end in.
var durationUnits = map[string]bool{
	"ms": true, "s": true, "sec": true, "secs": true, "second": true, "seconds": true,
	"min": true, "mins": true, "minute": true, "minutes": true,
	"h": true, "hour": true, "hours": true,
}

// durationAt returns the length of the duration starting at s[i] — digits,
// an optional .digits, an optional whitespace byte, and a unit that ends the
// word — or 0, and the end of the leading digits (i when there are none).
// Only the end of a duration is word-bounded: "took12ms" loses "12ms".
func durationAt(s string, i int) (n, digitsEnd int) {
	j := skipDigits(s, i)
	if j == i {
		return 0, i
	}
	digitsEnd = j
	j = decimalEnd(s, j)
	if j < len(s) && isSpace(s[j]) {
		j++
	}
	unitEnd := j
	for unitEnd < len(s) && isWord(s[unitEnd]) {
		unitEnd++
	}
	// The unit must be the whole rest of the word for the boundary after
	// it to hold, so it is looked up as a whole.
	if !durationUnits[s[j:unitEnd]] {
		return 0, digitsEnd
	}
	return unitEnd - i, digitsEnd
}

// clockAt returns the length of the clock time H:MM or HH:MM, with optional
// :SS and an optional .frac or ,frac, starting at s[i], or 0. Neither end is
// word-bounded.
func clockAt(s string, i int) int {
	if !isDigitAt(s, i) {
		return 0
	}
	j := i + 1
	if isDigitAt(s, j) {
		j++
	}
	if j >= len(s) || s[j] != ':' || !twoDigitsAt(s, j+1) {
		return 0
	}
	j += 3
	if j < len(s) && s[j] == ':' && twoDigitsAt(s, j+1) {
		j += 3
	}
	return fractionEnd(s, j) - i
}

// isoDateAt returns the length of the ISO date YYYY-MM-DD starting at s[i],
// with the optional time that may follow it ("T" or a space, HH:MM, :SS, a
// fraction, and a zone Z, ±HH:MM or ±HHMM), or 0.
func isoDateAt(s string, i int) int {
	if !fourDigitsAt(s, i) || !byteAt(s, i+4, '-') || !twoDigitsAt(s, i+5) ||
		!byteAt(s, i+7, '-') || !twoDigitsAt(s, i+8) {
		return 0
	}
	j := i + 10
	hasTime := (byteAt(s, j, 'T') || byteAt(s, j, ' ')) && twoDigitsAt(s, j+1) &&
		byteAt(s, j+3, ':') && twoDigitsAt(s, j+4)
	if !hasTime {
		return j - i
	}
	j += 6
	if byteAt(s, j, ':') && twoDigitsAt(s, j+1) {
		j += 3
	}
	j = fractionEnd(s, j)
	switch {
	case byteAt(s, j, 'Z'):
		j++
	case (byteAt(s, j, '+') || byteAt(s, j, '-')) && twoDigitsAt(s, j+1):
		switch k := j + 3; {
		case byteAt(s, k, ':') && twoDigitsAt(s, k+1):
			j = k + 3
		case twoDigitsAt(s, k):
			j = k + 2
		}
	}
	return j - i
}

// hexIDAt returns the length of the lowercase hex word of 7 to 64
// characters, at least one of them a-f, starting at s[i], or 0. The letter
// keeps byte counts and other long plain numbers.
func hexIDAt(s string, i int) int {
	if i > 0 && isWord(s[i-1]) {
		return 0
	}
	j, letter := i, false
	for j < len(s) && (isDigit(s[j]) || ('a' <= s[j] && s[j] <= 'f')) {
		letter = letter || s[j] >= 'a'
		j++
	}
	if n := j - i; n < 7 || n > 64 || !letter || (j < len(s) && isWord(s[j])) {
		return 0
	}
	return j - i
}

// decimalEnd returns the offset after a decimal part at s[i] — a '.' and
// one or more digits — or i when there is none.
func decimalEnd(s string, i int) int {
	if byteAt(s, i, '.') && isDigitAt(s, i+1) {
		return skipDigits(s, i+1)
	}
	return i
}

// fractionEnd returns the offset after a fraction of a second at s[i] — a
// '.' or ',' and one or more digits — or i when there is none.
func fractionEnd(s string, i int) int {
	if (byteAt(s, i, '.') || byteAt(s, i, ',')) && isDigitAt(s, i+1) {
		return skipDigits(s, i+1)
	}
	return i
}

// skipDigits returns the offset of the first non-digit at or after i.
func skipDigits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func byteAt(s string, i int, c byte) bool { return i < len(s) && s[i] == c }

func isDigitAt(s string, i int) bool { return i < len(s) && isDigit(s[i]) }

func twoDigitsAt(s string, i int) bool { return isDigitAt(s, i) && isDigitAt(s, i+1) }

func fourDigitsAt(s string, i int) bool { return twoDigitsAt(s, i) && twoDigitsAt(s, i+2) }
