package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenRefusesBadConfig(t *testing.T) {
	r := newTestRepo(t)
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"missing worktree", func(c *Config) { c.Worktree = filepath.Join(r.home, "nope") }, "resolve worktree"},
		{"no common dir", func(c *Config) { c.CommonDir = "" }, "no common git dir given"},
		{"commit without a branch", func(c *Config) { c.AllowCommit, c.Branch = true, "" }, "invalid branch"},
		{"branch escaping refs", func(c *Config) { c.AllowCommit, c.Branch = true, "../../config" }, "invalid branch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := r.config()
			tc.change(&cfg)
			w, err := Open(t.Context(), cfg)
			if err == nil {
				_ = w.Close() // the test fails anyway; this only releases it
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestDisplayRootIsTheResolvedWorktree(t *testing.T) {
	r := newTestRepo(t)
	cfg := r.config()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(r.worktree, link); err != nil {
		t.Fatal(err)
	}
	cfg.Worktree = link
	w := open(t, cfg)
	want, _ := filepath.EvalSymlinks(r.worktree)
	if w.DisplayRoot() != want {
		t.Errorf("DisplayRoot = %s, want %s", w.DisplayRoot(), want)
	}
	if out, _ := bash(t, w, "pwd -P"); strings.TrimSpace(out) != want {
		t.Errorf("bash runs in %q, want %s", out, want)
	}
}
