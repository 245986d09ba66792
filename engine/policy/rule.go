package policy

// Rule is one entry of the bash deny-list. The zero value is no rule.
type Rule int

// The deny-list in its contractual scan order (E-37). Rules marked host-only
// protect the operator's filesystem and the parent repository, which a
// container cannot reach; the others are policy that holds in every mode.
const (
	// RuleSudo blocks sudo.
	RuleSudo Rule = iota + 1
	// RuleGitPush blocks git push, global options skipped.
	RuleGitPush
	// RuleGitSharedState blocks git subcommands that write the refs or
	// config a linked worktree shares with its parent repository
	// (host only).
	RuleGitSharedState
	// RuleDestructive blocks rm, mv, chmod and chown aimed outside the
	// worktree (host only).
	RuleDestructive
	// RuleDownloadToInterpreter blocks curl or wget piped into a shell or
	// an interpreter.
	RuleDownloadToInterpreter
	// RuleSystemControl blocks osascript, launchctl, shutdown, reboot and
	// killall.
	RuleSystemControl
	// RuleRedirect blocks > and >> into a path outside the worktree
	// (host only).
	RuleRedirect
	// RuleChdir blocks cd and pushd out of the worktree (host only).
	RuleChdir
)

// scanOrder is the contractual order in which Check tries the rules.
var scanOrder = [...]Rule{
	RuleSudo,
	RuleGitPush,
	RuleGitSharedState,
	RuleDestructive,
	RuleDownloadToInterpreter,
	RuleSystemControl,
	RuleRedirect,
	RuleChdir,
}

// BlockedPrefix starts every deny-list message; a tool result with this
// prefix is a block, not a command's output.
const BlockedPrefix = "BLOCKED:"

// blockedSuffix ends every deny-list message. It says what the check is,
// a guard against likely accidents: the sandbox is what confines commands,
// and a model must not learn that getting past this text gets past it.
const blockedSuffix = " (a guard against likely accidents; the sandbox confines commands either way). Rework the command to stay inside the worktree."

// Reason returns the rule's contractual reason, the part of the message
// between the prefix and the advice, or "" for an unknown rule.
func (r Rule) Reason() string {
	switch r {
	case RuleSudo:
		return "sudo is not allowed"
	case RuleGitPush:
		return "git push is not allowed — leave changes uncommitted for review"
	case RuleGitSharedState:
		return "git command that writes the parent repo's shared refs/config is not allowed"
	case RuleDestructive:
		return "destructive command targeting a path outside the worktree"
	case RuleDownloadToInterpreter:
		return "piping a download into an interpreter is not allowed"
	case RuleSystemControl:
		return "system-control commands are not allowed"
	case RuleRedirect:
		return "redirecting output outside the worktree is not allowed"
	case RuleChdir:
		return "changing directory out of the worktree is not allowed"
	}
	return ""
}

// Message returns the full text a blocked command gets instead of running:
// "BLOCKED: <reason> (a guard against likely accidents; the sandbox
// confines commands either way). Rework the command to stay inside the
// worktree."
func (r Rule) Message() string {
	return BlockedPrefix + " " + r.Reason() + blockedSuffix
}

// HostOnly reports whether the rule applies only in host mode. Docker mode
// skips these: inside a container there is no operator filesystem and no
// shared parent repository for a command to reach.
func (r Rule) HostOnly() bool {
	switch r {
	case RuleGitSharedState, RuleDestructive, RuleRedirect, RuleChdir:
		return true
	}
	return false
}

// String returns a short stable name for logs and test output.
func (r Rule) String() string {
	switch r {
	case RuleSudo:
		return "sudo"
	case RuleGitPush:
		return "git-push"
	case RuleGitSharedState:
		return "git-shared-state"
	case RuleDestructive:
		return "destructive"
	case RuleDownloadToInterpreter:
		return "download-to-interpreter"
	case RuleSystemControl:
		return "system-control"
	case RuleRedirect:
		return "redirect"
	case RuleChdir:
		return "chdir"
	}
	return "none"
}
