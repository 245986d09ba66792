package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Repo is a resolved git work tree. Every path is absolute with symlinks
// resolved, so comparisons between them are plain string comparisons.
type Repo struct {
	// Root is the top level of the work tree the resolved path is in. For
	// a linked worktree that is the linked worktree, not the primary one.
	Root string
	// GitDir is the git dir of that work tree; in a linked worktree it is
	// <common>/worktrees/<name>.
	GitDir string
	// CommonDir is the git dir shared by all worktrees of the repository:
	// the home of refs, the exclude file, the lane manifest and the lock.
	CommonDir string
	// Head is the commit HEAD named when the repository was resolved.
	Head string
}

// LanesDir is <Root>/.worktrees, the directory lanes are created in.
func (r Repo) LanesDir() string { return filepath.Join(r.Root, lanesDirName) }

// StateDir is <CommonDir>/dirtywork, where the lane manifest and the repo
// lock live: shared by every worktree, never inside a work tree, never
// tracked.
func (r Repo) StateDir() string { return filepath.Join(r.CommonDir, "dirtywork") }

// lanesDirName is the directory under the repository root holding lanes.
const lanesDirName = ".worktrees"

// ResolveRepo resolves path (which may start with ~) to the git work tree
// containing it, with the default Git. See Git.ResolveRepo.
func ResolveRepo(ctx context.Context, path string) (Repo, error) {
	return New().ResolveRepo(ctx, path)
}

// ResolveRepo resolves path to the git work tree containing it: ~ expanded,
// made absolute, symlinks resolved. It refuses, with errors matching the
// sentinels, a path that is not a directory (ErrNotDir), one outside any
// git work tree including bare repositories (ErrNotWorkTree), and a
// repository whose HEAD does not resolve to a commit (ErrNoCommits).
func (g *Git) ResolveRepo(ctx context.Context, path string) (Repo, error) {
	abs, err := absPath(path)
	if err != nil {
		return Repo{}, err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Repo{}, fmt.Errorf("repository %s %w (it does not exist)", abs, ErrNotDir)
		}
		return Repo{}, fmt.Errorf("resolve repository path %s: %w", abs, err)
	}
	if fi, err := os.Stat(resolved); err != nil {
		return Repo{}, fmt.Errorf("inspect repository path %s: %w", resolved, err)
	} else if !fi.IsDir() {
		return Repo{}, fmt.Errorf("repository %s %w", abs, ErrNotDir)
	}

	// The usual case, a work tree, takes one call for the check and the
	// paths; anything else (a bare repository, a git dir, no repository)
	// makes that call fail and is told apart by the two calls below.
	out, err := g.run(ctx, resolved, "rev-parse", "--is-inside-work-tree", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	if err == nil {
		if lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); len(lines) == 4 && lines[0] == "true" {
			return g.finishRepo(ctx, abs, lines[1:])
		}
	}
	out, err = g.run(ctx, resolved, "rev-parse", "--is-inside-work-tree")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return Repo{}, fmt.Errorf("repository %s %w", abs, ErrNotWorkTree)
		}
		return Repo{}, fmt.Errorf("inspect repository %s: %w", abs, err)
	}
	if strings.TrimSpace(string(out)) != "true" {
		return Repo{}, fmt.Errorf("repository %s %w (a bare repository or a git dir)", abs, ErrNotWorkTree)
	}

	// One call for the three paths; a path with a newline in it shows up
	// as a wrong line count and is refused rather than misparsed.
	out, err = g.run(ctx, resolved, "rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return Repo{}, fmt.Errorf("locate the git dirs of %s: %w", abs, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 3 {
		return Repo{}, fmt.Errorf("locate the git dirs of %s: unexpected rev-parse output %q", abs, out)
	}
	return g.finishRepo(ctx, abs, lines)
}

// finishRepo takes rev-parse's three absolute paths (top level, git dir,
// common dir) of the repository at abs and resolves its HEAD.
func (g *Git) finishRepo(ctx context.Context, abs string, lines []string) (Repo, error) {
	var err error
	var paths [3]string
	for i, p := range lines {
		if paths[i], err = filepath.EvalSymlinks(p); err != nil {
			return Repo{}, fmt.Errorf("resolve git path %s of %s: %w", p, abs, err)
		}
	}
	repo := Repo{Root: paths[0], GitDir: paths[1], CommonDir: paths[2]}

	head, err := g.resolveCommit(ctx, repo.Root, "HEAD")
	if err != nil {
		if errors.Is(err, ErrBadRef) {
			return Repo{}, fmt.Errorf("repository %s %w (HEAD does not resolve; make a first commit)", repo.Root, ErrNoCommits)
		}
		return Repo{}, fmt.Errorf("resolve HEAD of %s: %w", repo.Root, err)
	}
	repo.Head = head
	return repo, nil
}

// resolveCommit resolves ref to a full commit id in dir. A ref that names
// no commit is ErrBadRef. Refs starting with '-' are refused, so a ref can
// never be read as an option.
func (g *Git) resolveCommit(ctx context.Context, dir, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("ref %q %w in %s", ref, ErrBadRef, dir)
	}
	out, err := g.run(ctx, dir, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		if exitCodeOf(err) == 1 {
			return "", fmt.Errorf("ref %q %w in %s", ref, ErrBadRef, dir)
		}
		return "", fmt.Errorf("resolve ref %q: %w", ref, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// absPath expands a leading ~ (the current user's home only) and makes
// path absolute.
func absPath(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("repository path is empty")
	}
	if path == "~" || strings.HasPrefix(path, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand ~ in %s: %w", path, err)
		}
		path = filepath.Join(home, strings.TrimPrefix(path, "~"))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("make %s absolute: %w", path, err)
	}
	return abs, nil
}

// within reports whether path equals dir or lies below it. Both must be
// clean absolute paths.
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	return strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}
