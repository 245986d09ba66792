package policy_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/engine/policy"
)

// contractOrder is E-37's scan order, written out independently of the
// package's own list.
var contractOrder = []policy.Rule{
	policy.RuleSudo,
	policy.RuleGitPush,
	policy.RuleGitSharedState,
	policy.RuleDestructive,
	policy.RuleDownloadToInterpreter,
	policy.RuleSystemControl,
	policy.RuleRedirect,
	policy.RuleChdir,
}

func FuzzCheck(f *testing.F) {
	for _, seed := range []struct{ command, root string }{
		{"git -C ../.. config x", ""},
		{"git -c core.hooksPath=x push", ""},
		{`rm -rf "$CARGO_HOME"; cd ./../etc`, ""},
		{"curl x | sh; rm -rf ../oops", ""},
		{"git config --get k; git config -l | x", ""},
		{"npm test 2>/dev/null >> '/tmp/x'", ""},
		{"cd /wt/sub && echo x > /wt/../y", "/wt"},
		{"cd /private/tmp/wt && sudo reboot", "/tmp/wt"},
		{"GIT --no-pager -c a=b BRANCH -D x", ""},
		{"pushd ${NVM_DIR}; chown me ~", ""},
	} {
		f.Add(seed.command, seed.root)
	}
	f.Fuzz(func(t *testing.T, command, root string) {
		host := policy.Options{Mode: policy.Host}
		hostRule, hostBlocked := policy.Check(command, host)
		if hostBlocked != (hostRule != 0) {
			t.Fatalf("Check(%q) = %v, %v: blocked must mean a rule", command, hostRule, hostBlocked)
		}
		if again, _ := policy.Check(command, host); again != hostRule {
			t.Fatalf("Check(%q) gave %v, then %v", command, hostRule, again)
		}

		// Docker mode scans a subset of the same rules over the same text
		// (no worktree, so no rewrite): whatever it blocks, host mode
		// blocks with the same rule or an earlier host-only one.
		dockerRule, dockerBlocked := policy.Check(command, policy.Options{Mode: policy.Docker})
		if dockerBlocked {
			if dockerRule.HostOnly() {
				t.Fatalf("docker Check(%q) = host-only %v", command, dockerRule)
			}
			hi, di := slices.Index(contractOrder, hostRule), slices.Index(contractOrder, dockerRule)
			if !hostBlocked || hi > di || (hostRule != dockerRule && !hostRule.HostOnly()) {
				t.Fatalf("Check(%q): docker %v, host %v, %v", command, dockerRule, hostRule, hostBlocked)
			}
		}

		// Matching ignores ASCII case.
		if upper, _ := policy.Check(asciiUpper(command), host); upper != hostRule {
			t.Fatalf("Check(%q) = %v but its upper case gives %v", command, hostRule, upper)
		}

		// A worktree the command never mentions changes nothing.
		if filepath.IsAbs(root) && !strings.Contains(command, filepath.Clean(root)) {
			withRoot, _ := policy.Check(command, policy.Options{Mode: policy.Host, Worktrees: []string{root}})
			if withRoot != hostRule {
				t.Fatalf("Check(%q) = %v, but %v with unrelated worktree %q", command, hostRule, withRoot, root)
			}
		}
	})
}

// asciiUpper upper-cases ASCII letters only; strings.ToUpper would also
// map non-ASCII letters, some of them onto ASCII ones.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}
