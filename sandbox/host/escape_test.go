package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshot records the contents of files, so a test can show they did not
// change.
func snapshot(t *testing.T, paths ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			m[p] = "<missing>"
			continue
		}
		m[p] = string(b)
	}
	return m
}

func TestBashEscapesFail(t *testing.T) {
	requireJail(t)
	r := newTestRepo(t)
	w := open(t, r.config())
	realHome, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(r.home, ".ssh", "id_rsa")
	writeFile(t, secret, "PRIVATE-KEY-MATERIAL\n")
	writeFile(t, filepath.Join(r.repo, "main-checkout-only.txt"), "operator's own checkout\n")
	if err := os.Symlink("/etc", filepath.Join(r.worktree, "etclink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(r.home, filepath.Join(r.worktree, "homelink")); err != nil {
		t.Fatal(err)
	}
	name := "dirtywork-escape-" + filepath.Base(t.TempDir())
	watched := []string{
		filepath.Join(r.home, name), filepath.Join(realHome, name), filepath.Join("/", name),
		filepath.Join("/etc", name), filepath.Join(r.common, "config"),
		filepath.Join(r.common, "hooks", "pre-commit"), filepath.Join(r.common, "info", "exclude"),
		filepath.Join(r.common, "objects", "info", "alternates"), filepath.Join(r.repo, "README.md"),
		filepath.Join(os.TempDir(), name),
	}
	before := snapshot(t, watched...)
	t.Cleanup(func() {
		for _, p := range watched[:6] {
			if strings.HasSuffix(p, name) {
				// Most were never created: that is the point of the test.
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Error(err)
				}
			}
		}
	})

	for _, tc := range []struct{ name, command string }{
		{"write into the fake home", "echo x > " + filepath.Join(r.home, name)},
		{"write into the real home", "echo x > " + filepath.Join(realHome, name)},
		{"write at the root", "cd / && touch " + name},
		{"write into /etc with python", `python3 -c "open('/etc/` + name + `','w')"`},
		{"write outside through a symlink in the tree", "echo x > etclink/" + name},
		{"write into the home through a symlink in the tree", "echo x > homelink/" + name},
		{"append to the repository's config", "echo '[core]' >> " + filepath.Join(r.common, "config")},
		{"plant a hook", "printf '#!/bin/sh\\n' > " + filepath.Join(r.common, "hooks", "pre-commit")},
		{"change the shared exclude file", "echo x >> " + filepath.Join(r.common, "info", "exclude")},
		{"add an alternate object store", "echo /tmp > " + filepath.Join(r.common, "objects", "info", "alternates")},
		{"change the operator's checkout", "echo x >> " + filepath.Join(r.repo, "README.md")},
	} {
		// A command may well succeed: the test's home is under /tmp, which
		// in the jail is a tmpfs of its own. What counts is the host's
		// view, compared below.
		out, code := run(t, w, tc.command)
		t.Logf("%s: exit %d %s", tc.name, code, strings.TrimSpace(out))
	}
	// What succeeds inside changes nothing outside: the jail's /tmp is its
	// own, and the worker's git config is its private repository's.
	for _, command := range []string{
		"echo x > " + filepath.Join(os.TempDir(), name),
		"git config core.hooksPath /tmp && git config core.fsmonitor 'touch /tmp/" + name + "'",
	} {
		if out, code := run(t, w, command); code != 0 {
			t.Errorf("%q failed inside the jail (%d): %s", command, code, out)
		}
	}
	if after := snapshot(t, watched...); !mapsEqual(before, after) {
		for p, v := range after {
			if before[p] != v {
				t.Errorf("%s changed: %q -> %q", p, before[p], v)
			}
		}
	}

	// The operator's home is not there, the worktree and the worker's
	// repository excepted (the directories leading to them are the
	// jail's own, empty).
	for _, command := range []string{
		"cat " + secret,
		"cat homelink/.ssh/id_rsa",
		"cat " + filepath.Join(r.repo, "main-checkout-only.txt"),
		"cat " + filepath.Join(r.common, "config"),
	} {
		out, code := run(t, w, command)
		if code == 0 || strings.Contains(out, "PRIVATE-KEY-MATERIAL") || strings.Contains(out, "operator's own checkout") {
			t.Errorf("%q: exit %d, output %q; want refused", command, code, out)
		}
	}
	if out, _ := run(t, w, "ls -a "+r.home+" "+r.repo); strings.Contains(out, ".ssh") || strings.Contains(out, "tracked.txt") {
		t.Errorf("the home shows through: %s", out)
	}
	// ...while the system and the worktree stay usable.
	for _, command := range []string{
		"cat /etc/passwd >/dev/null", "ls /usr/bin >/dev/null", "cat README.md", "echo ok > new.txt",
		`python3 -c "print('python runs')"`, "git status --short",
	} {
		if out, code := run(t, w, command); code != 0 {
			t.Errorf("%q failed (%d): %s", command, code, out)
		}
	}
}

func TestFileToolsStayInTheWorktree(t *testing.T) {
	r := newTestRepo(t)
	w := open(t, r.config())
	secret := filepath.Join(r.home, ".ssh", "id_rsa")
	writeFile(t, secret, "PRIVATE-KEY-MATERIAL\n")
	if err := os.Symlink("/etc", filepath.Join(r.worktree, "etclink")); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		run  func() (string, error)
	}{
		{"read an absolute path in the home", func() (string, error) { return w.ReadFile(ctx, secret, 0, 10) }},
		{"read through ..", func() (string, error) { return w.ReadFile(ctx, "../../../.ssh/id_rsa", 0, 10) }},
		{"write through ..", func() (string, error) { return w.WriteFile(ctx, "../escape.txt", "x") }},
		{"write through a symlink", func() (string, error) { return w.WriteFile(ctx, "etclink/x", "x") }},
		{"write into .git", func() (string, error) { return w.WriteFile(ctx, ".git/config", "x") }},
		{"list the home", func() (string, error) { return w.ListDir(ctx, r.home) }},
	} {
		out, err := tc.run()
		if err != nil || !strings.HasPrefix(out, "ERROR: ") || strings.Contains(out, "PRIVATE-KEY") {
			t.Errorf("%s: got %q, %v; want an ERROR result", tc.name, out, err)
		}
	}
	if exists(filepath.Join(r.worktree, "..", "escape.txt")) {
		t.Error("a file tool wrote outside the worktree")
	}
	out, err := w.WriteFile(ctx, "sub/new.txt", "hello\n")
	if err != nil || !strings.HasPrefix(out, "Wrote ") || readFile(t, filepath.Join(r.worktree, "sub", "new.txt")) != "hello\n" {
		t.Fatalf("write inside: %q, %v", out, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
