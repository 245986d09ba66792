package gitops

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeCall is one process a fake CommandFunc was asked to build.
type fakeCall struct {
	Args []string  // the argv asked for, "git" first
	cmd  *exec.Cmd // the stand-in process; Run sets its Env
}

// Env is the environment Run gave the process.
func (c fakeCall) Env() []string { return c.cmd.Env }

// fakeGit returns a Git whose processes are recorded and replaced by
// `cat` of the next canned stdout (a missing entry prints nothing), with
// the given inherited environment.
func fakeGit(environ []string, outputs ...string) (*Git, *[]fakeCall) {
	var calls []fakeCall
	g := &Git{
		Path:    "git",
		Environ: func() []string { return environ },
		Command: func(ctx context.Context, name string, args ...string) *exec.Cmd {
			out := ""
			if len(calls) < len(outputs) {
				out = outputs[len(calls)]
			}
			cmd := exec.CommandContext(ctx, "cat") // echoes the canned output
			cmd.Stdin = strings.NewReader(out)
			calls = append(calls, fakeCall{Args: append([]string{name}, args...), cmd: cmd})
			return cmd
		},
	}
	return g, &calls
}

func TestRunPlainArgvAndEnv(t *testing.T) {
	t.Parallel()
	inherited := []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_DIR=/elsewhere/.git",
		"GIT_WORK_TREE=/elsewhere",
		"GIT_INDEX_FILE=/elsewhere/index",
		"GIT_CONFIG_PARAMETERS='core.fsmonitor'='evil'",
		"GIT_CONFIG_KEY_0=core.hooksPath",
		"GIT_AUTHOR_NAME=Someone",
		"GIT_CONFIG_GLOBAL=/home/me/.gitconfig",
		"LC_ALL=de_DE.UTF-8",
	}
	g, cmds := fakeGit(inherited, "abc\n")
	out, err := g.Run(t.Context(), Call{Dir: "/repo", Args: []string{"rev-parse", "HEAD"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "abc\n" {
		t.Errorf("stdout = %q", out)
	}
	if len(*cmds) != 1 {
		t.Fatalf("%d processes, want 1", len(*cmds))
	}
	c := (*cmds)[0]
	if want := []string{"git", "-C", "/repo", "rev-parse", "HEAD"}; !slices.Equal(c.Args, want) {
		t.Errorf("argv = %q, want %q", c.Args, want)
	}
	for _, want := range []string{"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C", "GIT_AUTHOR_NAME=Someone", "GIT_CONFIG_GLOBAL=/home/me/.gitconfig"} {
		if !slices.Contains(c.Env(), want) {
			t.Errorf("env lacks %s: %q", want, c.Env())
		}
	}
	for _, gone := range []string{"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_CONFIG_PARAMETERS=", "GIT_CONFIG_KEY_0=", "LC_ALL=de"} {
		if slices.ContainsFunc(c.Env(), func(kv string) bool { return strings.HasPrefix(kv, gone) }) {
			t.Errorf("env still has %s...: %q", gone, c.Env())
		}
	}
}

// git gets a heap pad that keeps it from shrinking and growing its heap
// for every loose object it reads; an operator's own pad is kept, once.
func TestRunSetsTheMallocPadUnlessTheOperatorDid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		inherited []string
		want      string
	}{
		{[]string{"PATH=" + os.Getenv("PATH")}, "MALLOC_TOP_PAD_=4194304"},
		{[]string{"PATH=" + os.Getenv("PATH"), "MALLOC_TOP_PAD_=1"}, "MALLOC_TOP_PAD_=1"},
	} {
		g, cmds := fakeGit(tc.inherited, "")
		if _, err := g.Run(t.Context(), Call{Dir: "/repo", Args: []string{"status"}}); err != nil {
			t.Fatal(err)
		}
		var pads []string
		for _, kv := range (*cmds)[0].Env() {
			if strings.HasPrefix(kv, "MALLOC_TOP_PAD_=") {
				pads = append(pads, kv)
			}
		}
		if len(pads) != 1 || pads[0] != tc.want {
			t.Errorf("inherited %q: the pads are %q, want only %s", tc.inherited, pads, tc.want)
		}
	}
}

func TestRunNeutralArgvAndEnv(t *testing.T) {
	t.Parallel()
	inherited := []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_GLOBAL=/home/me/.gitconfig",
		"GIT_EXTERNAL_DIFF=/bin/evil",
		"GIT_AUTHOR_NAME=Someone",
		"GIT_COMMITTER_EMAIL=c@example.com",
	}
	filters := "filter.lfs.clean\ngit-lfs clean -- %f\x00filter.lfs.process\ngit-lfs filter-process\x00filter.a=b.c.smudge\nx\x00"
	g, cmds := fakeGit(inherited, filters, "")
	_, err := g.Run(t.Context(), Call{Dir: "/wt", Args: []string{"diff", "--stat", "abc"}, Neutral: true, GitDir: "/repo/.git/worktrees/dw-x", WorkTree: "/wt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(*cmds) != 2 {
		t.Fatalf("%d processes, want 2 (filter listing, command)", len(*cmds))
	}
	list, run := (*cmds)[0], (*cmds)[1]
	if want := []string{"git", "-C", "/wt", "config", "-z", "--get-regexp", `^filter\.`}; !slices.Equal(list.Args, want) {
		t.Errorf("filter listing argv = %q, want %q", list.Args, want)
	}
	want := []string{
		"git", "-C", "/wt",
		"-c", "core.hooksPath=/dev/null",
		"-c", "core.fsmonitor=false",
		"-c", "core.untrackedCache=false",
		"-c", "core.attributesFile=/dev/null",
		"-c", "core.excludesFile=/dev/null",
		"diff", "--no-ext-diff", "--no-textconv", "--stat", "abc",
	}
	if !slices.Equal(run.Args, want) {
		t.Errorf("argv = %q\nwant %q", run.Args, want)
	}
	for _, kv := range []string{
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C",
		"GIT_DIR=/repo/.git/worktrees/dw-x", "GIT_WORK_TREE=/wt",
		"GIT_AUTHOR_NAME=Someone", "GIT_COMMITTER_EMAIL=c@example.com",
		"GIT_CONFIG_COUNT=8",
		"GIT_CONFIG_KEY_0=filter.lfs.clean", "GIT_CONFIG_VALUE_0=",
		"GIT_CONFIG_KEY_3=filter.lfs.required", "GIT_CONFIG_VALUE_3=false",
		"GIT_CONFIG_KEY_5=filter.a=b.c.smudge", "GIT_CONFIG_VALUE_5=",
	} {
		if !slices.Contains(run.Env(), kv) {
			t.Errorf("env lacks %s", kv)
		}
	}
	for _, gone := range []string{"GIT_CONFIG_GLOBAL=/home", "GIT_EXTERNAL_DIFF="} {
		if slices.ContainsFunc(run.Env(), func(kv string) bool { return strings.HasPrefix(kv, gone) }) {
			t.Errorf("env still has %s...", gone)
		}
	}
}

func TestRunErrorCarriesExitCodeAndStderr(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	_, err := New().Run(t.Context(), Call{Dir: repo, Args: []string{"rev-parse", "--verify", "no-such-ref"}})
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if ge.ExitCode != 128 || ge.Subcommand != "rev-parse" || !strings.Contains(ge.Stderr, "Needed a single revision") {
		t.Errorf("got exit %d, sub %q, stderr %q", ge.ExitCode, ge.Subcommand, ge.Stderr)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Errorf("Unwrap does not reach *exec.ExitError")
	}
	if err.Error() != ge.Stderr {
		t.Errorf("Error() = %q, want git's stderr", err.Error())
	}
}

func TestRunCancelledIsNotAFailure(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := New().Run(ctx, Call{Dir: repo, Args: []string{"status"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var ge *Error
	if errors.As(err, &ge) {
		t.Errorf("a cancelled command must not look like a git failure: %v", ge)
	}
}

// TestNeutralIgnoresRepoFiltersFsmonitorAndGlobalExcludes proves the
// neutral mode against real git: a filter driver and an fsmonitor hook the
// repository's own config defines run in plain mode (so the setup is live)
// and do not run in neutral mode, and a global excludes file hides nothing.
func TestNeutralIgnoresRepoFiltersFsmonitorAndGlobalExcludes(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	markers := t.TempDir()
	filterMark := filepath.Join(markers, "filter-ran")
	monitorMark := filepath.Join(markers, "fsmonitor-ran")
	hook := filepath.Join(markers, "fsmonitor.sh")
	writeFile(t, hook, "#!/bin/sh\ntouch '"+monitorMark+"'\nexit 1\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "config", "filter.evil.clean", "touch '"+filterMark+"'; cat")
	gitT(t, repo, "config", "filter.evil.smudge", "cat")
	gitT(t, repo, "config", "filter.evil.required", "true")
	commitFile(t, repo, ".gitattributes", "*.txt filter=evil\n")
	commitFile(t, repo, "a.txt", "one\n")
	gitT(t, repo, "config", "core.fsmonitor", hook)
	globalIgnore := filepath.Join(t.TempDir(), "ignore")
	writeFile(t, globalIgnore, "*.log\n")
	writeFile(t, filepath.Join(repo, "a.txt"), "two\n") // same size: git must hash it
	writeFile(t, filepath.Join(repo, "x.log"), "log\n")
	removePath(t, filterMark)

	globalCfg := filepath.Join(t.TempDir(), "gitconfig")
	writeFile(t, globalCfg, "[core]\n\texcludesFile = "+globalIgnore+"\n")
	environ := func() []string { return append(os.Environ(), "GIT_CONFIG_GLOBAL="+globalCfg) }

	plain := &Git{Path: "git", Command: exec.CommandContext, Environ: environ}
	out, err := plain.Run(t.Context(), Call{Dir: repo, Args: []string{"status", "--porcelain", "-z", "--untracked-files=all"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := parseStatusZ(out), []string{" M a.txt"}; !slices.Equal(got, want) {
		t.Fatalf("setup: plain status = %q, want %q (global excludes honoured)", got, want)
	}
	if _, err := os.Stat(filterMark); err != nil {
		t.Fatalf("setup: the clean filter did not run in plain mode: %v", err)
	}
	if _, err := os.Stat(monitorMark); err != nil {
		t.Fatalf("setup: the fsmonitor hook did not run in plain mode: %v", err)
	}
	removePath(t, filterMark)
	removePath(t, monitorMark)
	writeFile(t, filepath.Join(repo, "a.txt"), "six\n")

	neutral := &Git{Path: "git", Command: exec.CommandContext, Environ: environ}
	out, err = neutral.Run(t.Context(), Call{Dir: repo, Args: []string{"status", "--porcelain", "-z", "--untracked-files=all"}, Neutral: true})
	if err != nil {
		t.Fatal(err)
	}
	got := parseStatusZ(out)
	if want := []string{" M a.txt", "?? x.log"}; !slices.Equal(got, want) {
		t.Errorf("neutral status = %q, want %q", got, want)
	}
	if _, err := os.Stat(filterMark); err == nil {
		t.Error("the repository's clean filter ran in neutral mode")
	}
	if _, err := os.Stat(monitorMark); err == nil {
		t.Error("the repository's fsmonitor hook ran in neutral mode")
	}
}
