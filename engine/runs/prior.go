package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/transcript"
)

// PriorUse is what a command wants of an earlier run's worktree. The guards
// (RE-4) are the same for every use; their wording names it.
type PriorUse int

const (
	// UseResume continues the run in its worktree (dirtywork resume).
	UseResume PriorUse = iota
	// UseSnapshot commits the worktree's changes onto its branch
	// (dirtywork runs snapshot).
	UseSnapshot
	// UseBranchFrom snapshots the worktree so a new run can branch from it
	// (--branch-from @slug).
	UseBranchFrom
)

// verb is the use as the refusals word it.
func (u PriorUse) verb() string {
	if u == UseResume {
		return "resuming"
	}
	return "snapshotting"
}

// object is what is missing when the worktree is.
func (u PriorUse) object() string {
	if u == UseResume {
		return "nothing to resume"
	}
	return "nothing to snapshot"
}

// PreResumeMarker separates a worktree's name from the new run's slug in
// the name of a pre-resume stash: <worktree>.pre-resume-<slug>.
const PreResumeMarker = ".pre-resume-"

// PriorRun is an ended run whose worktree passed the guards.
type PriorRun struct {
	Slug   string
	Dir    string
	Record transcript.RunRecord
	// Repo is the repository the run was made in.
	Repo gitops.Repo
	// Worktree is the run's worktree (symlinks resolved), Branch the branch
	// it has checked out, which is the one run.json records.
	Worktree string
	Branch   string
	// GitDir is the worktree's admin dir, taken from the lane manifest or
	// else from git's records in the common dir, never from the worktree's
	// .git file, which the worker could have rewritten.
	GitDir string
}

// GuardPriorRun applies RE-4 to the run in dir (record rec) for use, in
// order: a live run is refused; so is a worktree that is missing or has no
// .git, one that is not a linked worktree of the run's repository (or has
// another branch checked out than run.json says), and one with a
// pre-resume stash beside it, which is listed and left alone. Every
// refusal is a *Refusal.
func GuardPriorRun(ctx context.Context, dir string, rec transcript.RunRecord, use PriorUse) (*PriorRun, error) {
	slug := filepath.Base(dir)
	alive, err := PriorAlive(dir, rec)
	if err != nil {
		return nil, refuse("", "cannot tell whether run '%s' is alive: %v", slug, err)
	}
	if alive {
		return nil, refuse("wait for it to end, or stop it", "run '%s' is still in progress; it must end before %s its work", slug, use.verb())
	}
	wt, branch, repoPath := rec.Worktree, rec.Branch, rec.Repo
	if wt == "" || !isDir(wt) || !exists(filepath.Join(wt, ".git")) {
		return nil, refuse("", "run '%s': its worktree %s is missing; %s", slug, orDash(wt), use.object())
	}
	repo, err := gitops.ResolveRepo(ctx, repoPath)
	if err != nil {
		return nil, refuse("", "run '%s': its repository: %v", slug, err)
	}
	g := gitops.New()
	linked, err := g.FindLinkedWorktree(ctx, repo, wt)
	if err != nil {
		if errors.Is(err, gitops.ErrNotLinkedWorktree) {
			return nil, refuse("", "run '%s': %s is not a linked worktree of %s", slug, wt, repo.Root)
		}
		return nil, refuse("", "run '%s': %v", slug, err)
	}
	if linked.Branch != branch {
		return nil, refuse("check the branch out again in that worktree",
			"run '%s': its worktree %s has %s checked out, not its branch %s", slug, wt, orDash(linked.Branch), branch)
	}
	// The lane manifest, where dirtywork made the lane, must agree with
	// git's own record.
	lanes, err := gitops.NewManager(g, repo).Records()
	if err != nil {
		return nil, refuse("", "run '%s': %v", slug, err)
	}
	for _, l := range lanes {
		if resolved(l.Worktree) == resolved(linked.Path) && (l.GitDir != "" && resolved(l.GitDir) != resolved(linked.GitDir) || l.Branch != branch) {
			return nil, refuse("", "run '%s': its lane (%s on %s) does not match git's worktree record (%s on %s)",
				slug, l.GitDir, l.Branch, linked.GitDir, branch)
		}
	}
	stashes, err := PreResumeStashes(linked.Path)
	if err != nil {
		return nil, refuse("", "run '%s': %v", slug, err)
	}
	if len(stashes) > 0 {
		return nil, refuse("a stash holds work an interrupted resume set aside: move what you want of it back into the worktree, "+
			"then remove the stash (or 'dirtywork runs clean "+slug+" --force')",
			"run '%s': a pre-resume stash is beside its worktree: %s; it was left untouched", slug, strings.Join(stashes, ", "))
	}
	return &PriorRun{
		Slug: slug, Dir: dir, Record: rec, Repo: repo,
		Worktree: linked.Path, Branch: branch, GitDir: linked.GitDir,
	}, nil
}

// PreResumeStashes lists the pre-resume stashes beside worktree
// (<worktree>.pre-resume-*), sorted, as paths.
func PreResumeStashes(worktree string) ([]string, error) {
	parent, name := filepath.Split(filepath.Clean(worktree))
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, fmt.Errorf("look for pre-resume stashes beside %s: %w", worktree, err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), name+PreResumeMarker) {
			out = append(out, filepath.Join(parent, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// PriorAlive reports whether the run in dir still runs: its liveness lock
// is held; or, for a record made before there was one (dirtywork 0.9.1),
// its status is running and its host_pid is still the run's process
// (transcript.LegacyAlive: D-4's signal 0, and a process that looks like
// the run's).
func PriorAlive(dir string, rec transcript.RunRecord) (bool, error) {
	alive, err := transcript.IsAlive(dir)
	if err != nil || alive {
		return alive, err
	}
	if transcript.HasLivenessFile(dir) {
		return false, nil // the lock says it all
	}
	if rec.Status != transcript.StatusRunning || rec.HostPID == nil {
		return false, nil // a host_pid of another type (0.9.1 wrote true) reads as none
	}
	return transcript.LegacyAlive(*rec.HostPID, rec.Started), nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
