package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureExcluded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, before, want string
	}{
		{"no file", "", ".worktrees/\n"},
		{"ends with newline", "*.o\n", "*.o\n.worktrees/\n"},
		{"no final newline", "*.o", "*.o\n.worktrees/\n"},
		{"already anchored", "/.worktrees/\n", "/.worktrees/\n"},
		{"already with spaces", "  .worktrees/  \n", "  .worktrees/  \n"},
		{"negation does not count", "!.worktrees/\n", "!.worktrees/\n.worktrees/\n"},
		{"other name does not count", "foo.worktrees/\n", "foo.worktrees/\n.worktrees/\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t)
			path := filepath.Join(dir, ".git", "info", "exclude")
			if tt.before == "" {
				removePath(t, path)
			} else {
				writeFile(t, path, tt.before)
			}
			m := newManager(t, dir)
			for range 2 { // written once over two calls
				if err := m.git.EnsureExcluded(t.Context(), m.repo); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("exclude = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnsureExcludedMakesLanesInvisible(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	m := newManager(t, dir)
	if err := m.git.EnsureExcluded(t.Context(), m.repo); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".worktrees", "dw-x", "f"), "x")
	if got := gitT(t, dir, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("status = %q, want clean", got)
	}
}

func TestEnsureExcludedLinkedWorktreeUpdatesCommonFile(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	gitT(t, dir, "worktree", "add", "-q", "-b", "side", linked)
	m := newManager(t, linked)
	if err := m.git.EnsureExcluded(t.Context(), m.repo); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude"))
	if err != nil || !strings.Contains(string(got), ".worktrees/\n") {
		t.Errorf("primary exclude = %q, %v; want the .worktrees/ line", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "worktrees", "linked", "info")); err == nil {
		t.Error("an exclude file was made in the linked worktree's own git dir")
	}
}

func TestEnsureExcludedRefusesUnsafeFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, gitDir string) (victim string)
	}{
		{"symlinked exclude file", func(t *testing.T, gitDir string) string {
			victim := filepath.Join(t.TempDir(), "victim")
			writeFile(t, victim, "mine\n")
			exclude := filepath.Join(gitDir, "info", "exclude")
			removePath(t, exclude)
			if err := os.Symlink(victim, exclude); err != nil {
				t.Fatal(err)
			}
			return victim
		}},
		{"dangling symlinked exclude file", func(t *testing.T, gitDir string) string {
			victim := filepath.Join(t.TempDir(), "victim")
			exclude := filepath.Join(gitDir, "info", "exclude")
			removePath(t, exclude)
			if err := os.Symlink(victim, exclude); err != nil {
				t.Fatal(err)
			}
			return victim
		}},
		{"info dir outside the git dir", func(t *testing.T, gitDir string) string {
			outside := t.TempDir()
			victim := filepath.Join(outside, "exclude")
			writeFile(t, victim, "mine\n")
			info := filepath.Join(gitDir, "info")
			if err := os.RemoveAll(info); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, info); err != nil {
				t.Fatal(err)
			}
			return victim
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newRepo(t)
			victim := tt.setup(t, filepath.Join(dir, ".git"))
			before, _ := os.ReadFile(victim)
			m := newManager(t, dir)
			if err := m.git.EnsureExcluded(t.Context(), m.repo); !errors.Is(err, ErrUnsafeFile) {
				t.Fatalf("err = %v, want ErrUnsafeFile", err)
			}
			after, _ := os.ReadFile(victim)
			if string(after) != string(before) {
				t.Errorf("the symlink target changed: %q -> %q", before, after)
			}
		})
	}
}
