package fsops

import (
	"bytes"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the .gitignore semantics grep walks by (gitignore(5)):
// a line parser and a port of git's wildmatch. It is written here rather
// than imported because the well-kept matcher, go-git's, brings a whole
// git implementation into the module graph; the tests check this one
// against git itself.

// ignoreRule is one pattern line of a .gitignore or .git/info/exclude file.
type ignoreRule struct {
	// base is the directory holding the file, relative to the tree root
	// ("" for the root). A rule only applies to paths beneath it.
	base string
	// baseLen is base's length in runes.
	baseLen int
	// pattern is the glob without its "!", leading "/" or trailing "/".
	pattern []rune
	negate  bool
	dirOnly bool
	// basename is set when the pattern has no "/" (other than a trailing
	// one): it then matches a name at any depth below base. Otherwise it
	// is anchored to base and matched against the path below it.
	basename bool
}

// ignoreRules are rules in rising precedence, as git orders them:
// .git/info/exclude, then the root's .gitignore, then deeper ones, and
// within a file later lines after earlier ones. The last rule that matches
// a path decides.
type ignoreRules []ignoreRule

var utf8BOM = []byte("\xef\xbb\xbf")

// parseIgnore reads the rules of one ignore file that lives in directory
// base ("" for the root).
func parseIgnore(data []byte, base string) []ignoreRule {
	data = bytes.TrimPrefix(data, utf8BOM)
	var rules []ignoreRule
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		line = trimTrailingSpaces(line)
		negate := strings.HasPrefix(line, "!")
		if negate {
			line = line[1:]
		}
		if r, ok := parseRule(line, base); ok {
			r.negate = negate
			rules = append(rules, r)
		}
	}
	return rules
}

// parseRule reads one pattern (without a leading "!") found in directory
// base. An empty pattern matches nothing and is dropped.
func parseRule(line, base string) (ignoreRule, bool) {
	r := ignoreRule{base: base, baseLen: utf8.RuneCountInString(base)}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	r.basename = !strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if line == "" {
		return r, false
	}
	r.pattern = []rune(line)
	return r, true
}

// trimTrailingSpaces drops unescaped trailing spaces, as git does (tabs
// stay; "\ " keeps its space).
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i == len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// ignored reports whether the rules exclude rel, a slash-separated path
// relative to the tree root. Callers walk top-down and never enter an
// excluded directory, which is how git makes "a file inside an excluded
// directory cannot be re-included" hold.
func (rs ignoreRules) ignored(rel string, isDir bool) bool {
	name := []rune(path.Base(rel))
	full := []rune(rel)
	for i := len(rs) - 1; i >= 0; i-- {
		r := &rs[i]
		if r.dirOnly && !isDir {
			continue
		}
		below, ok := r.below(rel, full)
		if !ok {
			continue
		}
		var hit bool
		if r.basename {
			hit = dowild(r.pattern, 0, name, 0, false) == wmMatch
		} else {
			hit = dowild(r.pattern, 0, below, 0, true) == wmMatch
		}
		if hit {
			return !r.negate
		}
	}
	return false
}

// below returns the part of rel (whose runes are full) below the rule's
// base, and whether rel is below it at all.
func (r *ignoreRule) below(rel string, full []rune) ([]rune, bool) {
	if r.base == "" {
		return full, true
	}
	if len(rel) <= len(r.base) || rel[len(r.base)] != '/' || !strings.HasPrefix(rel, r.base) {
		return nil, false
	}
	return full[r.baseLen+1:], true
}

// wmResult is wildmatch's verdict; the two aborts let a caller's "*" stop
// trying further positions early, as git's does.
type wmResult int

const (
	wmMatch wmResult = iota
	wmNoMatch
	wmAbortAll
	wmAbortToStarStar
)

// dowild matches text[ti:] against pat[pi:], a port of git's wildmatch.c
// over runes rather than bytes (so "?" takes one character). With
// pathname, "*", "?" and brackets never match "/" and only "**" bounded by
// slashes crosses directories; without it (base names) "/" cannot occur.
func dowild(pat []rune, pi int, text []rune, ti int, pathname bool) wmResult {
	for ; pi < len(pat); pi, ti = pi+1, ti+1 {
		pc := pat[pi]
		if ti >= len(text) && pc != '*' {
			return wmAbortAll
		}
		var tc rune
		if ti < len(text) {
			tc = text[ti]
		}
		switch pc {
		case '\\':
			// The next character is literal; a trailing backslash matches
			// nothing.
			pi++
			if pi >= len(pat) || tc != pat[pi] {
				return wmNoMatch
			}
		case '?':
			if pathname && tc == '/' {
				return wmNoMatch
			}
		case '*':
			return wildStar(pat, pi, text, ti, pathname)
		case '[':
			var res wmResult
			pi, res = wildBracket(pat, pi, tc, pathname)
			if res != wmMatch {
				return res
			}
		default:
			if tc != pc {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// wildStar handles a run of stars starting at pat[pi] against text[ti:].
func wildStar(pat []rune, pi int, text []rune, ti int, pathname bool) wmResult {
	matchSlash := !pathname
	pi++
	if pi < len(pat) && pat[pi] == '*' {
		prev := pi - 2
		for pi < len(pat) && pat[pi] == '*' {
			pi++
		}
		boundedBefore := prev < 0 || pat[prev] == '/'
		boundedAfter := pi == len(pat) || pat[pi] == '/' ||
			(pat[pi] == '\\' && pi+1 < len(pat) && pat[pi+1] == '/')
		if boundedBefore && boundedAfter {
			// "**/" may match no directory at all: "a/**/b" matches "a/b".
			if pi < len(pat) && pat[pi] == '/' && dowild(pat, pi+1, text, ti, pathname) == wmMatch {
				return wmMatch
			}
			matchSlash = true
		} else {
			matchSlash = false
		}
	}
	if pi == len(pat) {
		// A trailing "**" matches everything; a trailing "*" only what is
		// left of the last component.
		if !matchSlash && containsRune(text[ti:], '/') {
			return wmNoMatch
		}
		return wmMatch
	}
	if !matchSlash && pat[pi] == '/' {
		// One star then a slash: the star takes the rest of this component.
		j := indexRune(text[ti:], '/')
		if j < 0 {
			return wmNoMatch
		}
		return dowild(pat, pi+1, text, ti+j+1, pathname)
	}
	for ti < len(text) {
		// Skip ahead to the next place the literal after the star occurs;
		// what comes before it can only belong to the star.
		if !isGlobSpecial(pat[pi]) {
			for ti < len(text) && (matchSlash || text[ti] != '/') && text[ti] != pat[pi] {
				ti++
			}
			if ti >= len(text) || text[ti] != pat[pi] {
				if matchSlash {
					return wmAbortAll
				}
				return wmAbortToStarStar
			}
		}
		m := dowild(pat, pi, text, ti, pathname)
		if m != wmNoMatch {
			if !matchSlash || m != wmAbortToStarStar {
				return m
			}
		} else if !matchSlash && text[ti] == '/' {
			return wmAbortToStarStar
		}
		ti++
	}
	return wmAbortAll
}

// wildBracket matches tc against the bracket expression starting at
// pat[pi] ("["). It returns the index of the closing "]" and wmMatch, or
// the verdict that ends the match.
func wildBracket(pat []rune, pi int, tc rune, pathname bool) (int, wmResult) {
	pi++
	if pi >= len(pat) {
		return pi, wmAbortAll
	}
	pc := pat[pi]
	negated := pc == '!' || pc == '^'
	if negated {
		pi++
		if pi >= len(pat) {
			return pi, wmAbortAll
		}
		pc = pat[pi]
	}
	// prev is the previous literal, the start of a possible range; 0
	// means there is none (NUL cannot occur in a pattern).
	var prev rune
	matched := false
	for {
		switch {
		case pc == '\\':
			pi++
			if pi >= len(pat) {
				return pi, wmAbortAll
			}
			pc = pat[pi]
			if tc == pc {
				matched = true
			}
		case pc == '-' && prev != 0 && pi+1 < len(pat) && pat[pi+1] != ']':
			pi++
			pc = pat[pi]
			if pc == '\\' {
				pi++
				if pi >= len(pat) {
					return pi, wmAbortAll
				}
				pc = pat[pi]
			}
			if tc >= prev && tc <= pc {
				matched = true
			}
			pc = 0
		case pc == '[' && pi+1 < len(pat) && pat[pi+1] == ':':
			start := pi + 2
			end := start
			for end < len(pat) && pat[end] != ']' {
				end++
			}
			if end >= len(pat) {
				return end, wmAbortAll
			}
			if end-start-1 < 0 || pat[end-1] != ':' {
				// No ":]": the "[" is an ordinary member.
				if tc == '[' {
					matched = true
				}
				pc = '['
				break
			}
			ok, known := charClass(string(pat[start:end-1]), tc)
			if !known {
				return end, wmAbortAll
			}
			if ok {
				matched = true
			}
			pi = end
			pc = 0
		default:
			if tc == pc {
				matched = true
			}
		}
		prev = pc
		pi++
		if pi >= len(pat) {
			return pi, wmAbortAll
		}
		pc = pat[pi]
		if pc == ']' {
			break
		}
	}
	if matched == negated || (pathname && tc == '/') {
		return pi, wmNoMatch
	}
	return pi, wmMatch
}

// charClass reports whether r is in the POSIX class name, and whether
// the class exists.
func charClass(name string, r rune) (in, known bool) {
	switch name {
	case "alnum":
		return unicode.IsLetter(r) || unicode.IsDigit(r), true
	case "alpha":
		return unicode.IsLetter(r), true
	case "blank":
		return r == ' ' || r == '\t', true
	case "cntrl":
		return unicode.IsControl(r), true
	case "digit":
		return r >= '0' && r <= '9', true
	case "graph":
		return unicode.IsGraphic(r) && !unicode.IsSpace(r), true
	case "lower":
		return unicode.IsLower(r), true
	case "print":
		return unicode.IsPrint(r), true
	case "punct":
		return unicode.IsPunct(r) || unicode.IsSymbol(r), true
	case "space":
		return unicode.IsSpace(r), true
	case "upper":
		return unicode.IsUpper(r), true
	case "xdigit":
		return (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F'), true
	}
	return false, false
}

func isGlobSpecial(r rune) bool {
	return r == '*' || r == '?' || r == '[' || r == '\\'
}

func containsRune(rs []rune, r rune) bool { return indexRune(rs, r) >= 0 }

func indexRune(rs []rune, r rune) int {
	for i, c := range rs {
		if c == r {
			return i
		}
	}
	return -1
}

// maxGlobAlternatives bounds what {a,b} expansion of one glob may produce.
const maxGlobAlternatives = 256

// globFilter is grep's glob argument, like rg's -g: each alternative is
// matched as a .gitignore pattern found at the tree root (a base name when
// it has no "/", else the path from the root).
type globFilter struct {
	// include keeps only the files one of its rules matches (when
	// filtering is set); directories are always entered.
	include   ignoreRules
	filtering bool
	// exclude drops the files and directories one of them matches (a
	// glob given with a leading "!").
	exclude ignoreRules
}

// parseGlob reads grep's glob argument; "" filters nothing.
func parseGlob(glob string) globFilter {
	var g globFilter
	if glob == "" {
		return g
	}
	exclude := strings.HasPrefix(glob, "!")
	if exclude {
		glob = glob[1:]
	}
	var rules ignoreRules
	for _, alt := range expandBraces(glob) {
		if r, ok := parseRule(alt, ""); ok {
			rules = append(rules, r)
		}
	}
	if exclude {
		g.exclude = rules
	} else {
		// Even an include glob that can match nothing filters.
		g.include, g.filtering = rules, true
	}
	return g
}

// admits reports whether the file rel passes the filter.
func (g globFilter) admits(rel string) bool {
	if g.filtering && !g.include.ignored(rel, false) {
		return false
	}
	return !g.exclude.ignored(rel, false)
}

// excludesDir reports whether the filter keeps grep out of directory rel.
func (g globFilter) excludesDir(rel string) bool {
	return g.exclude.ignored(rel, true)
}

// expandBraces expands the first {a,b,...} group of glob and, through
// recursion, the rest, as rg's globs allow. Braces escaped with "\" or
// left open stay literal.
func expandBraces(glob string) []string {
	depth, open := 0, -1
	var commas []int
	for i := 0; i < len(glob); i++ {
		switch glob[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open, commas = i, nil
			}
			depth++
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			prefix, suffix := glob[:open], glob[i+1:]
			var out []string
			start := open + 1
			for _, end := range append(commas, i) {
				for _, tail := range expandBraces(glob[start:end] + suffix) {
					if len(out) == maxGlobAlternatives {
						return out
					}
					out = append(out, prefix+tail)
				}
				start = end + 1
			}
			return out
		}
	}
	return []string{glob}
}
