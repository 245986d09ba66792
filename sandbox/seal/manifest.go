package seal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Entry kinds in a manifest.
const (
	kindFile    byte = 'f'
	kindExec    byte = 'x'
	kindLink    byte = 'l'
	kindDir     byte = 'd'
	kindSpecial byte = 's'
)

// manifestEntry is one path of a manifest: its kind and, for a file, the
// digest of its content (a link's, of its target), with the status it
// had, so an unchanged file need not be read again.
type manifestEntry struct {
	kind  byte
	sum   [32]byte
	ino   uint64
	ctime int64
	size  int64
}

// Manifest is a tree as a seal left it: every path below the root, with
// its kind and content digest. Its Hash names the tree; two trees with
// the same paths, kinds, executable bits, contents and link targets have
// the same hash, whatever their other modes, owners and times.
type Manifest struct {
	entries     map[string]manifestEntry
	keepRootGit bool
}

func newManifest(keepRootGit bool) *Manifest {
	return &Manifest{entries: map[string]manifestEntry{}, keepRootGit: keepRootGit}
}

func (m *Manifest) add(rel string, e manifestEntry) { m.entries[rel] = e }

// dropUnder forgets rel and every path below it.
func (m *Manifest) dropUnder(rel string) {
	delete(m.entries, rel)
	prefix := rel + "/"
	for p := range m.entries {
		if strings.HasPrefix(p, prefix) {
			delete(m.entries, p)
		}
	}
}

// Len is the number of paths in the manifest.
func (m *Manifest) Len() int { return len(m.entries) }

// Hash is the tree's name: "sha256:" and the hex SHA-256 of every path in
// byte order, each as its kind, its digest (none for a directory), its
// path and a NUL.
func (m *Manifest) Hash() string {
	paths := make([]string, 0, len(m.entries))
	for p := range m.entries {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		e := m.entries[p]
		h.Write([]byte{e.kind})
		if e.kind != kindDir {
			h.Write(e.sum[:])
		}
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Changes is what Rollback found.
type Changes struct {
	// Changed are the paths the manifest holds that are now different or
	// gone, sorted: the tree judged is not the tree left.
	Changed []string
	// Removed are the paths that were not in the manifest and were taken
	// out (whatever verify itself made: caches, build output), sorted.
	Removed []string
}

// maxChangesListed bounds each list of Changes.
const maxChangesListed = 100

// Rollback compares the tree rooted at dir with m after something ran in
// it (verify): whatever is not in m is taken out, and every path of m
// that differs now, or is gone, is reported. The tree is m again exactly
// when Changed is empty. No process may change the tree meanwhile.
func (m *Manifest) Rollback(ctx context.Context, dir string) (Changes, error) {
	// Its compare reads the few files whose status changed itself: no
	// helpers.
	w, err := newWalkerWith(ctx, dir, Baseline{KeepRootGit: m.keepRootGit}, 0)
	if err != nil {
		return Changes{}, err
	}
	defer w.close()
	w.recordOnly = true
	r := &rollback{w: w, m: m, seen: make(map[string]bool, len(m.entries))}
	if err := r.dir(int(w.root.Fd()), "."); err != nil {
		return Changes{}, err
	}
	for p := range m.entries {
		if !r.seen[p] {
			r.changed = append(r.changed, p)
		}
	}
	if len(r.created) > 0 {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return Changes{}, fmt.Errorf("seal: %w", err)
		}
		defer func() { _ = root.Close() }() // a directory opened for reading
		for _, c := range r.created {
			if err := removeAll(root, c); err != nil {
				return Changes{}, err
			}
		}
	}
	slices.Sort(r.changed)
	slices.Sort(r.created)
	return Changes{Changed: capList(r.changed), Removed: capList(r.created)}, nil
}

// capList keeps the first maxChangesListed paths and says how many more.
func capList(l []string) []string {
	if len(l) <= maxChangesListed {
		return l
	}
	return append(l[:maxChangesListed:maxChangesListed], fmt.Sprintf("… and %d more", len(l)-maxChangesListed))
}

// rollback is one Rollback's walk.
type rollback struct {
	w       *walker
	m       *Manifest
	seen    map[string]bool
	changed []string
	created []string
}

func (r *rollback) dir(fd int, rel string) error {
	if err := r.w.ctx.Err(); err != nil {
		return err
	}
	entries, err := list(fd, rel)
	if err != nil {
		return err
	}
	for i := range entries {
		e := &entries[i]
		e.rel = joinRel(rel, e.name)
		if e.rel == ".git" && r.m.keepRootGit {
			continue
		}
		old, ok := r.m.entries[e.rel]
		if !ok {
			r.created = append(r.created, e.rel)
			continue
		}
		r.seen[e.rel] = true
		if err := r.compare(fd, e, old); err != nil {
			return err
		}
	}
	return nil
}

// compare checks the entry e against what the manifest holds for it.
func (r *rollback) compare(dirfd int, e *entry, old manifestEntry) error {
	switch stMode(&e.st) & unix.S_IFMT {
	case unix.S_IFDIR:
		if old.kind != kindDir {
			r.changed = append(r.changed, e.rel)
			return nil
		}
		fd, err := r.w.openDir(dirfd, e)
		if err != nil {
			return err
		}
		defer func() { _ = unix.Close(fd) }()
		return r.dir(fd, e.rel)
	case unix.S_IFREG:
		kind := kindFile
		if stMode(&e.st)&0o100 != 0 {
			kind = kindExec
		}
		if kind != old.kind {
			r.changed = append(r.changed, e.rel)
			return nil
		}
		if e.st.Ino == old.ino && ctimeNS(&e.st) == old.ctime && e.st.Size == old.size {
			return nil // the kernel changes ctime with any write
		}
		sum, err := digestAt(dirfd, e.name, stMode(&e.st)&0o7777, r.w.buf, true)
		if errors.Is(err, fs.ErrPermission) {
			r.changed = append(r.changed, e.rel) // unreadable even to its owner
			return nil
		}
		if err != nil {
			return fmt.Errorf("seal: read %s: %w", quote(e.rel), err)
		}
		if sum != old.sum {
			r.changed = append(r.changed, e.rel)
		}
	case unix.S_IFLNK:
		target, err := readlinkat(dirfd, e.name)
		if err != nil {
			return fmt.Errorf("seal: read link %s: %w", quote(e.rel), err)
		}
		if old.kind != kindLink || sha256.Sum256([]byte(target)) != old.sum {
			r.changed = append(r.changed, e.rel)
		}
	default:
		if old.kind != kindSpecial {
			r.changed = append(r.changed, e.rel)
		}
	}
	return nil
}

// removeAll removes rel under root, and everything below it; directories
// their owner made unreadable or unwritable are opened up first (a walker
// that is the owner may, and root needs not).
func removeAll(root *os.Root, rel string) error {
	if err := root.RemoveAll(rel); err == nil {
		return nil
	}
	openUp(root, rel)
	if err := root.RemoveAll(rel); err != nil {
		return fmt.Errorf("seal: remove %s: %w", quote(rel), err)
	}
	return nil
}

// openUp gives the owner every right on the directories at and below rel,
// so that their entries can be listed and removed. Links are not followed.
func openUp(root *os.Root, rel string) {
	fi, err := root.Lstat(rel)
	if err != nil || !fi.IsDir() {
		return
	}
	_ = root.Chmod(rel, fi.Mode().Perm()|0o700)
	f, err := root.Open(rel)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	_ = f.Close() // read only
	for _, n := range names {
		openUp(root, rel+"/"+n)
	}
}
