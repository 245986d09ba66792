package fsops

// IgnoreRules are .gitignore rules in rising precedence, for walkers
// outside this package (the seal): the same parser and matcher grep walks
// by, so every reader of the tree agrees on what git ignores. The zero
// value ignores nothing.
type IgnoreRules struct{ rules ignoreRules }

// ParseIgnore reads the rules of one ignore file found in directory dir
// (slash-separated, relative to the tree root; "" or "." for the root).
// An info/exclude file is read as the root's.
func ParseIgnore(data []byte, dir string) IgnoreRules {
	if dir == "." {
		dir = ""
	}
	return IgnoreRules{rules: parseIgnore(data, dir)}
}

// Then is r followed by later, which takes precedence: the rules of a
// deeper directory after those of its ancestors. r is not changed.
func (r IgnoreRules) Then(later IgnoreRules) IgnoreRules {
	if len(later.rules) == 0 {
		return r
	}
	out := make(ignoreRules, 0, len(r.rules)+len(later.rules))
	return IgnoreRules{rules: append(append(out, r.rules...), later.rules...)}
}

// Ignored reports whether the rules exclude rel, a slash-separated path
// relative to the tree root. As with git, a caller must not ask about the
// entries of a directory the rules excluded: they are ignored with it,
// whatever a later negation says.
func (r IgnoreRules) Ignored(rel string, isDir bool) bool {
	return r.rules.ignored(rel, isDir)
}
