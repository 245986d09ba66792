package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// WorktreeTree is a worktree's content written as a tree object.
type WorktreeTree struct {
	// Tree is the tree's object name.
	Tree string
	// Skipped are paths that are neither regular files nor symlinks
	// (FIFOs, sockets, devices), left out.
	Skipped []string
	// Dropped are .git entries below the top (nested repositories' git
	// dirs, any case), left out; the files beside them are kept.
	Dropped []string
}

// TreeSource pins the repository a worktree's content is written into.
type TreeSource struct {
	// CommonDir is the repository's common git dir: where objects go. It
	// is never the worktree's .git file, which the worker may have written.
	CommonDir string
	// Worktree is the directory whose files are read.
	Worktree string
	// From is the tree-ish whose index the content is laid over: its
	// paths are the tracked ones, and ignore rules apply only to others.
	From string
}

// WriteWorktreeTree writes the files of src.Worktree as a tree, with
// plumbing on a temporary index built from src.From and config-neutral
// git: tracked paths of From that are gone are deletions, tracked paths
// present are hashed as they are now, untracked files count unless the
// worktree's ignore rules exclude them. Every file is hashed with
// --no-filters (no attribute, filter or driver plays a part), symlinks as
// links (never followed), executable bits kept. Neither the worktree's
// index nor anything under its .git is read.
func (g *Git) WriteWorktreeTree(ctx context.Context, src TreeSource) (WorktreeTree, error) {
	var res WorktreeTree
	tmp, err := os.MkdirTemp("", "dirtywork-tree-")
	if err != nil {
		return res, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	index := filepath.Join(tmp, "index")
	base := Call{Dir: src.Worktree, Neutral: true, GitDir: src.CommonDir, WorkTree: src.Worktree}
	if base.Filters, err = g.NeutralFilters(ctx, base); err != nil {
		return res, err
	}
	call := func(args ...string) Call {
		c := base
		c.IndexFile = index
		c.Args = args
		return c
	}
	if _, err := g.Run(ctx, call("read-tree", src.From)); err != nil {
		return res, fmt.Errorf("read %s into a temporary index: %w", src.From, err)
	}
	// One listing of both kinds, each path tagged: "? " an untracked
	// file, anything else ("H ") a path of From (one git process fewer
	// than a listing each; a review waits on this).
	listed, err := g.Run(ctx, call("ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard"))
	if err != nil {
		return res, fmt.Errorf("list the paths of %s and the untracked files of %s: %w", src.From, src.Worktree, err)
	}
	var tracked, others []string
	for p := range bytes.SplitSeq(listed, []byte{0}) {
		if len(p) == 0 {
			continue
		}
		if len(p) < 3 || p[1] != ' ' {
			return res, fmt.Errorf("list the paths of %s: an entry without its tag: %q", src.Worktree, p)
		}
		if p[0] == '?' {
			others = append(others, string(p[2:]))
		} else {
			tracked = append(tracked, string(p[2:]))
		}
	}
	b := &treeBuilder{root: src.Worktree, tmp: tmp}
	seen := map[string]bool{}
	for _, p := range tracked {
		if !seen[p] {
			seen[p] = true
			b.tracked(p)
		}
	}
	for _, p := range others {
		if !seen[p] {
			seen[p] = true
			if err := b.other(p); err != nil {
				return res, err
			}
		}
	}
	if b.err != nil {
		return res, b.err
	}
	if len(b.hashPaths) > 0 {
		var out bytes.Buffer
		in := strings.NewReader(strings.Join(b.hashPaths, "\n") + "\n")
		if err := g.Stream(ctx, call("hash-object", "-w", "--no-filters", "--stdin-paths"), in, &out); err != nil {
			return res, fmt.Errorf("hash the files of %s: %w", src.Worktree, err)
		}
		shas := strings.Fields(out.String())
		if len(shas) != len(b.hashPaths) {
			return res, fmt.Errorf("hash the files of %s: %d names for %d files", src.Worktree, len(shas), len(b.hashPaths))
		}
		for i, e := range b.hashed {
			b.info.WriteString(e.mode + " " + shas[i] + "\t" + e.path + "\x00")
		}
	}
	if b.info.Len() > 0 {
		if err := g.Stream(ctx, call("update-index", "--add", "--replace", "-z", "--index-info"), &b.info, nil); err != nil {
			return res, fmt.Errorf("stage the files of %s: %w", src.Worktree, err)
		}
	}
	out, err := g.Run(ctx, call("write-tree"))
	if err != nil {
		return res, fmt.Errorf("write the tree of %s: %w", src.Worktree, err)
	}
	res.Tree = strings.TrimSpace(string(out))
	res.Skipped, res.Dropped = b.skipped, b.dropped
	sort.Strings(res.Skipped)
	sort.Strings(res.Dropped)
	return res, nil
}

// treeBuilder collects the index lines of a worktree's files.
type treeBuilder struct {
	root, tmp string
	// info holds update-index --index-info lines ready to go: deletions.
	info bytes.Buffer
	// hashed are the entries whose blob hash-object makes, in the order
	// of hashPaths (absolute file paths: the file, or a temp file holding
	// a symlink's target).
	hashed    []indexEntry
	hashPaths []string
	skipped   []string
	dropped   []string
	links     int
	err       error
	// dirs caches realParents' answers by directory.
	dirs map[string]bool
}

type indexEntry struct{ mode, path string }

// zeroSHA in --index-info removes a path.
const zeroSHA = "0000000000000000000000000000000000000000"

func (b *treeBuilder) remove(path string) {
	b.info.WriteString("0 " + zeroSHA + "\t" + path + "\x00")
}

// tracked handles a path of the base index: present as a file or link
// it is re-hashed, otherwise it is deleted.
func (b *treeBuilder) tracked(path string) {
	if hasGitComponent(path) {
		b.remove(path)
		return
	}
	if !b.realParents(path) {
		// A directory on the way was replaced (by a link, a file): as
		// for git, the path is gone, and the link is an untracked entry.
		b.remove(path)
		return
	}
	fi, err := os.Lstat(filepath.Join(b.root, path))
	if err != nil || !b.add(path, fi) {
		b.remove(path)
	}
}

// realParents reports whether every directory above path is a real
// directory, not a symlink: a worker's link must never make host git read
// a file outside the worktree.
func (b *treeBuilder) realParents(path string) bool {
	dir := filepath.Dir(path)
	if dir == "." {
		return true
	}
	if ok, seen := b.dirs[dir]; seen {
		return ok
	}
	ok := b.realParents(dir)
	if ok {
		fi, err := os.Lstat(filepath.Join(b.root, dir))
		ok = err == nil && fi.IsDir()
	}
	if b.dirs == nil {
		b.dirs = map[string]bool{}
	}
	b.dirs[dir] = ok
	return ok
}

// other handles an untracked path; a directory (git lists a nested
// repository as "dir/") is walked, its .git entries dropped.
func (b *treeBuilder) other(path string) error {
	if !strings.HasSuffix(path, "/") {
		if hasGitComponent(path) {
			b.dropped = append(b.dropped, path)
			return nil
		}
		if fi, err := os.Lstat(filepath.Join(b.root, path)); err == nil {
			b.add(path, fi)
		}
		return nil
	}
	dir := filepath.Join(b.root, strings.TrimSuffix(path, "/"))
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: nothing to take
		}
		rel, rerr := filepath.Rel(b.root, p)
		if rerr != nil {
			return rerr
		}
		rel = filepath.ToSlash(rel)
		if strings.EqualFold(d.Name(), ".git") {
			b.dropped = append(b.dropped, rel)
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			b.add(rel, fi)
		}
		return nil
	})
}

// add stages path as it is on disk; false when it is of a kind a tree
// cannot hold (a directory where a file was, a FIFO, a device).
func (b *treeBuilder) add(path string, fi fs.FileInfo) bool {
	switch {
	case fi.Mode().IsRegular():
		mode := "100644"
		if fi.Mode().Perm()&0o111 != 0 {
			mode = "100755"
		}
		file := filepath.Join(b.root, path)
		if strings.ContainsAny(file, "\n\r") {
			// --stdin-paths reads lines: hash a copy under a plain name.
			data, err := os.ReadFile(file)
			if err == nil {
				b.links++
				file = filepath.Join(b.tmp, fmt.Sprintf("file-%d", b.links))
				err = os.WriteFile(file, data, 0o600)
			}
			if err != nil {
				b.err = err
				return false
			}
		}
		b.hashed = append(b.hashed, indexEntry{mode: mode, path: path})
		b.hashPaths = append(b.hashPaths, file)
		return true
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(filepath.Join(b.root, path))
		if err != nil {
			return false
		}
		// hash-object follows links; hash a file holding the target
		// instead, so the link is stored as a link and never followed.
		b.links++
		tf := filepath.Join(b.tmp, fmt.Sprintf("link-%d", b.links))
		if err := os.WriteFile(tf, []byte(target), 0o600); err != nil {
			b.err = err
			return false
		}
		b.hashed = append(b.hashed, indexEntry{mode: "120000", path: path})
		b.hashPaths = append(b.hashPaths, tf)
		return true
	case fi.IsDir():
		return false
	default:
		b.skipped = append(b.skipped, path)
		return false
	}
}

// hasGitComponent reports a path with a component named .git in any case.
func hasGitComponent(path string) bool {
	for c := range strings.SplitSeq(path, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
}

// ErrNotLinkedWorktree marks a directory that is not a linked worktree of
// the repository it should belong to.
var ErrNotLinkedWorktree = errors.New("not a linked worktree")
