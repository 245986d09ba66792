package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Stash is a resumed run's prior work set aside beside its worktree, in
// <worktree>.pre-resume-<slug> (RE-9): a docker resume's export writes the
// container's whole tree into a lane that must hold nothing but its .git
// file, so the prior work (there the only copy until the export) moves
// out first. PreResumeStashes finds stashes left behind, and clean keeps
// or parks them.
type Stash struct {
	// Worktree is the lane the work came from; Path is the stash.
	Worktree, Path string
}

// SetAside moves every entry of worktree but .git into a new stash named
// for slug, the new run's. The name must be unused (the slug is new): an
// existing entry is someone else's and is left alone. On failure whatever
// was moved is moved back and no stash remains.
func SetAside(worktree, slug string) (*Stash, error) {
	st := &Stash{Worktree: worktree, Path: worktree + PreResumeMarker + slug}
	if err := os.Mkdir(st.Path, 0o700); err != nil {
		return nil, err
	}
	moved, err := moveEntries(worktree, st.Path)
	if err != nil {
		if rerr := st.restore(moved); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return st, nil
}

// Restore moves everything in the stash back into the worktree and
// removes the emptied stash. What cannot be moved stays in the stash,
// which then stays too.
func (st *Stash) Restore() error { return st.restore(nil) }

// Discard removes the stash and what it holds: its work is elsewhere now.
func (st *Stash) Discard() error {
	if err := os.RemoveAll(st.Path); err != nil {
		return fmt.Errorf("the stash %s could not be removed: %w (remove it by hand)", st.Path, err)
	}
	return nil
}

// moveEntries renames every entry of dir but .git into stash and returns
// their names, in the order moved.
func moveEntries(dir, stash string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var moved []string
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(stash, e.Name())); err != nil {
			return moved, err
		}
		moved = append(moved, e.Name())
	}
	return moved, nil
}

// restore moves names (every entry of the stash when nil) back into the
// worktree and removes the then empty stash.
func (st *Stash) restore(names []string) error {
	if names == nil {
		entries, err := os.ReadDir(st.Path)
		if err != nil {
			return fmt.Errorf("restore the prior work from %s: %w", st.Path, err)
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	var errs []error
	for _, n := range names {
		if err := os.Rename(filepath.Join(st.Path, n), filepath.Join(st.Worktree, n)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("restore the prior work from %s: %w (what is left stays there)", st.Path, errors.Join(errs...))
	}
	if err := os.Remove(st.Path); err != nil {
		return fmt.Errorf("remove the emptied stash %s: %w", st.Path, err)
	}
	return nil
}
