package gitops

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestResolveRepoRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		want  error
	}{
		{"missing path", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, ErrNotDir},
		{"a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "f")
			writeFile(t, p, "x")
			return p
		}, ErrNotDir},
		{"plain directory", func(t *testing.T) string { return t.TempDir() }, ErrNotWorkTree},
		{"bare repository", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "bare.git")
			gitT(t, filepath.Dir(p), "init", "-q", "--bare", p)
			return p
		}, ErrNotWorkTree},
		{"inside the .git dir", func(t *testing.T) string { return filepath.Join(newRepo(t), ".git") }, ErrNotWorkTree},
		{"no commits", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "empty")
			gitT(t, filepath.Dir(p), "init", "-q", "-b", "main", p)
			return p
		}, ErrNoCommits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ResolveRepo(t.Context(), tt.setup(t))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestResolveRepoPaths(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := gitT(t, repo, "rev-parse", "HEAD")
	for _, p := range []string{repo, link, filepath.Join(link, "sub", "dir")} {
		got, err := ResolveRepo(t.Context(), p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want := Repo{Root: repo, GitDir: filepath.Join(repo, ".git"), CommonDir: filepath.Join(repo, ".git"), Head: head}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", p, got, want)
		}
	}
}

func TestResolveRepoExpandsHome(t *testing.T) {
	repo := newRepo(t)
	t.Setenv("HOME", filepath.Dir(repo))
	got, err := ResolveRepo(t.Context(), "~/"+filepath.Base(repo))
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != repo {
		t.Errorf("Root = %s, want %s", got.Root, repo)
	}
}

func TestResolveRepoLinkedWorktree(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	gitT(t, repo, "worktree", "add", "-q", "-b", "side", linked)
	linked, _ = filepath.EvalSymlinks(linked)
	got, err := ResolveRepo(t.Context(), linked)
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != linked || got.CommonDir != filepath.Join(repo, ".git") || got.GitDir != filepath.Join(repo, ".git", "worktrees", "linked") {
		t.Errorf("got %+v", got)
	}
}

// TestResolveRepoIgnoresInheritedGitDir: a caller running inside another
// repository's hook must not redirect resolution there.
func TestResolveRepoIgnoresInheritedGitDir(t *testing.T) {
	t.Parallel()
	repo, other := newRepo(t), newRepo(t)
	g := &Git{Path: "git", Command: exec.CommandContext, Environ: func() []string {
		return append(os.Environ(), "GIT_DIR="+filepath.Join(other, ".git"), "GIT_WORK_TREE="+other)
	}}
	got, err := g.ResolveRepo(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != repo {
		t.Errorf("Root = %s, want %s", got.Root, repo)
	}
}
