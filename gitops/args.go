package gitops

// Args builds a git argument list, with conditional parts kept readable:
//
//	NewArgs("worktree", "add").ArgIf(noCheckout, "--no-checkout").Arg("-b", branch)
type Args struct {
	argv []string
}

// NewArgs starts an argument list, usually with the subcommand.
func NewArgs(args ...string) *Args {
	return &Args{argv: append([]string(nil), args...)}
}

// Arg appends args.
func (a *Args) Arg(args ...string) *Args {
	a.argv = append(a.argv, args...)
	return a
}

// ArgIf appends args only when cond holds.
func (a *Args) ArgIf(cond bool, args ...string) *Args {
	if cond {
		a.argv = append(a.argv, args...)
	}
	return a
}

// Strings returns a copy of the argument list.
func (a *Args) Strings() []string {
	return append([]string(nil), a.argv...)
}
