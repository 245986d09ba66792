package policy

// Mode says where a command will run, which decides the rules that apply.
type Mode int

const (
	// Host means the command runs on the operator's machine, in the
	// worktree: every rule applies. It is the zero value, so an unset mode
	// gets the full list.
	Host Mode = iota
	// Docker means the command runs inside the run's container: only the
	// rules that are not host-only apply, and no path is rewritten.
	Docker
)

// Options configure Check.
type Options struct {
	// Mode selects the rules; any value other than Docker counts as Host,
	// so an unknown mode fails toward the longer list.
	Mode Mode
	// Worktrees holds the run's worktree root as given and as resolved
	// (symlinks followed); the two may be equal. In host mode every
	// reference to a root that is followed by /, whitespace, a quote or the
	// end of the command is read as "." before the rules run, so
	// "cd <root>/sub" passes while "<root>/../x" and "<root>evil" are still
	// judged as the escapes they are. Longer roots are replaced first, so a
	// root inside another (/tmp/wt in /private/tmp/wt) cannot split it.
	// Entries that are not absolute, or are "/", are ignored: rewriting them
	// would hide real escapes.
	Worktrees []string
	// PrivateGit says the worker's git works on a repository of its own,
	// never the parent repository (a container, host mode's jail): the
	// rule about the parent repository's shared refs and config then has
	// nothing to guard.
	PrivateGit bool
}

// Check returns the first deny-list rule, in the contractual order, that
// command trips under opts, and true; or the zero Rule and false when the
// command may run. The command itself is never changed: the worktree
// rewrite applies to the copy being checked.
func Check(command string, opts Options) (Rule, bool) {
	checked := command
	if opts.Mode != Docker {
		checked = rewriteWorktrees(command, opts.Worktrees)
	}
	m := matcher{s: foldASCII(checked)}
	for _, r := range scanOrder {
		if (opts.Mode == Docker && r.HostOnly()) || (opts.PrivateGit && r == RuleGitSharedState) {
			continue
		}
		if m.hits(r) {
			return r, true
		}
	}
	return 0, false
}

// matcher evaluates the rules against one case-folded command. The git
// scan is shared by two rules, so it is done at most once.
type matcher struct {
	s          string
	git        []int
	gitScanned bool
}

// hits reports whether rule r matches the command.
func (m *matcher) hits(r Rule) bool {
	switch r {
	case RuleSudo:
		return sudoRE.MatchString(m.s)
	case RuleGitPush:
		return m.gitPush()
	case RuleGitSharedState:
		return m.gitSharedState()
	case RuleDestructive:
		return destructiveRE.MatchString(m.s)
	case RuleDownloadToInterpreter:
		return downloadToInterpreterRE.MatchString(m.s)
	case RuleSystemControl:
		return systemControlRE.MatchString(m.s)
	case RuleRedirect:
		return redirectsOutside(m.s)
	case RuleChdir:
		return chdirRE.MatchString(m.s)
	}
	return false
}

// gitStarts returns the offsets where a git subcommand may start.
func (m *matcher) gitStarts() []int {
	if !m.gitScanned {
		m.git = gitSubcommandStarts(m.s)
		m.gitScanned = true
	}
	return m.git
}
