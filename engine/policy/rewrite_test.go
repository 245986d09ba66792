package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dirtywork/dirtywork/engine/policy"
)

func TestCheckWorktreeRewrite(t *testing.T) {
	// T-45: absolute paths into the worktree pass; anything that leaves it
	// after the root is still judged as an escape.
	runCheckCases(t, policy.Options{Mode: policy.Host, Worktrees: []string{wt}}, []checkCase{
		{"cd to the root", "cd " + wt, 0},
		{"cd below the root", "cd " + wt + "/sub && go test ./...", 0},
		{"quoted root", `cd "` + wt + `" && ls`, 0},
		{"single-quoted root below", `pushd '` + wt + `/pkg'`, 0},
		{"redirect into the worktree", "go test > " + wt + "/test.log", 0},
		{"rm inside by absolute path", "rm -rf " + wt + "/build", 0},
		{"root twice", "cd " + wt + " && cp a " + wt + "/b", 0},
		{"up out of the root", "cd " + wt + "/../other", policy.RuleChdir},
		{"up out after ./ segments", "rm -rf " + wt + "/./../../x", policy.RuleDestructive},
		{"root glued to a suffix", "cd " + wt + "evil", policy.RuleChdir},
		{"sibling with a common prefix", "echo x > " + wt + "-2/log", policy.RuleRedirect},
		{"a parent of the root", "cd /home/dev/repo", policy.RuleChdir},
		{"root plus an escape elsewhere", "cd " + wt + " && cd /etc", policy.RuleChdir},
	})
}

func TestCheckWorktreeRootsLongestFirst(t *testing.T) {
	// The resolved form of a symlinked /tmp (macOS: /private/tmp) contains
	// the given form. Rewriting the shorter root first would leave
	// "/private." behind, an absolute escape; the order in Options must not
	// matter.
	opts := policy.Options{Worktrees: []string{"/tmp/wt", "/private/tmp/wt"}}
	for _, cmd := range []string{"cd /private/tmp/wt/sub", "cd /tmp/wt/sub"} {
		if got, blocked := policy.Check(cmd, opts); blocked {
			t.Errorf("Check(%q) = %v; want allowed", cmd, got)
		}
	}
}

func TestCheckWorktreeRootsIgnored(t *testing.T) {
	tests := []struct {
		name      string
		worktrees []string
		command   string
	}{
		{"the file system root would allow every path", []string{"/"}, "cd /"},
		{"a relative root has no fixed meaning", []string{".."}, "cd .."},
		{"a home-relative root", []string{"~"}, "cd ~"},
		{"an empty root", []string{""}, "cd /etc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, blocked := policy.Check(tc.command, policy.Options{Worktrees: tc.worktrees}); !blocked {
				t.Errorf("Check(%q) with worktrees %q allowed; want blocked", tc.command, tc.worktrees)
			}
		})
	}
}

func TestCheckWorktreeCleaned(t *testing.T) {
	// A root given with a trailing slash still matches its references.
	opts := policy.Options{Worktrees: []string{wt + "/"}}
	if got, blocked := policy.Check("cd "+wt+"/sub", opts); blocked {
		t.Errorf("Check with a trailing-slash root = %v; want allowed", got)
	}
}

func TestCheckSymlinkedWorktree(t *testing.T) {
	// T-45: a worktree reached through a symlink is known by both names, and
	// the caller passes both; each form is rewritten.
	dir := t.TempDir()
	real := filepath.Join(dir, "real-wt")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link-wt")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	resolved, err := filepath.EvalSymlinks(link)
	if err != nil {
		t.Fatal(err)
	}
	both := policy.Options{Worktrees: []string{link, resolved}}
	for _, cmd := range []string{
		"cd " + link + "/sub",
		"cd " + resolved + "/sub",
		"echo x > " + resolved + "/out.txt",
	} {
		if got, blocked := policy.Check(cmd, both); blocked {
			t.Errorf("Check(%q) = %v; want allowed", cmd, got)
		}
	}
	for _, cmd := range []string{"cd " + link + "/../elsewhere", "cd " + resolved + "/../elsewhere"} {
		if _, blocked := policy.Check(cmd, both); !blocked {
			t.Errorf("Check(%q) allowed; want blocked", cmd)
		}
	}
	// Given only the link, the resolved form is an unknown absolute path.
	if _, blocked := policy.Check("cd "+resolved+"/sub", policy.Options{Worktrees: []string{link}}); !blocked {
		t.Errorf("Check(cd <resolved>/sub) with only the link known allowed; want blocked")
	}
}

func TestCheckDockerDoesNotRewrite(t *testing.T) {
	// A root whose name holds a rule word shows that docker mode checks
	// the command as written: the host rewrite hides the word, docker's
	// check does not.
	root := "/srv/sudo"
	cmd := "cd " + root + "/sub"
	if got, blocked := policy.Check(cmd, policy.Options{Mode: policy.Host, Worktrees: []string{root}}); blocked {
		t.Errorf("host Check(%q) = %v; want allowed", cmd, got)
	}
	if got, _ := policy.Check(cmd, policy.Options{Mode: policy.Docker, Worktrees: []string{root}}); got != policy.RuleSudo {
		t.Errorf("docker Check(%q) = %v; want %v", cmd, got, policy.RuleSudo)
	}
}
