package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// diskEntry is a file or symlink of the exported tree.
type diskEntry struct {
	path string
	mode BlobMode
	size int64
	// info is what the listing saw, for readContent to check the file
	// it opens against.
	info fs.FileInfo
}

// treeReader lists the exported tree beneath root without following a
// symlink anywhere: directories are opened through the root, every name is
// examined with Lstat, links are read, never resolved.
type treeReader struct {
	root *os.Root
	// skip are the base's gitlink paths: a submodule's checkout is not
	// part of the tree the diff compares.
	skip map[string]bool
	out  []diskEntry
}

// readTree returns the files and symlinks under root, by path. Names
// equal to ".git" in any letter case are left out with everything under
// them, as git never tracks them; so are sockets, devices and the like,
// which git cannot record.
func readTree(ctx context.Context, root *os.Root, skip map[string]bool) ([]diskEntry, error) {
	r := &treeReader{root: root, skip: skip}
	if err := r.dir(ctx, "."); err != nil {
		return nil, err
	}
	slices.SortFunc(r.out, func(a, b diskEntry) int { return strings.Compare(a.path, b.path) })
	return r.out, nil
}

func (r *treeReader) dir(ctx context.Context, rel string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("read exported tree: %w", err)
	}
	f, err := r.root.Open(rel)
	if err != nil {
		return fmt.Errorf("open exported directory %q: %w", rel, err)
	}
	names, err := f.Readdirnames(-1)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("list exported directory %q: %w", rel, err)
	}
	for _, name := range names {
		if strings.EqualFold(name, ".git") {
			continue
		}
		child := name
		if rel != "." {
			child = path.Join(rel, name)
		}
		if r.skip[child] {
			continue
		}
		if err := r.entry(ctx, child); err != nil {
			return err
		}
	}
	return nil
}

// readPaths is readTree for the given paths only: each that is a file or
// symlink on disk, by path; directories, missing paths, gitlinks and
// names under a .git are left out.
func readPaths(ctx context.Context, root *os.Root, paths []string, skip map[string]bool) ([]diskEntry, error) {
	r := &treeReader{root: root, skip: skip}
	for _, p := range slices.Compact(slices.Sorted(slices.Values(paths))) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read exported tree: %w", err)
		}
		if r.skipped(p) {
			continue
		}
		fi, err := lstatBeneath(root, p)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			continue // gone, or a parent became a file or a symlink
		case err != nil:
			return nil, fmt.Errorf("stat exported %q: %w", p, err)
		case fi.IsDir():
			continue
		}
		if err := r.leaf(p, fi); err != nil {
			return nil, err
		}
	}
	return r.out, nil
}

// skipped reports whether p is, or is under, a gitlink or a .git name:
// what readTree never reaches.
func (r *treeReader) skipped(p string) bool {
	for q := p; q != "."; q = path.Dir(q) {
		if r.skip[q] || strings.EqualFold(path.Base(q), ".git") {
			return true
		}
	}
	return false
}

func (r *treeReader) entry(ctx context.Context, rel string) error {
	fi, err := r.root.Lstat(rel)
	if err != nil {
		return fmt.Errorf("stat exported %q: %w", rel, err)
	}
	if fi.IsDir() {
		return r.dir(ctx, rel)
	}
	return r.leaf(rel, fi)
}

// leaf records a file or symlink; other kinds are left out.
func (r *treeReader) leaf(rel string, fi fs.FileInfo) error {
	switch t := fi.Mode().Type(); {
	case t == fs.ModeSymlink:
		target, err := r.root.Readlink(rel)
		if err != nil {
			return fmt.Errorf("read exported symlink %q: %w", rel, err)
		}
		r.out = append(r.out, diskEntry{path: rel, mode: ModeSymlink, size: int64(len(target))})
	case t.IsRegular():
		mode := ModeFile
		// git records only the owner's exec bit.
		if fi.Mode().Perm()&0o100 != 0 {
			mode = ModeExecutable
		}
		r.out = append(r.out, diskEntry{path: rel, mode: mode, size: fi.Size(), info: fi})
	}
	return nil
}

// readContent returns what git would store for an exported entry: a
// file's bytes or a symlink's target. The file is opened through the root
// and must still be the regular file the listing saw, so a symlink put in
// its place is never followed out of the tree.
func readContent(root *os.Root, e diskEntry) ([]byte, error) {
	if e.mode == ModeSymlink {
		target, err := root.Readlink(e.path)
		if err != nil {
			return nil, fmt.Errorf("read exported symlink %q: %w", e.path, err)
		}
		return []byte(target), nil
	}
	seen := e.info
	if seen == nil {
		var err error
		if seen, err = lstatBeneath(root, e.path); err != nil {
			return nil, fmt.Errorf("stat exported %q: %w", e.path, err)
		}
	}
	f, err := root.Open(e.path)
	if err != nil {
		return nil, fmt.Errorf("open exported %q: %w", e.path, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat exported %q: %w", e.path, err)
	}
	if !seen.Mode().IsRegular() || !os.SameFile(seen, fi) {
		return nil, fmt.Errorf("read exported %q: %w", e.path, ErrTreeChanged)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read exported %q: %w", e.path, err)
	}
	return data, nil
}

// lstatBeneath is root.Lstat(p) for a p whose every parent is a real
// directory: one that became a symlink (`mv src lib && ln -s lib src`)
// does not lead to src/a, which is gone, however lib/a looks.
func lstatBeneath(root *os.Root, p string) (fs.FileInfo, error) {
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		fi, err := root.Lstat(p[:i])
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fs.ErrNotExist
		}
	}
	return root.Lstat(p)
}
