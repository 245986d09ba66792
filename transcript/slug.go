package transcript

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode"
)

const (
	// slugWords is how many words of the task the slug keeps.
	slugWords = 5
	// slugBaseMax caps the task-derived part of a slug, in bytes (it is ASCII).
	slugBaseMax = 40
	// slugFallback is the base of a slug whose task leaves nothing usable.
	slugFallback = "task"
	// slugTimeLayout is MMDDHHMMSS.
	slugTimeLayout = "0102150405"
	// slugSaltBytes random bytes become the 8-hex-digit salt.
	slugSaltBytes = 4
)

// slugPattern is the rule every run slug handed to us must follow, so a slug
// can never name anything but a direct child of the runs root.
var slugPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// NewSlug builds a run slug `<base>-<MMDDHHMMSS>-<salt>` from the task text,
// the start time (rendered in local time) and 4 bytes read from rnd (crypto
// randomness when rnd is nil).
//
// The base keeps the first five words of the lowercased task after dropping
// every character other than a-z, 0-9, whitespace and '-'; runs of '-' are
// collapsed, the result is cut to 40 characters and trimmed of '-' at both
// ends, and an empty result becomes "task".
func NewSlug(task string, now time.Time, rnd io.Reader) (string, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	salt := make([]byte, slugSaltBytes)
	if _, err := io.ReadFull(rnd, salt); err != nil {
		return "", fmt.Errorf("read random salt for the run slug: %w", err)
	}
	return slugBase(task) + "-" + now.Local().Format(slugTimeLayout) + "-" + hex.EncodeToString(salt), nil
}

// NewSlugNow is NewSlug at the current time with crypto randomness.
func NewSlugNow(task string) (string, error) {
	return NewSlug(task, time.Now(), nil)
}

// slugBase derives the task part of a slug; the steps and their order are
// part of the slug contract.
func slugBase(task string) string {
	var kept strings.Builder
	for _, r := range strings.ToLower(task) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' || isSlugSpace(r) {
			kept.WriteRune(r)
		}
	}
	words := strings.FieldsFunc(kept.String(), isSlugSpace)
	if len(words) > slugWords {
		words = words[:slugWords]
	}
	base := collapseHyphens(strings.Join(words, "-"))
	// Only ASCII survives the filter above, so a byte cut is a character cut.
	if len(base) > slugBaseMax {
		base = base[:slugBaseMax]
	}
	base = strings.Trim(base, "-")
	if base == "" {
		return slugFallback
	}
	return base
}

// isSlugSpace reports whether r separates words in a task. Besides Unicode
// white space it counts the ASCII information separators U+001C..U+001F, so
// slugs match the ones earlier dirtywork versions made for the same task.
func isSlugSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// collapseHyphens replaces every run of '-' with a single '-'.
func collapseHyphens(s string) string {
	var b strings.Builder
	prevHyphen := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' && prevHyphen {
			continue
		}
		prevHyphen = c == '-'
		b.WriteByte(c)
	}
	return b.String()
}

// ValidSlug checks a run slug given by a user or found on disk: it must match
// [A-Za-z0-9][A-Za-z0-9._-]* and must not be "." or "..". The error matches
// ErrInvalidSlug.
func ValidSlug(s string) error {
	if s == "." || s == ".." || !slugPattern.MatchString(s) {
		return &runError{kind: ErrInvalidSlug, msg: fmt.Sprintf("invalid run slug '%s'", s)}
	}
	return nil
}
