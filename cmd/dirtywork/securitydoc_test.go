package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// SECURITY.md at the repository's root makes claims, and each claim must
// stay true of the code. The document keeps them checkable by one rule:
// every bullet from its "## Claims" heading (with the "###" groups under
// it) up to its "## Known gaps" heading is one claim, and it ends with
// "Tests:" and the backticked names of the test functions that prove it:
//
//	- A worker's filter driver never runs on the host. Tests: `TestA`, `TestB`.
//
// A claim may wrap onto indented lines below its bullet. The known gaps,
// guarantees no test proves yet, are exempt; so is everything before the
// claims heading (the threat model and what the modes guarantee). The
// checker cannot tell whether a test proves its claim (the reviewer of
// the document does that); it can tell that the claim names one and that
// the test exists, so a test renamed or removed fails here instead of
// leaving a claim that nothing backs.

const (
	securityClaimsHeading = "## Claims"
	securityGapsHeading   = "## Known gaps"
	// securityMinClaims guards against a document emptied by mistake, or
	// a claims heading renamed so that nothing is checked any more.
	securityMinClaims = 10
)

var (
	// securityBullet is any list item a claim could hide in, not only
	// "- ": a "* " or "1. " claim is held to the same rule.
	securityBullet = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s`)
	securityCode   = regexp.MustCompile("`([^`]*)`")
	// securityTestName is what go test runs as a test: Test, then not a
	// lower-case letter.
	securityTestName = regexp.MustCompile(`^Test[A-Z0-9_]\w*$`)
)

// TestSecurityDocNamesRealTests holds SECURITY.md to its rule: every claim
// names at least one test, and every test it names is declared in some
// *_test.go file of the repository, whatever build tags that file needs.
func TestSecurityDocNamesRealTests(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	declared, err := declaredTestFuncs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range checkSecurityDoc(string(doc), declared) {
		t.Error("SECURITY.md " + problem)
	}
}

// TestSecurityDocCheckerCatchesBadClaims proves the checker on a document
// made to fail: a claim without tests, a claim naming a test nobody
// declared, a claim naming something that is no test, and too few claims
// are all reported, while a good claim, a bullet before the claims and a
// known gap are not.
func TestSecurityDocCheckerCatchesBadClaims(t *testing.T) {
	t.Parallel()
	lines := []string{
		"# Security",
		"",
		"- Before the claims, no test is asked.",
		"",
		"## Claims",
		"",
		"Every claim names its `Tests:`.",
		"",
		"### Examples",
		"",
		"- A proven claim. Tests: `TestReal`.",
		"- A claim that names no test.",
		"- A claim wrapped over two lines whose",
		"  test is a ghost. Tests: `TestGhost`.",
		"* A claim in another marker. Tests: `notATest`.",
		"",
		"## Known gaps",
		"",
		"- A gap needs no test.",
	}
	// at is the line number of the line that starts with prefix.
	at := func(prefix string) string {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return fmt.Sprintf("line %d:", i+1)
			}
		}
		t.Fatalf("no line starts with %q", prefix)
		return ""
	}
	declared := map[string]bool{"TestReal": true}
	problems := checkSecurityDoc(strings.Join(lines, "\n"), declared)
	for _, want := range [][]string{
		{at("- A claim that names no test"), "names no test"},
		{at("- A claim wrapped"), "TestGhost", "declared in no"},
		{at("* A claim in another marker"), "notATest", "not a test function"},
		{"4 claims", "fewer than"},
	} {
		if !anyProblemHas(problems, want...) {
			t.Errorf("no problem mentions %q; problems:\n%s", want, strings.Join(problems, "\n"))
		}
	}
	for _, fine := range []string{"- Before the claims", "- A proven claim", "- A gap needs"} {
		if line := at(fine); anyProblemHas(problems, line) {
			t.Errorf("a problem reported at %s; problems:\n%s", line, strings.Join(problems, "\n"))
		}
	}
	if len(problems) != 4 {
		t.Errorf("%d problems, want 4:\n%s", len(problems), strings.Join(problems, "\n"))
	}

	// The same rule passes a document whose claims all hold.
	good := []string{securityClaimsHeading, ""}
	for i := range securityMinClaims {
		good = append(good, fmt.Sprintf("- Claim %d. Tests: `TestReal`.", i))
	}
	if problems := checkSecurityDoc(strings.Join(good, "\n"), declared); len(problems) != 0 {
		t.Errorf("a good document: %q", problems)
	}
	if problems := checkSecurityDoc("# Security\n", declared); !anyProblemHas(problems, securityClaimsHeading) {
		t.Errorf("a document without a claims heading: %q", problems)
	}
}

// anyProblemHas reports whether one problem holds every part.
func anyProblemHas(problems []string, parts ...string) bool {
	for _, p := range problems {
		all := true
		for _, part := range parts {
			all = all && strings.Contains(p, part)
		}
		if all {
			return true
		}
	}
	return false
}

// securityClaim is one bullet of the claims section: the line it starts
// on and its text, continuation lines joined.
type securityClaim struct {
	line int
	text string
}

// checkSecurityDoc returns what is wrong with doc's claims, each problem
// naming its line: a claim without "Tests:" and a test name after it, a
// name there that is no test function's or that declared does not hold,
// and too few claims.
func checkSecurityDoc(doc string, declared map[string]bool) []string {
	claims, found := securityClaims(doc)
	var problems []string
	if !found {
		problems = append(problems, fmt.Sprintf("has no %q heading: its claims must live under it", securityClaimsHeading))
	}
	for _, c := range claims {
		problems = append(problems, checkSecurityClaim(c, declared)...)
	}
	if len(claims) < securityMinClaims {
		problems = append(problems, fmt.Sprintf("holds %d claims under %q, fewer than %d: was it emptied by mistake?",
			len(claims), securityClaimsHeading, securityMinClaims))
	}
	return problems
}

// checkSecurityClaim checks the test names after the claim's last
// "Tests:"; backticked words in the claim's own text are not names.
func checkSecurityClaim(c securityClaim, declared map[string]bool) []string {
	i := strings.LastIndex(c.text, "Tests:")
	if i < 0 {
		return []string{fmt.Sprintf("line %d: claim names no test (end it with Tests: `TestName`): %s", c.line, shortClaim(c.text))}
	}
	var problems []string
	named := 0
	for _, m := range securityCode.FindAllStringSubmatch(c.text[i:], -1) {
		name := m[1]
		switch {
		case !securityTestName.MatchString(name):
			problems = append(problems, fmt.Sprintf("line %d: `%s` after Tests: is not a test function's name", c.line, name))
		case !declared[name]:
			problems = append(problems, fmt.Sprintf("line %d: %s is declared in no *_test.go file", c.line, name))
		default:
			named++
		}
	}
	if named == 0 && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("line %d: claim names no test after Tests: %s", c.line, shortClaim(c.text)))
	}
	return problems
}

// shortClaim is the start of a claim, enough to find it in the document.
func shortClaim(text string) string {
	const most = 80
	if r := []rune(text); len(r) > most {
		return string(r[:most]) + "…"
	}
	return text
}

// securityClaims returns the claims of doc: the list items from the first
// claims heading up to the known gaps heading (or the end), whatever
// headings lie between, and whether the claims heading was there. Items
// inside fenced code blocks are examples, not claims.
func securityClaims(doc string) ([]securityClaim, bool) {
	var (
		claims   []securityClaim
		open     *securityClaim // the claim whose continuation lines may follow
		inClaims bool
		found    bool
		inFence  bool
	)
	closeClaim := func() {
		if open != nil {
			claims = append(claims, *open)
			open = nil
		}
	}
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !found && trimmed == securityClaimsHeading:
			found, inClaims = true, true
			continue
		case inClaims && trimmed == securityGapsHeading:
			closeClaim()
			inClaims = false
			continue
		}
		if !inClaims {
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			closeClaim()
			inFence = !inFence
			continue
		}
		switch {
		case inFence:
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			closeClaim()
		case securityBullet.MatchString(line):
			closeClaim()
			open = &securityClaim{line: i + 1, text: trimmed}
		case open != nil:
			open.text += " " + trimmed
		}
	}
	closeClaim()
	return claims, found
}

// declaredTestFuncs returns the name of every top-level test function
// declared in a *_test.go file under root. Files are parsed one by one,
// without go/build, so no build constraint hides a file: docker-tagged
// and Linux-only tests count as declared wherever this runs. Directories
// go test never builds from (testdata, vendor, hidden ones such as .git
// or a .worktrees of lanes holding other copies of the tree) are skipped.
func declaredTestFuncs(root string) (map[string]bool, error) {
	declared := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				declared[fn.Name.Name] = true
			}
		}
		return nil
	})
	return declared, err
}
