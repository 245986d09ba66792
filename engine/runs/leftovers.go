package runs

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox/docker"
)

// Presence is whether something exists: known present, known absent, or
// unknown (the one who could tell did not answer).
type Presence int

// The three answers.
const (
	Unknown Presence = iota
	Absent
	Present
)

// Bool is the presence as JSON: true, false, or null when unknown.
func (p Presence) Bool() *bool {
	if p == Unknown {
		return nil
	}
	b := p == Present
	return &b
}

// Leftovers is what exists of a run outside its run dir.
type Leftovers struct {
	// Worktree: the recorded worktree is one of its repository's worktrees
	// (`git worktree list`); Unknown when git could not answer or none is
	// recorded.
	Worktree Presence
	// Branch: the recorded branch exists in the repository.
	Branch Presence
	// Container is the recorded container's state ("running", "exited",
	// …), "" when it is not there or none is recorded.
	Container string
	// Volume: the recorded work volume exists; Unknown when none is
	// recorded.
	Volume Presence
	// OtherObjects are further containers and volumes labelled with the
	// run's slug (the tools volume, a setup or export container).
	OtherObjects []string
	// DockerErr and GitErr say why something is Unknown.
	DockerErr, GitErr error
}

// repoView is what one `git worktree list` and one ref listing told about
// a repository.
type repoView struct {
	worktrees map[string]gitops.Worktree // by resolved path
	branches  map[string]string          // full ref → commit
	err       error
}

// inventory is one look at the repositories and the daemon, shared by
// every run of a call: one container list and one volume list in all,
// one worktree list and one ref listing per repository.
type inventory struct {
	repos      map[string]*repoView
	containers map[string]docker.Labelled
	volumes    map[string]docker.Labelled
	bySlug     map[string][]string // slug → names of labelled objects
	dockerErr  error
	dirs       map[string]string // directory → resolved, for resolvedPath
}

func (s *Store) inventory(ctx context.Context, repos []string) *inventory {
	inv := &inventory{repos: map[string]*repoView{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		cs, vs, err := s.docker.ListLabelled(ctx)
		inv.dockerErr = err
		inv.containers = map[string]docker.Labelled{}
		inv.volumes = map[string]docker.Labelled{}
		inv.bySlug = map[string][]string{}
		for _, c := range cs {
			inv.containers[c.Name] = c
			inv.bySlug[c.Run()] = append(inv.bySlug[c.Run()], c.Name)
		}
		for _, v := range vs {
			inv.volumes[v.Name] = v
			inv.bySlug[v.Run()] = append(inv.bySlug[v.Run()], v.Name)
		}
	})
	var mu sync.Mutex
	sem := make(chan struct{}, 4)
	for _, repo := range repos {
		if repo == "" {
			continue
		}
		if _, dup := inv.repos[repo]; dup {
			continue
		}
		view := &repoView{}
		inv.repos[repo] = view
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			v := s.viewRepo(ctx, repo)
			mu.Lock()
			*view = v
			mu.Unlock()
		})
	}
	wg.Wait()
	return inv
}

func (s *Store) viewRepo(ctx context.Context, repo string) repoView {
	wts, err := s.git.Worktrees(ctx, repo)
	if err != nil {
		return repoView{err: err}
	}
	view := repoView{worktrees: map[string]gitops.Worktree{}}
	for _, wt := range wts {
		view.worktrees[resolved(wt.Path)] = wt
	}
	view.branches, err = s.git.Refs(ctx, repo, "refs/heads/")
	if err != nil {
		view.err = err
	}
	return view
}

// resolved is path with symlinks resolved, or cleaned when it is gone.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

func (s *Store) fillLeftovers(ctx context.Context, runs []*Run) {
	repos := make([]string, 0, len(runs))
	for _, r := range runs {
		repos = append(repos, r.Record.Repo)
	}
	inv := s.inventory(ctx, repos)
	inv.dirs = map[string]string{}
	for _, r := range runs {
		r.Leftovers = inv.leftovers(r)
	}
}

// resolvedPath is resolved(path) with the parent directory's resolution
// shared: thousands of worktrees live in a few .worktrees directories,
// and resolving each from the root costs a syscall per component.
func (inv *inventory) resolvedPath(path string) string {
	dir, base := filepath.Split(filepath.Clean(path))
	rd, ok := inv.dirs[dir]
	if !ok {
		rd = resolved(dir)
		inv.dirs[dir] = rd
	}
	full := filepath.Join(rd, base)
	// The last component may itself be a link.
	if fi, err := os.Lstat(full); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return resolved(full)
	}
	return full
}

func (inv *inventory) leftovers(r *Run) *Leftovers {
	l := &Leftovers{DockerErr: inv.dockerErr}
	rec := &r.Record
	if view := inv.repos[rec.Repo]; view != nil {
		l.GitErr = view.err
		if view.worktrees != nil && rec.Worktree != "" {
			l.Worktree = Absent
			if _, ok := view.worktrees[inv.resolvedPath(rec.Worktree)]; ok {
				l.Worktree = Present
			}
		}
		if view.branches != nil && rec.Branch != "" {
			l.Branch = Absent
			if _, ok := view.branches["refs/heads/"+rec.Branch]; ok {
				l.Branch = Present
			}
		}
	}
	if c := Str(rec.Container); c != "" {
		if ct, ok := inv.containers[c]; ok {
			l.Container = ct.State
		}
	}
	if v := Str(rec.Volume); v != "" && inv.dockerErr == nil {
		l.Volume = Absent
		if _, ok := inv.volumes[v]; ok {
			l.Volume = Present
		}
	}
	for _, name := range inv.bySlug[r.Slug] {
		if name != Str(rec.Container) && name != Str(rec.Volume) {
			l.OtherObjects = append(l.OtherObjects, name)
		}
	}
	return l
}
