package policy

import (
	"strconv"
	"strings"
)

// ExitCodePrefix starts the first line of every bash result that ran to
// completion: "exit code: <rc>".
const ExitCodePrefix = "exit code: "

// TimeoutPrefix starts the result of a bash command that timed out, and
// nothing else (E-35); IsTimeout is the one predicate for it.
const TimeoutPrefix = "ERROR: command timed out after "

// ExitCode returns the integer after "exit code: " on result's first line,
// and true; or 0 and false when there is none, as for ERROR and BLOCKED
// results, which never produced an exit status (E-50).
func ExitCode(result string) (int, bool) {
	head, _, _ := strings.Cut(result, "\n")
	rest, ok := strings.CutPrefix(head, ExitCodePrefix)
	if !ok {
		return 0, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(rest))
	if err != nil {
		return 0, false
	}
	return code, true
}

// IsTimeout reports whether result is a bash timeout: the command did not
// finish and its outcome is unknown, which is not a failure of the command.
func IsTimeout(result string) bool {
	return strings.HasPrefix(result, TimeoutPrefix)
}

// IsBlocked reports whether result is a deny-list block (Rule.Message)
// rather than a command's output.
func IsBlocked(result string) bool {
	return strings.HasPrefix(result, BlockedPrefix)
}
