package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// ErrImportRefused means the commits offered for import were refused: the
// pack did not check out, the tip is not a descendant of the base, or the
// branch moved meanwhile. Nothing reached the repository.
var ErrImportRefused = errors.New("commits refused")

// objectID is a full object id, SHA-1 or SHA-256.
var objectID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// Import is a set of commits offered from outside (a worker's private
// repository) for a branch of the repository.
type Import struct {
	// Pack is the path of a pack with the objects reachable from Tip but
	// not from Base. It is untrusted: every object in it is checked.
	Pack string
	// Tip is the commit the branch is to point at; Base is where it points
	// now and must stay an ancestor of Tip.
	Tip, Base string
	// Branch is the branch to move (with or without refs/heads/).
	Branch string
	// Quarantine is an empty directory to check the objects in; it is
	// left for the caller to remove.
	Quarantine string
}

// ImportCommits copies the commits of im into repo and moves im.Branch
// from im.Base to im.Tip, and nothing else:
//
//  1. the pack is copied into a quarantine object directory that borrows
//     from the repository's, and indexed there by git index-pack --strict,
//     which hashes every object, checks each one's form and that every
//     object it links to exists, and refuses one that differs from an
//     existing object of the same id;
//  2. the tip must be a commit that descends from the base;
//  3. only the objects reachable from the tip but not from the base are
//     written, into a new pack made by git from the checked objects and
//     put into the repository's object store beside the existing packs
//     (a pack of the same name is the same objects): no existing object
//     file is ever replaced;
//  4. the branch moves by compare-and-swap from the base to the tip.
//
// Every git call is config-neutral and touches no work tree. A refusal
// wraps ErrImportRefused.
func (g *Git) ImportCommits(ctx context.Context, repo Repo, im Import) error {
	if !objectID.MatchString(im.Tip) || !objectID.MatchString(im.Base) {
		return fmt.Errorf("%w: tip %q or base %q is not a full object id", ErrImportRefused, im.Tip, im.Base)
	}
	branch := "refs/heads/" + strings.TrimPrefix(im.Branch, "refs/heads/")
	objects := filepath.Join(repo.CommonDir, "objects")
	incoming := filepath.Join(im.Quarantine, "incoming", "pack")
	clean := filepath.Join(im.Quarantine, "clean")
	for _, d := range []string{incoming, clean} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("import commits: %w", err)
		}
	}
	quarantined := func(args ...string) Call {
		return Call{
			Dir: repo.CommonDir, GitDir: repo.CommonDir, Neutral: true, Args: args,
			ObjectDir: filepath.Dir(incoming), AlternateObjectDirs: []string{objects},
		}
	}
	// 1. The pack, copied (the original may change under us), checked.
	packCopy := filepath.Join(incoming, "incoming.pack")
	if err := copyFile(im.Pack, packCopy); err != nil {
		return fmt.Errorf("import commits: copy the pack: %w", err)
	}
	if _, err := g.Run(ctx, quarantined("index-pack", "--strict", packCopy)); err != nil {
		return fmt.Errorf("%w: the pack does not check out: %w", ErrImportRefused, err)
	}
	// 2. A commit descending from the base.
	out, err := g.Run(ctx, quarantined("cat-file", "-t", im.Tip))
	if err != nil || strings.TrimSpace(string(out)) != "commit" {
		return fmt.Errorf("%w: %s is not a commit", ErrImportRefused, im.Tip)
	}
	if _, err := g.Run(ctx, quarantined("merge-base", "--is-ancestor", im.Base, im.Tip)); err != nil {
		return fmt.Errorf("%w: %s does not descend from the base %s", ErrImportRefused, im.Tip, im.Base)
	}
	// 3. Only what the new commits need, repacked from checked objects.
	list, err := g.Run(ctx, quarantined("rev-list", "--objects", im.Tip, "--not", im.Base))
	if err != nil {
		return fmt.Errorf("%w: list the new objects: %w", ErrImportRefused, err)
	}
	var ids bytes.Buffer
	for line := range strings.SplitSeq(string(list), "\n") {
		if id, _, _ := strings.Cut(line, " "); id != "" {
			ids.WriteString(id + "\n")
		}
	}
	var name bytes.Buffer
	c := quarantined("pack-objects", "-q", filepath.Join(clean, "pack"))
	if err := g.Stream(ctx, c, &ids, &name); err != nil {
		return fmt.Errorf("import commits: pack the new objects: %w", err)
	}
	hash := strings.TrimSpace(name.String())
	if !objectID.MatchString(hash) {
		return fmt.Errorf("import commits: pack-objects printed %q", hash)
	}
	// The index goes last: git sees a pack once its index is there.
	for _, ext := range []string{".pack", ".idx"} {
		from := filepath.Join(clean, "pack-"+hash+ext)
		to := filepath.Join(objects, "pack", "pack-"+hash+ext)
		if err := placeNew(from, to); err != nil {
			return fmt.Errorf("import commits: %w", err)
		}
	}
	// 4. The branch, by compare-and-swap.
	move := Call{
		Dir: repo.CommonDir, GitDir: repo.CommonDir, Neutral: true,
		Args: []string{"update-ref", "-m", "dirtywork: import the worker's commits", branch, im.Tip, im.Base},
	}
	if _, err := g.Run(ctx, move); err != nil {
		return fmt.Errorf("%w: move %s from %s to %s: %w", ErrImportRefused, branch, im.Base, im.Tip, err)
	}
	return nil
}

// placeNew moves from to to unless to exists: a pack's name is its
// checksum, so an existing one holds the same objects and is kept. A hard
// link fails on an existing name, where a rename would replace it.
func placeNew(from, to string) error {
	if err := os.Link(from, to); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("place %s: %w", to, err)
	}
	return nil
}

// copyFile copies the regular file at from (not following a final
// symlink) to a new file to.
func copyFile(from, to string) error {
	in, err := os.OpenFile(from, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // only read
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", from)
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
