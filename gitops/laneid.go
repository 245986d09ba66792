package gitops

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxEncodedLaneID bounds the encoded form of a lane id, so that
// "dw-<enc>" and the ref lock file "<enc>.lock" stay well inside the
// 255-byte file name limit of common filesystems.
const MaxEncodedLaneID = 200

// Lane names derived from an encoded id.
const (
	worktreePrefix = "dw-"
	branchPrefix   = "dirtywork/"
)

// EncodeLaneID maps an owner id (any printable UTF-8 string, e.g.
// "RUN/TASK") to the name used for its worktree directory (dw-<enc>) and
// branch (dirtywork/<enc>).
//
// Bytes in [a-z0-9-] stay as they are, so a run slug encodes to itself and
// runs keep their dw-<slug> and dirtywork/<slug> names; every other byte of
// the UTF-8 becomes _xx in lowercase hex ('_' itself is _5f, 'A' is _41,
// '/' is _2f). The encoding is reversible and collision-free, also on
// case-insensitive filesystems since it has no upper-case letters, and it
// is always a valid ref name component and path component.
//
// Empty ids, ids with invalid UTF-8 or non-printable characters, and ids
// whose encoding would exceed MaxEncodedLaneID bytes are refused with
// ErrInvalidLaneID.
func EncodeLaneID(id string) (string, error) {
	if err := validateLaneID(id); err != nil {
		return "", err
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if isLaneByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
		if b.Len() > MaxEncodedLaneID {
			return "", fmt.Errorf("%w %q: too long (its encoded form exceeds %d bytes)", ErrInvalidLaneID, truncateForMessage(id), MaxEncodedLaneID)
		}
	}
	return b.String(), nil
}

// DecodeLaneID is the inverse of EncodeLaneID. It accepts only exact
// encodings (lowercase hex, no stray characters) of valid ids, so
// DecodeLaneID(enc) succeeds iff enc == EncodeLaneID(id) for some id.
func DecodeLaneID(enc string) (string, error) {
	if enc == "" || len(enc) > MaxEncodedLaneID {
		return "", fmt.Errorf("%w: %q is not an encoded lane id", ErrInvalidLaneID, enc)
	}
	out := make([]byte, 0, len(enc))
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		switch {
		case isLaneByte(c):
			out = append(out, c)
		case c == '_' && i+2 < len(enc) && isLowerHex(enc[i+1]) && isLowerHex(enc[i+2]):
			v := unhex(enc[i+1])<<4 | unhex(enc[i+2])
			if isLaneByte(v) { // would have been kept literally
				return "", fmt.Errorf("%w: %q is not an encoded lane id", ErrInvalidLaneID, enc)
			}
			out = append(out, v)
			i += 2
		default:
			return "", fmt.Errorf("%w: %q is not an encoded lane id", ErrInvalidLaneID, enc)
		}
	}
	id := string(out)
	if err := validateLaneID(id); err != nil {
		return "", fmt.Errorf("%w: %q does not decode to a valid id", ErrInvalidLaneID, enc)
	}
	return id, nil
}

// LaneWorktreeName is the worktree directory name of an encoded id.
func LaneWorktreeName(enc string) string { return worktreePrefix + enc }

// LaneBranch is the branch (short name) of an encoded id.
func LaneBranch(enc string) string { return branchPrefix + enc }

// validateLaneID refuses ids that cannot be encoded.
func validateLaneID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: it is empty", ErrInvalidLaneID)
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("%w %q: not valid UTF-8", ErrInvalidLaneID, truncateForMessage(id))
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w %q: contains the non-printable character %U", ErrInvalidLaneID, truncateForMessage(id), r)
		}
	}
	return nil
}

// truncateForMessage keeps error messages about huge ids readable.
func truncateForMessage(id string) string {
	const keep = 60
	if len(id) <= keep {
		return id
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "..."
}

func isLaneByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
