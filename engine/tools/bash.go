package tools

import (
	"fmt"
	"strings"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/sandbox"
)

// Bash limits (E-35).
const (
	bashDefaultTimeout = 120
	bashMaxTimeout     = 600
	bashOutputCap      = 10000
)

// FormatBash renders a finished command as the model reads it:
// "exit code: <rc>" and the trimmed output, capped; or the timeout or
// launch-failure text. A timed-out command shows no partial output, so the
// model cannot mistake a fragment for a result.
func FormatBash(r sandbox.BashResult) string {
	if r.TimedOut {
		secs := int(r.Timeout.Seconds())
		return fmt.Sprintf("%s%ds — it did not finish and its result is unknown. "+
			"Re-run it with a larger timeout (up to %d s) or split it into smaller steps; "+
			"do not treat it as a pass.", policy.TimeoutPrefix, secs, bashMaxTimeout)
	}
	if r.LaunchError != "" {
		return "ERROR: bash failed: " + r.LaunchError
	}
	out := strings.TrimSpace(r.Output)
	note := ""
	if r.Capped {
		note = " — bash output capped"
	}
	if capped, cut := cutRunes(out, bashOutputCap); cut || r.Capped {
		out = capped + fmt.Sprintf("\n[output truncated at %d chars%s]", bashOutputCap, note)
	}
	return fmt.Sprintf("%s%d\n%s", policy.ExitCodePrefix, r.ExitCode, out)
}

// cutRunes returns the first n runes of s, and whether anything was cut.
func cutRunes(s string, n int) (string, bool) {
	if len(s) <= n { // fewer bytes than n means fewer runes too
		return s, false
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], true
		}
		i++
	}
	return s, false
}
