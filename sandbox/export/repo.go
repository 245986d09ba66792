package export

import (
	"bytes"
	"io"
	"slices"
	"strings"
)

// RepoSigns are what a directory holds that makes git take it for a
// repository, by git's own rules (setup.c's is_git_directory and
// read_gitfile): a HEAD with an objects and a refs entry beside it, or a
// HEAD with a commondir file (which points objects and refs elsewhere);
// and, beyond what discovery needs, a config that sets core.bare or
// core.worktree (or includes another file, which could). git never checks
// the entries' types (objects may be a file it can "access"), so neither
// do these. A `.git` entry, the usual way in, is dropped by name before
// any of this is asked.
//
// A shell prompt with git integration runs git in every directory it
// enters, and git runs a repository's core.fsmonitor, hooks and filters,
// so no such directory may reach the host worktree.
type RepoSigns struct {
	HEAD, Objects, Refs, CommonDir bool
	// Config is set for a file named config that ConfigMarksRepository
	// judged.
	Config bool
}

// Repository reports whether the signs make a repository.
func (s RepoSigns) Repository() bool {
	return s.HEAD && (s.CommonDir || (s.Objects && s.Refs)) || s.Config
}

// repoSignName reports whether an entry named base is one of the signs
// by name alone.
func repoSignName(base string) bool {
	switch strings.ToLower(base) {
	case "head", "objects", "refs", "commondir":
		return true
	}
	return false
}

// Note records an entry named base of the directory judged; configHit is
// ConfigMarksRepository's verdict for a file named config.
func (s *RepoSigns) Note(base string, configHit bool) {
	// Case-insensitively: on a case-folding file system git's HEAD is
	// also head.
	switch strings.ToLower(base) {
	case "head":
		s.HEAD = true
	case "objects":
		s.Objects = true
	case "refs":
		s.Refs = true
	case "commondir":
		s.CommonDir = true
	case "config":
		s.Config = s.Config || configHit
	}
}

// ConfigMarksRepository reports whether a git config file's text sets
// core.bare or core.worktree, or includes another file (include.path,
// includeIf.*.path), which could set them: what turns a directory holding
// it into a repository a host git would run with. The parse follows git's
// config syntax loosely and errs on the side of yes: section and key
// names are matched case-insensitively, `[core]bare` on one line counts,
// and a line too long to judge (over 64 KiB) counts too. Only a read
// error is an error.
func ConfigMarksRepository(r io.Reader) (bool, error) {
	var s configSniffer
	if _, err := io.Copy(&s, r); err != nil {
		return false, err
	}
	return s.hit(), nil
}

// maxConfigLine is the longest config line judged; a longer one counts as
// a sign.
const maxConfigLine = 64 << 10

// configSniffer judges a config's text as it streams past, line by line,
// holding at most one line.
type configSniffer struct {
	line    []byte
	section string
	found   bool
}

func (c *configSniffer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && !c.found {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.line = append(c.line, p...)
			if len(c.line) > maxConfigLine {
				c.found = true
			}
			break
		}
		c.line = append(c.line, p[:i]...)
		c.judge(c.line)
		c.line = c.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

// hit is the verdict, the last line (without a newline) judged too.
func (c *configSniffer) hit() bool {
	if len(c.line) > 0 && !c.found {
		c.judge(c.line)
		c.line = c.line[:0]
	}
	return c.found
}

// judge reads one line: a section header (which may carry a key after
// its bracket) or a key.
func (c *configSniffer) judge(line []byte) {
	rest := strings.TrimLeft(string(line), " \t\r")
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			c.section = strings.ToLower(strings.TrimSpace(rest[1:]))
			return
		}
		name := strings.TrimSpace(rest[1:end])
		if i := strings.IndexAny(name, " \t\"."); i >= 0 {
			name = name[:i]
		}
		c.section = strings.ToLower(name)
		rest = strings.TrimLeft(rest[end+1:], " \t")
	}
	if rest == "" || rest[0] == '#' || rest[0] == ';' {
		return
	}
	end := 0
	for end < len(rest) && (isAlnum(rest[end]) || rest[end] == '-') {
		end++
	}
	key := strings.ToLower(rest[:end])
	switch {
	case c.section == "core" && (key == "bare" || key == "worktree"):
		c.found = true
	case (c.section == "include" || strings.HasPrefix(c.section, "includeif")) && key == "path":
		c.found = true
	}
}

func isAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// outermost sorts dirs and drops every one under another.
func outermost(dirs []string) []string {
	slices.Sort(dirs)
	var out []string
	for _, d := range dirs {
		if len(out) > 0 && strings.HasPrefix(d, out[len(out)-1]+"/") {
			continue
		}
		out = append(out, d)
	}
	return out
}
