package seatbelt

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// sexp is a parsed SBPL form: a list, a symbol, a string or a regex
// literal.
type sexp struct {
	list   []sexp
	isList bool
	sym    string
	str    string
	isStr  bool
	re     string
	isRe   bool
}

// parseSBPL parses a whole profile into its top-level forms, failing on
// unbalanced parentheses, unterminated strings and unknown escapes.
func parseSBPL(text string) ([]sexp, error) {
	p := &sbplParser{s: text}
	var forms []sexp
	for {
		p.skip()
		if p.i >= len(p.s) {
			return forms, nil
		}
		if p.s[p.i] != '(' {
			return nil, fmt.Errorf("offset %d: top level holds %q, not a form", p.i, p.s[p.i])
		}
		f, err := p.form()
		if err != nil {
			return nil, err
		}
		forms = append(forms, f)
	}
}

type sbplParser struct {
	s string
	i int
}

// skip passes blanks and comments.
func (p *sbplParser) skip() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ';':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case ' ', '\n', '\t':
			p.i++
		default:
			return
		}
	}
}

func (p *sbplParser) form() (sexp, error) {
	p.skip()
	if p.i >= len(p.s) {
		return sexp{}, fmt.Errorf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '(':
		p.i++
		l := sexp{isList: true}
		for {
			p.skip()
			if p.i >= len(p.s) {
				return sexp{}, fmt.Errorf("unbalanced: a list is not closed")
			}
			if p.s[p.i] == ')' {
				p.i++
				return l, nil
			}
			f, err := p.form()
			if err != nil {
				return sexp{}, err
			}
			l.list = append(l.list, f)
		}
	case c == ')':
		return sexp{}, fmt.Errorf("offset %d: unbalanced ')'", p.i)
	case c == '"':
		s, err := p.str()
		return sexp{str: s, isStr: true}, err
	case c == '#' && strings.HasPrefix(p.s[p.i:], `#"`):
		p.i++
		s, err := p.str()
		return sexp{re: s, isRe: true}, err
	default:
		start := p.i
		for p.i < len(p.s) && !strings.ContainsRune(" \n\t()\";", rune(p.s[p.i])) {
			p.i++
		}
		return sexp{sym: p.s[start:p.i]}, nil
	}
}

// str reads a string literal at p.i (its opening quote).
func (p *sbplParser) str() (string, error) {
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\n':
			return "", fmt.Errorf("a raw newline inside a string")
		case '\\':
			if p.i >= len(p.s) {
				return "", fmt.Errorf("an escape at the end")
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '"', '\\':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			default:
				return "", fmt.Errorf("unknown escape \\%c", e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated string")
}

// sbplRule is a file grant read back from a profile.
type sbplRule struct {
	access Access
	filter sexp
}

// fileRules reads the file grants of a parsed profile, checking that
// every form is one this package writes.
func fileRules(t *testing.T, forms []sexp) []sbplRule {
	t.Helper()
	var out []sbplRule
	for _, f := range forms {
		if !f.isList || len(f.list) == 0 || f.list[0].sym == "" {
			t.Fatalf("a form without a head: %+v", f)
		}
		switch f.list[0].sym {
		case "version", "deny":
			continue
		case "allow":
		default:
			t.Fatalf("unknown form %q", f.list[0].sym)
		}
		access := Deny
		var filters []sexp
		for _, a := range f.list[1:] {
			switch {
			case a.sym == "file-read-metadata":
				access = max(access, Metadata)
			case a.sym == "file-read*":
				access = max(access, Read)
			case a.sym == "file-write*":
				access = max(access, Write)
			case a.sym != "":
			default:
				filters = append(filters, a)
			}
		}
		if access == Deny {
			continue // not a file grant
		}
		if len(filters) != 1 {
			t.Fatalf("a file grant with %d filters", len(filters))
		}
		out = append(out, sbplRule{access: access, filter: filters[0]})
	}
	return out
}

// evalFilter evaluates a filter of the profile on canonical path p, the
// parameters given.
func evalFilter(t *testing.T, f sexp, params map[string]string, p string) bool {
	t.Helper()
	if !f.isList || len(f.list) == 0 {
		t.Fatalf("a filter that is not a list: %+v", f)
	}
	arg := func() string {
		if len(f.list) != 2 {
			t.Fatalf("%s takes one argument", f.list[0].sym)
		}
		a := f.list[1]
		if a.isStr {
			return a.str
		}
		if a.isList && len(a.list) == 2 && a.list[0].sym == "param" && a.list[1].isStr {
			v, ok := params[a.list[1].str]
			if !ok {
				t.Fatalf("parameter %q is not given", a.list[1].str)
			}
			return v
		}
		t.Fatalf("an argument that is neither a string nor a parameter: %+v", a)
		return ""
	}
	switch f.list[0].sym {
	case "subpath":
		return under(p, arg())
	case "literal":
		return p == arg()
	case "regex":
		if len(f.list) != 2 || !f.list[1].isRe {
			t.Fatalf("regex without a regex literal")
		}
		return regexp.MustCompile(f.list[1].re).MatchString(p)
	case "require-not":
		return !evalFilter(t, f.list[1], params, p)
	case "require-all":
		for _, g := range f.list[1:] {
			if !evalFilter(t, g, params, p) {
				return false
			}
		}
		return true
	}
	t.Fatalf("unknown filter %q", f.list[0].sym)
	return false
}

// evalProfile is what the profile's text grants on path, evaluated from
// the text alone: the check that Profile writes what Decide decides.
func evalProfile(t *testing.T, pr Profile, path string) Access {
	t.Helper()
	forms, err := parseSBPL(pr.Text)
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{}
	for _, p := range pr.Params {
		params[p.Name] = p.Value
	}
	c := Canonical(path)
	best := Deny
	for _, r := range fileRules(t, forms) {
		if evalFilter(t, r.filter, params, c) {
			best = max(best, r.access)
		}
	}
	return best
}

func TestParseSBPLRejectsMalformed(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`(allow file-read* (subpath "/usr")`,
		`(allow file-read*))`,
		`(allow file-read* (subpath "/usr))`,
		"(allow file-read* (subpath \"/u\nsr\"))",
		`(allow file-read* (subpath "/u\qsr"))`,
		`allow`,
	} {
		if _, err := parseSBPL(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	forms, err := parseSBPL(`(version 1) ; a comment (
(allow file-read* (subpath "a\"b\\c\n)"))`)
	if err != nil || len(forms) != 2 || forms[1].list[2].list[1].str != "a\"b\\c\n)" {
		t.Errorf("parse = %+v, %v", forms, err)
	}
}
