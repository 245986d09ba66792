package export

import (
	"bytes"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Pooled creation: on some disks creating a file waits on the file
// system far longer than the system call costs, and creations in
// different directories overlap those waits (creations in one directory
// take turns on its lock). A new regular file of at most pooledMax bytes
// is therefore read from the stream in order, as every member is, and
// then created, written and closed by one of poolWorkers goroutines,
// through the pool's own duplicate of its directory's descriptor, one
// for each run of one directory's files; a stream's files come directory
// by directory, and each such run goes to the next worker in turn.
// Everything else — directories, links, larger files, every check of the
// walk — stays in stream order on the walk's goroutine. At most
// poolWorkers × poolQueue × pooledMax bytes (8 MiB) wait in the queues.
const (
	poolWorkers = 4
	poolQueue   = 128
	pooledMax   = 16 << 10
)

// createPool creates small regular files off the walk's goroutine. A
// file it failed to write is its refusal, which the writer's next member
// and close report.
type createPool struct {
	queues  []chan createJob // one a worker
	workers sync.WaitGroup
	pending sync.WaitGroup // jobs queued and not yet done

	// The walk's goroutine only: the directory of the last file queued
	// and the queue it went to.
	dir  *poolDir
	next int

	mu  sync.Mutex
	ref *Refusal // the first failure
}

// createJob is one file to create: base in the directory dir with data.
type createJob struct {
	m    member
	dir  *poolDir
	base string
	data []byte
}

// poolDir is the pool's duplicate of a directory's descriptor, shared by
// the jobs of one run of that directory's files and closed by the last
// of them to let go (the walk holds it too while the run lasts).
type poolDir struct {
	name string // as the members spell it, with its trailing slash
	fd   int
	refs atomic.Int32
}

func (d *poolDir) hold() *poolDir {
	d.refs.Add(1)
	return d
}

func (d *poolDir) release() {
	if d.refs.Add(-1) == 0 {
		_ = unix.Close(d.fd) // the pool's duplicate
	}
}

func newCreatePool() *createPool {
	p := &createPool{}
	for range poolWorkers {
		q := make(chan createJob, poolQueue)
		p.queues = append(p.queues, q)
		p.workers.Go(func() {
			buf := make([]byte, copyBuffer)
			for j := range q {
				p.do(j, buf)
				p.pending.Done()
			}
		})
	}
	return p
}

// err is the first failure so far, nil if none.
func (p *createPool) err() *Refusal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ref
}

func (p *createPool) fail(ref *Refusal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ref == nil {
		p.ref = ref
	}
}

// add queues m, whose parent directory is dirfd (the lane's: the pool
// takes a duplicate) and last component base, reading its data now.
func (p *createPool) add(m *member, dirfd int, base string, data io.Reader) *Refusal {
	body := make([]byte, m.size)
	if _, err := io.ReadFull(data, body); err != nil {
		return osFailed(m.raw, err, "write "+quoted(m.name))
	}
	if dir := m.name[:len(m.name)-len(base)]; p.dir == nil || dir != p.dir.name {
		fd, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return osFailed(m.raw, err, "create "+quoted(m.name))
		}
		p.letGoOfDir()
		p.dir = &poolDir{name: dir, fd: fd}
		p.dir.refs.Store(1) // the walk's
		p.next = (p.next + 1) % len(p.queues)
	}
	p.pending.Add(1)
	p.queues[p.next] <- createJob{m: *m, dir: p.dir.hold(), base: base, data: body}
	return nil
}

// letGoOfDir drops the walk's hold on the directory of its last run.
func (p *createPool) letGoOfDir() {
	if p.dir != nil {
		p.dir.release()
		p.dir = nil
	}
}

// do creates one file as writer.create would.
func (p *createPool) do(j createJob, buf []byte) {
	defer j.dir.release()
	if p.err() != nil {
		return // the extraction is refused: write nothing more
	}
	m := &j.m
	fd, err := pooledCreate(j.dir.fd, j.base, uint32(m.perm().Perm()))
	if err != nil {
		p.fail(osFailed(m.raw, &os.PathError{Op: "openat", Path: m.name, Err: err}, "create "+quoted(m.name)))
		return
	}
	if ref := fillFile(m, os.NewFile(uintptr(fd), m.name), bytes.NewReader(j.data), buf); ref != nil {
		p.fail(ref)
	}
}

// wait returns once every queued file is done, with the first failure.
func (p *createPool) wait() *Refusal {
	p.pending.Wait()
	return p.err()
}

// close waits for every queued file and stops the workers.
func (p *createPool) close() *Refusal {
	p.letGoOfDir()
	for _, q := range p.queues {
		close(q)
	}
	p.workers.Wait()
	return p.err()
}

// pooledCreate is createAt, a variable so that a test can make it fail.
var pooledCreate = createAt
