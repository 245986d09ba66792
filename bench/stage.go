package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/dirtywork/dirtywork/gitops"
)

// The identity of a staged repository's one commit (B-5).
const (
	StageAuthorName  = "dirtywork-bench"
	StageAuthorEmail = "bench@dirtywork.local"
)

// Stage makes a case's repository (B-5): a new directory
// dwbench-<task>-… under parent (the system's temporary directory when
// ""), holding the fixture's files but solution/ (one kept as
// <name>.fixture as <name>) and what its generator writes, committed as one commit by
// dirtywork-bench <bench@dirtywork.local>. It returns the directory's
// resolved path; the caller removes it when the case is over. A failed
// staging leaves nothing behind.
func Stage(ctx context.Context, f Fixture, parent string) (dir string, err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err = os.MkdirTemp(parent, "dwbench-"+f.Name+"-")
	if err != nil {
		return "", fmt.Errorf("stage %s: %w", f.Name, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir) // our own fresh directory
			dir = ""
		}
	}()
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return dir, fmt.Errorf("stage %s: %w", f.Name, err)
	}
	if err := stageFiles(f, dir); err != nil {
		return dir, fmt.Errorf("stage %s: %w", f.Name, err)
	}
	if err := commitAll(ctx, dir, "bench task "+f.Name); err != nil {
		return dir, fmt.Errorf("stage %s: %w", f.Name, err)
	}
	return dir, nil
}

// stageFiles writes f's visible files and its generated ones into dir.
func stageFiles(f Fixture, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // a directory handle
	if err := copyTree(f.FS, ".", root, func(p string) bool { return p == SolutionDir }); err != nil {
		return err
	}
	if f.Generate == "" {
		return nil
	}
	gen := Generators[f.Generate]
	if gen == nil {
		return fmt.Errorf("no generator %q", f.Generate)
	}
	if err := gen(root); err != nil {
		return fmt.Errorf("generate %s: %w", f.Generate, err)
	}
	return nil
}

// ApplySolution lays the fixture's reference solution over the staged tree
// dir, as a worker that solved the task would leave it (uncommitted): the
// self-check of a fixture.
func (f Fixture) ApplySolution(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("apply the solution of %s: %w", f.Name, err)
	}
	defer func() { _ = root.Close() }() // a directory handle
	if err := copyTree(f.FS, SolutionDir, root, nil); err != nil {
		return fmt.Errorf("apply the solution of %s: %w", f.Name, err)
	}
	return nil
}

// copyTree copies the files under from in fsys into root, at their paths
// relative to from (one kept as <name>.fixture as <name>), leaving out
// the directories skip names.
func copyTree(fsys fs.FS, from string, root *os.Root, skip func(p string) bool) error {
	return fs.WalkDir(fsys, from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := p
		if from != "." {
			if rel = p[len(from):]; rel == "" {
				return nil
			}
			rel = rel[1:]
		}
		switch {
		case d.IsDir() && skip != nil && skip(p):
			return fs.SkipDir
		case d.IsDir():
			if rel == "." {
				return nil
			}
			return root.MkdirAll(rel, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if info, err := d.Info(); err == nil && info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := root.MkdirAll(path.Dir(stagedName(rel)), 0o755); err != nil {
			return err
		}
		return root.WriteFile(stagedName(rel), b, mode)
	})
}

// commitAll makes dir a repository whose one commit holds everything in
// it. Git runs config-neutral: the operator's hooks, signing and filters
// have no say in a fixture's commit.
func commitAll(ctx context.Context, dir, message string) error {
	g := gitops.New()
	g.Environ = func() []string {
		return append(os.Environ(),
			"GIT_AUTHOR_NAME="+StageAuthorName, "GIT_AUTHOR_EMAIL="+StageAuthorEmail,
			"GIT_COMMITTER_NAME="+StageAuthorName, "GIT_COMMITTER_EMAIL="+StageAuthorEmail)
	}
	// A fresh repository defines no filter drivers: no lookup needed.
	none := &gitops.Filters{}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"commit", "-q", "--no-verify", "-m", message},
	} {
		if _, err := g.Run(ctx, gitops.Call{Dir: dir, Args: args, Neutral: true, Filters: none}); err != nil {
			return err
		}
	}
	return nil
}

// Stager stages a sweep's cases from its fixtures: its Stage is a
// Sweep's.
type Stager struct {
	Fixtures []Fixture
	// Parent is where the repositories are made (the system's temporary
	// directory when "").
	Parent string
}

// Stage stages the fixture called task; the repository's Cleanup removes
// it, with whatever the run left in it.
func (s Stager) Stage(ctx context.Context, task string) (*Staged, error) {
	f, ok := FixtureNamed(s.Fixtures, task)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoFixture, task)
	}
	dir, err := Stage(ctx, f, s.Parent)
	if err != nil {
		return nil, err
	}
	return &Staged{Repo: dir, Task: f.Task, Cleanup: func() error { return os.RemoveAll(dir) }}, nil
}

// ErrNoFixture is a task no fixture is called.
var ErrNoFixture = errors.New("no such bench task")

// FixtureNamed is the fixture of fixtures called name.
func FixtureNamed(fixtures []Fixture, name string) (Fixture, bool) {
	for _, f := range fixtures {
		if f.Name == name {
			return f, true
		}
	}
	return Fixture{}, false
}
