package engine

import (
	"fmt"
	"strings"
)

// The texts the model gets when the engine corrects it. Their gist is part
// of the contract (E-43, E-46, E-48, E-52); the wording is ours.

const nudgeTruncated = "Your reply was cut off at the token limit before it was complete. " +
	"Work in smaller steps: write big files in several pieces (write_file for the first part, then insert_after or apply_edits)."

const nudgeEmpty = "Your reply was empty. Continue with the task using the tools, " +
	"or call finish(summary=...) if the task is done."

const nudgeTextToolCall = "You wrote a tool call as text. Only tool calls made through the tools API are run; " +
	"re-issue it as a real tool call."

const nudgeTimeout = "A command timed out: it did not finish and its result is unknown. " +
	"Re-run it with a larger timeout (up to 600 s) or split it into smaller steps; a timeout is not a pass."

const argsCutOff = "your reply was cut off at the token limit before this tool call was complete. " +
	"Emit smaller tool calls, and write big files in several pieces."

func nudgeFor(kind string) string {
	switch kind {
	case replyTruncated:
		return nudgeTruncated
	case replyTextToolCall:
		return nudgeTextToolCall
	default:
		return nudgeEmpty
	}
}

func stallText(n int) string {
	return fmt.Sprintf("No progress in the last %d turns (no file changed, no new output). "+
		"If the task is done, call finish(summary=...); otherwise change your approach.", n)
}

func malformedText(k int) string {
	calls := "calls were"
	if k == 1 {
		calls = "call was"
	}
	return fmt.Sprintf("%d of your tool %s malformed and discarded (missing id or function name). "+
		"Re-issue them as proper tool calls.", k, calls)
}

func verifyFailedText(round, rounds int, command string, exit *int, tail, reason string, sealed []string) string {
	code := "none (it timed out or could not run)"
	if exit != nil {
		code = fmt.Sprint(*exit)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "VERIFY FAILED (round %d of %d). The verification command `%s` exited with code %s.\n",
		round, rounds+1, command, code)
	if reason != "" {
		fmt.Fprintf(&b, "It does not count: %s.\n", reason)
	}
	fmt.Fprintf(&b, "Last output:\n%s\n\n", tail)
	if len(sealed) > 0 {
		b.WriteString("Before it ran, the tree was made what the review and the export take:\n")
		for _, s := range sealed {
			b.WriteString("- " + s + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("Fix the problem, then call finish(summary=...) again.")
	return b.String()
}

// joinParagraphs joins the non-empty parts with blank lines.
func joinParagraphs(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n\n")
}
