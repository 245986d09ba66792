package export

import (
	"errors"
	"fmt"
)

// Sentinels for the kinds of refusal, so callers can branch with
// errors.Is. The texts callers show are the *Refusal's, not these.
var (
	// ErrNotEmpty: the destination held more than a regular `.git` file,
	// so Extract read nothing.
	ErrNotEmpty = errors.New("worktree not empty")
	// ErrGlobalHeader: the archive holds a PAX global header, whose
	// records would silently apply to every later member.
	ErrGlobalHeader = errors.New("PAX global header")
	// ErrDisallowedType: a member is neither a regular file, a directory
	// nor a symlink (a hardlink, a device, a FIFO...).
	ErrDisallowedType = errors.New("disallowed member type")
	// ErrAbsolutePath: a member's name starts with `/`.
	ErrAbsolutePath = errors.New("absolute path")
	// ErrInvalidComponent: a member's name has an empty, `.` or `..`
	// component, or one longer than a file name may be.
	ErrInvalidComponent = errors.New("invalid path component")
	// ErrGitEntry: a component of a member's name is `.git` in any case.
	ErrGitEntry = errors.New(".git-named entry")
	// ErrInvalidTarget: a symlink's target is empty or longer than a
	// symlink may hold.
	ErrInvalidTarget = errors.New("invalid symlink target")
	// ErrTooManyFiles: the archive has more members than Caps.MaxFiles.
	ErrTooManyFiles = errors.New("too many files")
	// ErrTooManyBytes: the stream, or the sizes its members declare, went
	// past Caps.MaxBytes.
	ErrTooManyBytes = errors.New("too many bytes")
	// ErrThroughSymlink: a member lies under a symlink an earlier member
	// created.
	ErrThroughSymlink = errors.New("path through a symlink")
	// ErrExtraction: anything else went wrong: a malformed or broken
	// stream, duplicate members, a member under a file, a failed write.
	ErrExtraction = errors.New("export extraction failed")
)

// Refusal is why a stream was refused. Its text is the reason callers put
// in export_status (`export_failed: <reason>`); the texts are stable, and
// each names the member it is about, or where in the stream it happened.
// errors.Is matches it against its kind's sentinel and against the
// underlying error, if any.
type Refusal struct {
	// Reason is the full sentence, e.g. "absolute path at '/etc/passwd'".
	Reason string
	// Member is the refused member's name as the archive spells it, ""
	// when the refusal is about no single member (a broken header, the
	// destination).
	Member string

	kind  error
	cause error
}

// Error returns the reason.
func (r *Refusal) Error() string { return r.Reason }

// Unwrap returns the refusal's sentinel and, when there is one, the
// error that caused it.
func (r *Refusal) Unwrap() []error {
	if r.cause == nil {
		return []error{r.kind}
	}
	return []error{r.kind, r.cause}
}

// refuse builds a refusal of kind about member (raw archive name, "" for
// none).
func refuse(kind error, member, format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...), Member: member, kind: kind}
}

// failed is an ErrExtraction refusal caused by err; what names the
// operation and its object.
func failed(member string, err error, what string) *Refusal {
	return &Refusal{
		Reason: fmt.Sprintf("export extraction failed: %s: %v", what, err),
		Member: member,
		kind:   ErrExtraction,
		cause:  err,
	}
}
