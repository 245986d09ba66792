package gitops

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors for states callers branch on. Their text is worded to
// follow the subject it describes ("repository /x has no commits"), because
// the CLI prints them to people.
var (
	// ErrNotDir: the repository path does not exist or is not a directory.
	ErrNotDir = errors.New("is not a directory")
	// ErrNotWorkTree: the path is not inside a git work tree (a bare
	// repository or the inside of a .git directory count as outside).
	ErrNotWorkTree = errors.New("is not inside a git work tree")
	// ErrNoCommits: HEAD does not resolve to a commit.
	ErrNoCommits = errors.New("has no commits")

	// ErrInvalidLaneID: a lane id is empty, not printable UTF-8, or too long
	// once encoded; or a name is not the encoding of any id.
	ErrInvalidLaneID = errors.New("invalid lane id")
	// ErrLaneOpen: the manifest already holds a lane with this id.
	ErrLaneOpen = errors.New("is already open")
	// ErrNoLane: no lane with this id was ever opened (or its record is gone).
	ErrNoLane = errors.New("no such lane")

	// ErrWorktreesNotDir: <repo>/.worktrees exists but is not a real
	// directory (a file, or a symlink to anything).
	ErrWorktreesNotDir = errors.New("exists but is not a real directory")
	// ErrDestinationExists: something (even an empty directory or a
	// dangling symlink) is already at the lane's worktree path.
	ErrDestinationExists = errors.New("already exists")
	// ErrBranchExists: the lane's branch already exists; it is left alone.
	ErrBranchExists = errors.New("already exists")
	// ErrBadRef: the ref to branch from does not name a commit.
	ErrBadRef = errors.New("does not name a commit")
	// ErrWorktreeAdd: git worktree add failed; the message carries git's
	// stderr.
	ErrWorktreeAdd = errors.New("git worktree add failed")
	// ErrWorktreeEscaped: the created worktree does not resolve under the
	// resolved <repo>/.worktrees; it was removed again.
	ErrWorktreeEscaped = errors.New("does not resolve under")
	// ErrUnsafeFile: a file dirtywork writes in the git dir (the exclude
	// file, the lane state directory) is a symlink, not a regular file or
	// directory, or resolves outside the common git dir.
	ErrUnsafeFile = errors.New("is unsafe to write")
	// ErrCorruptManifest: the lane manifest cannot be parsed or fails
	// validation. It is never overwritten silently.
	ErrCorruptManifest = errors.New("lane manifest is corrupt")
)

// maxStderr caps the stderr kept in an Error: enough for git's message and
// hints, bounded against a runaway command.
const maxStderr = 4000

// Error is a git command that ran and failed (or could not start). It
// carries the exit code and stderr; Unwrap yields the underlying
// *exec.ExitError or start error.
type Error struct {
	// Args is the argv after the git executable, including -C and -c.
	Args []string
	// Subcommand is the git subcommand, e.g. "worktree".
	Subcommand string
	// ExitCode is git's exit status, or -1 if it did not exit normally.
	ExitCode int
	// Stderr is what git wrote to stderr, trimmed and capped.
	Stderr string
	// Err is the underlying error from os/exec.
	Err error
}

// Error returns git's own words when it said something, since callers wrap
// it with the operation that failed.
func (e *Error) Error() string {
	if e.Stderr != "" {
		return e.Stderr
	}
	if e.ExitCode >= 0 {
		return fmt.Sprintf("git %s exited with status %d", e.Subcommand, e.ExitCode)
	}
	return fmt.Sprintf("git %s: %v", e.Subcommand, e.Err)
}

// Unwrap returns the underlying os/exec error.
func (e *Error) Unwrap() error { return e.Err }

// exitCodeOf reports the exit code of a git failure, or -1 when err is not
// a git *Error (for example a cancelled context).
func exitCodeOf(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// trimStderr trims and caps stderr text for an Error.
func trimStderr(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > maxStderr {
		s = s[:maxStderr] + " [truncated]"
	}
	return s
}
