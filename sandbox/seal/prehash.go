package seal

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// Digests are digests of a tree's files taken ahead of its seal, while
// the worker may already be at work, so that the seal need not read a
// file nobody changed. A seal takes one instead of reading the file only
// when the file still has the inode, change time and size it had when
// the digest was taken and that change time is at or before the
// baseline: every change made after the baseline gives a change time
// after it (Mark), and the kernel sets a file's change time on every
// write, so such a file holds what it held when it was read. (Rollback
// trusts a file's status the same way.)
type Digests struct {
	since int64
	files map[string]manifestEntry
}

// Prehash takes the digests of the regular files under dir whose change
// time is at or before since (the baseline Mark gave), until ctx ends or
// the tree changes under it; what it took until then stands. It changes
// nothing in the tree: what it cannot read as it is, it leaves for the
// seal to read. It reads on one goroutine, beside the worker's commands.
func Prehash(ctx context.Context, dir string, since time.Time, keepRootGit bool) *Digests {
	d := &Digests{since: since.UnixNano(), files: map[string]manifestEntry{}}
	if since.IsZero() {
		return d
	}
	w, err := newWalkerWith(ctx, dir, Baseline{Since: since, KeepRootGit: keepRootGit}, 0)
	if err != nil {
		return d
	}
	defer w.close()
	w.recordOnly, w.readOnly = true, true
	_ = w.scan() // a walk cut short keeps the digests it took
	for rel, e := range w.manifest.entries {
		if (e.kind == kindFile || e.kind == kindExec) && e.ctime <= d.since {
			d.files[rel] = e
		}
	}
	return d
}

// Len is the number of files with a digest.
func (d *Digests) Len() int {
	if d == nil {
		return 0
	}
	return len(d.files)
}

// lookup is the digest taken ahead for the file rel of this status and
// kind, when the walk's baseline is the one the digests were taken
// against and the file has not changed since.
func (d *Digests) lookup(rel string, st *unix.Stat_t, kind byte, since int64) ([32]byte, bool) {
	if d == nil || since != d.since {
		return [32]byte{}, false
	}
	e, ok := d.files[rel]
	if !ok || e.kind != kind || e.ino != st.Ino || e.ctime != ctimeNS(st) || e.size != st.Size || e.ctime > since {
		return [32]byte{}, false
	}
	return e.sum, true
}

// Has reports whether a digest of the file rel was taken.
func (d *Digests) Has(rel string) bool {
	if d == nil {
		return false
	}
	_, ok := d.files[rel]
	return ok
}
