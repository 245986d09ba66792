package engine

import (
	"fmt"
	"strings"
)

// SystemPrompt builds the system prompt (E-24, E-25): root is the path the
// worker's files live at, conventionsName/conventions the repository's own
// guide (CLAUDE.md or AGENTS.md at the base commit; empty when none).
func SystemPrompt(root, conventionsName, conventions string, allowCommit bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are a coding agent. The repository's files are at %s, which is your working directory.\n", root)
	b.WriteString("Do the task you are given, then reply with a plain summary of what you changed and which commands you ran.\n\n")
	b.WriteString("Rules:\n")
	b.WriteString("- Make every file change with edit_file, apply_edits (several exact replacements in one file), " +
		"insert_before, insert_after or write_file. Never change files with bash: no `sed -i`, no echo redirects, no heredocs.\n")
	b.WriteString("- Use paths relative to the repository root.\n")
	b.WriteString("- Explore before you change anything: list_dir, grep and read_file.\n")
	b.WriteString("- Verify your work by running the tests or the build with bash before you declare it done.\n")
	if allowCommit {
		b.WriteString("- Commit your work as you go in small commits with conventional messages. " +
			"Stay on the current branch: create no branches, and never push.\n")
	} else {
		b.WriteString("- Do not run git commit and do not create branches: leave your changes uncommitted for review.\n")
	}
	b.WriteString("- When you are done, call finish(summary=...). A plain reply with no tool calls also ends the run.\n")
	if strings.TrimSpace(conventions) != "" {
		fmt.Fprintf(&b, "\n## The repository's own conventions (%s)\n\n%s\n", conventionsName, conventions)
	}
	return b.String()
}
