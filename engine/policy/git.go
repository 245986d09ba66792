package policy

import "strings"

// Rules 2 and 3 look at git's subcommand, which may follow global options:
// "git -C ../.. config x" and "git -c core.hooksPath=x push" act exactly like
// their plain forms. A subcommand may start at the token after a whole-word
// "git" and whitespace, and after any run of these options, each followed by
// whitespace:
//
//	-c <value>   (also -C, as matching is case-insensitive)
//	--<flag>     (including --flag=value)
//	-<letter>…   (such as -p or -ccolor.ui=x)
//
// A value is a whole token, so "-c" reaches both the token after it (read as
// an option of its own) and the token after its value. The scan is a single
// pass over the tokens, so it stays linear however many "git" words a
// command holds.

// token is a maximal run of non-whitespace bytes, as offsets into the
// command.
type token struct{ start, end int }

// gitSubcommandStarts returns, in ascending order, the offsets in the folded
// command s at which a git subcommand may start.
func gitSubcommandStarts(s string) []int {
	if !strings.Contains(s, "git") {
		return nil
	}
	toks := tokens(s)
	reach := make([]bool, len(toks))
	var starts []int
	for i := 1; i < len(toks); i++ {
		prev := s[toks[i-1].start:toks[i-1].end]
		switch {
		case endsWithGitWord(prev):
			reach[i] = true
		case reach[i-1] && isGitGlobalOption(prev):
			reach[i] = true
		case i >= 2 && reach[i-2] && s[toks[i-2].start:toks[i-2].end] == "-c":
			reach[i] = true
		}
		if reach[i] {
			starts = append(starts, toks[i].start)
		}
	}
	return starts
}

// tokens splits s into its maximal runs of non-whitespace bytes.
func tokens(s string) []token {
	var toks []token
	for i := 0; i < len(s); {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		start := i
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		if i > start {
			toks = append(toks, token{start, i})
		}
	}
	return toks
}

// endsWithGitWord reports whether tok ends in "git" with a word boundary
// before it, as in "git", "/usr/bin/git" or "&&git".
func endsWithGitWord(tok string) bool {
	if !strings.HasSuffix(tok, "git") {
		return false
	}
	before := len(tok) - len("git")
	return before == 0 || !isWord(tok[before-1])
}

// isGitGlobalOption reports whether tok has the shape of a git global option
// that takes no separate value: --<something> or -<letter>[…].
func isGitGlobalOption(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' {
		return false
	}
	if tok[1] == '-' {
		return len(tok) > 2
	}
	return 'a' <= tok[1] && tok[1] <= 'z'
}

// gitPush is rule 2.
func (m *matcher) gitPush() bool {
	for _, p := range m.gitStarts() {
		if hasWordPrefix(m.s[p:], "push") {
			return true
		}
	}
	return false
}

// gitSharedState is rule 3. "git config" is blocked unless a read-only flag
// (--get…, --list, -l) follows in the same segment: listing the write forms
// (--global, --unset, --file, …) would be endless, and every one of them
// writes config the worktree shares with its parent.
func (m *matcher) gitSharedState() bool {
	var flags readFlagScanner
	for _, p := range m.gitStarts() {
		rest := m.s[p:]
		if hasWordPrefix(rest, "config") {
			if !flags.follows(m.s, p+len("config")) {
				return true
			}
			continue
		}
		if gitSharedStateRE.MatchString(rest) {
			return true
		}
	}
	return false
}

// readFlagScanner answers, for ascending offsets into one command, whether a
// whitespace-led read-only config flag follows before the end of the
// segment (the next ;, | or &). It scans each segment once, which keeps
// rule 3 linear even when a command holds many "config" tokens.
type readFlagScanner struct {
	scanned bool
	segEnd  int // end of the segment scanned last
	lastHit int // offset of the last flag-leading whitespace in it, or -1
}

// follows reports whether a read-only flag follows offset p in its segment.
// Successive calls must pass non-decreasing offsets.
func (r *readFlagScanner) follows(s string, p int) bool {
	if !r.scanned || p >= r.segEnd {
		r.scanned = true
		r.segEnd = p + segmentLen(s[p:])
		r.lastHit = -1
		for q := p; q < r.segEnd; q++ {
			if isSpace(s[q]) && isConfigReadFlag(s[q+1:]) {
				r.lastHit = q
			}
		}
	}
	return r.lastHit >= p
}

// segmentLen returns the length of s up to its first ;, | or &.
func segmentLen(s string) int {
	if i := strings.IndexAny(s, ";|&"); i >= 0 {
		return i
	}
	return len(s)
}

// isConfigReadFlag reports whether s starts with a flag that makes
// "git config" read-only: --get and its variants, --list or -l.
func isConfigReadFlag(s string) bool {
	// --get needs no word check: every token that starts with it is a
	// read form (--get, --get-all, --get-regexp, --get-urlmatch).
	return strings.HasPrefix(s, "--get") || hasWordPrefix(s, "--list") || hasWordPrefix(s, "-l")
}
