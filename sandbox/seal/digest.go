package seal

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// maxDigesters bounds the goroutines that read a directory's files at
// once: the seal's cost on a large tree is its reads, which spread over
// the machine's CPUs, and a few are enough to keep them busy.
const maxDigesters = 4

// pendingFile is a regular file of the directory being walked whose
// digest is still to be taken, with what its manifest entry needs.
type pendingFile struct {
	name  string
	entry manifestEntry
	rel   string
	mode  uint32
	err   error
}

// digesters are a walk's helper goroutines: each runs the tasks it is
// given with a read buffer of its own. A walk on one CPU has none.
type digesters struct {
	tasks chan func(buf []byte)
	wg    sync.WaitGroup
	n     int
}

// newDigesters starts n helpers (none for n <= 0).
func newDigesters(n int) *digesters {
	d := &digesters{n: n}
	if n <= 0 {
		return d
	}
	d.tasks = make(chan func([]byte))
	for range n {
		d.wg.Go(func() {
			buf := make([]byte, digestBufSize)
			for task := range d.tasks {
				task(buf)
			}
		})
	}
	return d
}

// stop ends the helpers once their tasks are done.
func (d *digesters) stop() {
	if d.tasks != nil {
		close(d.tasks)
		d.wg.Wait()
	}
}

// helpersFor is how many helpers a walk on this machine gets.
func helpersFor() int { return min(runtime.GOMAXPROCS(0), maxDigesters) - 1 }

// digestBufSize is each reader's buffer.
const digestBufSize = 64 << 10

// queueFile notes the regular file e of the directory being walked for
// the digest its directory's flush takes.
func (w *walker) queueFile(e *entry, kind byte) {
	w.pending = append(w.pending, pendingFile{
		name:  e.name,
		rel:   e.rel,
		mode:  stMode(&e.st) & 0o7777,
		entry: manifestEntry{kind: kind, ino: e.st.Ino, ctime: ctimeNS(&e.st), size: e.st.Size},
	})
}

// flushFiles takes the digests of the files queued for the directory
// open at fd, spread over the helpers and this goroutine, and adds them
// to the manifest. It runs before the directory's walk returns, so its
// parent judges a manifest that holds everything below it, and fd is
// still open.
func (w *walker) flushFiles(fd int) error {
	files := w.pending
	w.pending = nil
	if len(files) == 0 {
		return nil
	}
	var next atomic.Int64
	work := func(buf []byte) {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(files) {
				return
			}
			f := &files[i]
			f.entry.sum, f.err = digestAt(fd, f.name, f.mode, buf, !w.readOnly)
		}
	}
	var helping sync.WaitGroup
	for range min(w.digest.n, len(files)-1) {
		helping.Add(1)
		w.digest.tasks <- func(buf []byte) {
			defer helping.Done()
			work(buf)
		}
	}
	work(w.buf)
	helping.Wait()
	for i := range files {
		f := &files[i]
		if f.err != nil {
			return fmt.Errorf("seal: read %s: %w", quote(f.rel), f.err)
		}
		w.manifest.add(f.rel, f.entry)
	}
	return nil
}
