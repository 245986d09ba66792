//go:build linux

package jail

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMountsLayout: configured mounts apply in order (a read-only file
// over a file of a writable directory), read-only paths appear at their
// own path, and the program runs in Dir.
func TestMountsLayout(t *testing.T) {
	work := t.TempDir()
	hostFile(t, filepath.Join(work, ".git"), "gitdir: /elsewhere\n")
	hostFile(t, filepath.Join(work, "main.go"), "package main\n")
	gitfile := hostFile(t, filepath.Join(t.TempDir(), "gitfile"), "gitdir: /dirtywork/git\n")
	private := t.TempDir()
	tool := t.TempDir()
	hostFile(t, filepath.Join(tool, "bin", "tool"), "#!/bin/sh\necho tool ran\n")
	if err := os.Chmod(filepath.Join(tool, "bin", "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Dir: "/work/tree",
		Mounts: []Mount{
			{Source: work, Target: "/work/tree"},
			{Source: gitfile, Target: "/work/tree/.git", ReadOnly: true},
			{Source: private, Target: "/dirtywork/git"},
		},
		ReadOnlyPaths: []string{tool, "/usr/share", filepath.Join(t.TempDir(), "missing")},
	}
	r := bash(t, cfg, strings.Join([]string{
		"pwd", "cat .git", "cat main.go",
		"stat -c %u .git main.go " + tool + "/bin/tool | sort -u",
		"{ echo x > .git; } 2>/dev/null && echo wrote-gitfile",
		"echo obj > /dirtywork/git/HEAD && echo wrote-private",
		tool + "/bin/tool",
		"touch " + tool + "/x 2>/dev/null && echo wrote-tool", "true",
	}, "\n"))
	// Every configured mount and read-only path shows the operator's files
	// as the program's own (git checks the owner of .git).
	want := "/work/tree\ngitdir: /dirtywork/git\npackage main\n" + strconv.Itoa(os.Getuid()) + "\nwrote-private\ntool ran"
	if r.err != nil || strings.TrimSpace(r.out) != want {
		t.Errorf("got\n%s\nwant\n%s", describe(r), want)
	}
	if b, _ := os.ReadFile(filepath.Join(work, ".git")); string(b) != "gitdir: /elsewhere\n" {
		t.Errorf("the host's .git file changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(private, "HEAD")); string(b) != "obj\n" {
		t.Errorf("the private dir holds %q", b)
	}
	mounts := strings.Join(r.info.Root.Mounts, " ")
	if mounts != "/work/tree /work/tree/.git:ro /dirtywork/git" {
		t.Errorf("info mounts %q", mounts)
	}
	if got := strings.Join(r.info.Root.ReadOnly, " "); !strings.Contains(got, tool) || strings.Contains(got, "missing") || strings.Contains(got, "/usr/share") {
		t.Errorf("info read-only %q", got)
	}
}

// TestMountPointInsideABind: a mount point missing inside another bind
// would have to be made on the host's disk; Start refuses, and nothing is
// created there.
func TestMountPointInsideABind(t *testing.T) {
	work := t.TempDir()
	_, err := Start(t.Context(), Config{
		Path:   "/bin/true",
		Mounts: []Mount{{Source: work, Target: "/work"}, {Source: t.TempDir(), Target: "/work/new/dir"}},
	})
	if err == nil || !strings.Contains(err.Error(), "another mount") {
		t.Fatalf("got %v, want a refusal to create a mount point inside a bind", err)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("the worktree got %d entries", len(entries))
	}
}

// TestBadConfig: relative paths and missing sources are refused before
// anything starts.
func TestBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"relative program": {Path: "bin/true"},
		"relative dir":     {Path: "/bin/true", Dir: "work"},
		"relative target":  {Path: "/bin/true", Mounts: []Mount{{Source: t.TempDir(), Target: "work"}}},
		"root target":      {Path: "/bin/true", Mounts: []Mount{{Source: t.TempDir(), Target: "/"}}},
		"missing source":   {Path: "/bin/true", Mounts: []Mount{{Source: "/nonexistent/x", Target: "/x"}}},
		"relative ro path": {Path: "/bin/true", ReadOnlyPaths: []string{"usr"}},
	} {
		if j, err := Start(t.Context(), cfg); err == nil {
			_ = j.Kill()
			_ = j.Wait()
			t.Errorf("%s: started", name)
		}
	}
}

// TestExecFailure: a program that is not there is a setup error, and the
// jail is gone.
func TestExecFailure(t *testing.T) {
	_, err := Start(t.Context(), Config{Path: "/nonexistent"})
	var se *SetupError
	if err == nil || !strings.Contains(err.Error(), "/nonexistent") {
		t.Fatalf("got %v (%T %v)", err, se, se)
	}
}

// TestEscapeUnmappedPaths: an unmapped path shows its files with their
// host owners unmapped, so a root operator's program cannot read a file
// only its owner may, while what anyone may read or run still works; a
// hidden path inside it is covered for everyone, also through a symlink.
func TestEscapeUnmappedPaths(t *testing.T) {
	tool := t.TempDir()
	hostFile(t, filepath.Join(tool, "bin", "tool"), "#!/bin/sh\necho tool ran\n")
	if err := os.Chmod(filepath.Join(tool, "bin", "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	private := hostFile(t, filepath.Join(tool, "bin", "private"), "PRIVATE\n")
	if err := os.Chmod(private, 0o600); err != nil {
		t.Fatal(err)
	}
	hidden := hostFile(t, filepath.Join(tool, "etc", "npmrc"), "TOKEN\n")
	hostFile(t, filepath.Join(tool, "etc", "other"), "other\n")
	if err := os.Symlink("etc", filepath.Join(tool, "link")); err != nil {
		t.Fatal(err)
	}
	cfg := Config{UnmappedPaths: []string{tool}, Hidden: []string{
		filepath.Join(tool, "link", "npmrc"), filepath.Join(tool, "missing"), "/nonexistent/x",
	}}
	r := bash(t, cfg, strings.Join([]string{
		tool + "/bin/tool",
		"cat " + tool + "/etc/other",
		"cat " + tool + "/etc/npmrc 2>/dev/null || echo hidden",
		"cat " + tool + "/bin/private 2>/dev/null || echo private",
		"stat -c %u " + tool + "/bin/tool",
	}, "\n"))
	owner := strconv.Itoa(os.Getuid())
	privateLine := "PRIVATE"
	if os.Geteuid() == 0 {
		owner, privateLine = "65534", "private" // nobody's: root is not mapped
	}
	want := strings.Join([]string{"tool ran", "other", "hidden", privateLine, owner}, "\n")
	if r.err != nil || strings.TrimSpace(r.out) != want {
		t.Errorf("got\n%s\nwant\n%s", describe(r), want)
	}
	if got := strings.Join(r.info.Root.Hidden, " "); got != filepath.Join(tool, "etc", "npmrc") {
		t.Errorf("info hidden %q", got)
	}
	if b, _ := os.ReadFile(hidden); string(b) != "TOKEN\n" {
		t.Errorf("the hidden file changed on the host: %q", b)
	}
}
