package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LinkedWorktree is a linked worktree as the repository records it.
type LinkedWorktree struct {
	// Path is the worktree, symlinks resolved.
	Path string
	// GitDir is its admin dir, <common>/worktrees/<name>.
	GitDir string
	// Branch is the checked-out branch (refs/heads/ stripped); "" when
	// HEAD is detached.
	Branch string
}

// FindLinkedWorktree finds worktree among repo's linked worktrees from what
// git keeps in the common dir: `git worktree list` and the gitdir file of
// each <common>/worktrees/<name>. The worktree's own .git file is never
// read, so a worker that rewrote it cannot point the caller at another
// repository. A path that is not a linked worktree of repo, or whose admin
// dir cannot be found, is ErrNotLinkedWorktree.
func (g *Git) FindLinkedWorktree(ctx context.Context, repo Repo, worktree string) (LinkedWorktree, error) {
	path, err := filepath.EvalSymlinks(worktree)
	if err != nil {
		return LinkedWorktree{}, fmt.Errorf("%s is %w of %s: %w", worktree, ErrNotLinkedWorktree, repo.Root, err)
	}
	out, err := g.run(ctx, repo.Root, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return LinkedWorktree{}, fmt.Errorf("list the worktrees of %s: %w", repo.Root, err)
	}
	entries := parseWorktreeListZ(out)
	found := LinkedWorktree{}
	for i, e := range entries {
		p := filepath.Clean(e.Path)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if p != path || i == 0 || e.Bare { // the first entry is the main worktree
			continue
		}
		found = LinkedWorktree{Path: path, Branch: strings.TrimPrefix(e.Branch, "refs/heads/")}
		break
	}
	if found.Path == "" {
		return LinkedWorktree{}, fmt.Errorf("%s is %w of %s", worktree, ErrNotLinkedWorktree, repo.Root)
	}
	admin := filepath.Join(repo.CommonDir, "worktrees")
	dirs, err := os.ReadDir(admin)
	if err != nil {
		return LinkedWorktree{}, fmt.Errorf("%s is %w of %s: read %s: %w", worktree, ErrNotLinkedWorktree, repo.Root, admin, err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(admin, d.Name())
		data, err := os.ReadFile(filepath.Join(dir, "gitdir"))
		if err != nil {
			continue
		}
		target := strings.TrimSpace(string(data))
		if !filepath.IsAbs(target) { // worktree.useRelativePaths
			target = filepath.Join(dir, target)
		}
		wt := filepath.Dir(filepath.Clean(target))
		if r, err := filepath.EvalSymlinks(wt); err == nil {
			wt = r
		}
		if wt == path {
			found.GitDir = dir
			return found, nil
		}
	}
	return LinkedWorktree{}, fmt.Errorf("%s is %w of %s: no admin dir under %s names it", worktree, ErrNotLinkedWorktree, repo.Root, admin)
}

// Records returns the lanes of the manifest as recorded, without looking
// at their worktrees (List does, at the cost of a status per lane). Like
// List it reads without the lock: the manifest is replaced atomically.
func (m *Manager) Records() ([]Lane, error) {
	mf, err := readManifest(manifestPath(m.repo))
	if err != nil {
		return nil, err
	}
	return slices.Clone(mf.Lanes), nil
}
