package benchview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/bench"
)

// tail reads a results file as it grows. Each read parses the complete
// lines written since the last one; a last line without its newline (a
// row being written) is left for the next read. A file that shrank or was
// replaced is read again from its start. The file is append-only, so its
// size and identity are enough to tell.
type tail struct {
	path   string
	info   fs.FileInfo // the file read so far; nil before
	offset int64       // bytes of complete lines consumed
	lines  int         // lines consumed
}

// update is what one read of the results file found.
type update struct {
	// Reset says everything read before is void: the rows follow from
	// the file's start (a new file, or one that shrank).
	Reset    bool
	Rows     []bench.Row
	Problems []bench.LineError
	// Missing says there is no file (yet).
	Missing bool
}

func (u update) empty() bool { return !u.Reset && len(u.Rows) == 0 && len(u.Problems) == 0 }

// read reads what was appended since the last read.
func (t *tail) read() (update, error) {
	// O_NONBLOCK: a FIFO planted at the path must not hang the reader.
	f, err := os.OpenFile(t.path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		u := update{Missing: true, Reset: t.info != nil}
		t.info, t.offset, t.lines = nil, 0, 0
		return u, nil
	}
	if err != nil {
		return update{}, fmt.Errorf("open results file: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	info, err := f.Stat()
	if err != nil {
		return update{}, fmt.Errorf("inspect results file %s: %w", t.path, err)
	}
	if !info.Mode().IsRegular() {
		return update{}, fmt.Errorf("results file %s is not a regular file", t.path)
	}
	var u update
	if t.info != nil && (!os.SameFile(info, t.info) || info.Size() < t.offset) {
		u.Reset = true
		t.offset, t.lines = 0, 0
	}
	t.info = info
	if info.Size() <= t.offset {
		return u, nil
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return update{}, fmt.Errorf("read results file %s: %w", t.path, err)
	}
	// Read to the end, past the size seen: a row appended meanwhile is
	// welcome. The buffer is the size seen, so a whole file is read
	// without growing it.
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()-t.offset+bytes.MinRead))
	if _, err := buf.ReadFrom(f); err != nil {
		return update{}, fmt.Errorf("read results file %s: %w", t.path, err)
	}
	data := buf.Bytes()
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return u, nil // one unfinished line
	}
	whole := data[:end+1]
	u.Rows, u.Problems = parseLines(whole, t.lines+1)
	t.offset += int64(len(whole))
	t.lines += bytes.Count(whole, []byte("\n"))
	return u, nil
}

// parallelFrom is the size from which a read is parsed on every core: a
// whole results file of thousands of rows.
const parallelFrom = 256 << 10

// parseLines is bench.ParseLines over data's complete lines, numbered from
// first, spread over the cores when data is large.
func parseLines(data []byte, first int) ([]bench.Row, []bench.LineError) {
	n := runtime.GOMAXPROCS(0)
	if len(data) < parallelFrom || n < 2 {
		return bench.ParseLines(data, first)
	}
	// Cut data into n pieces at line ends, each numbered from its first
	// line.
	type piece struct {
		data     []byte
		first    int
		rows     []bench.Row
		problems []bench.LineError
	}
	var pieces []*piece
	start, line := 0, first
	for i := 1; i <= n && start < len(data); i++ {
		end := len(data)
		if i < n {
			end = min(len(data), len(data)*i/n)
			if j := bytes.IndexByte(data[end:], '\n'); j >= 0 {
				end += j + 1
			} else {
				end = len(data)
			}
		}
		if end <= start {
			continue
		}
		pieces = append(pieces, &piece{data: data[start:end], first: line})
		line += bytes.Count(data[start:end], []byte("\n"))
		start = end
	}
	var wg sync.WaitGroup
	for _, p := range pieces {
		wg.Go(func() { p.rows, p.problems = bench.ParseLines(p.data, p.first) })
	}
	wg.Wait()
	var rows []bench.Row
	var problems []bench.LineError
	for _, p := range pieces {
		rows = append(rows, p.rows...)
		problems = append(problems, p.problems...)
	}
	return rows, problems
}

// Messages from a follower, tagged with the generation of the view that
// started it, so a follower left over from an earlier opening is told
// apart.
type (
	// rowsMsg carries what a read of the results file found.
	rowsMsg struct {
		gen  int
		path string
		u    update
		err  error
		// took is how long the read and parse took.
		took time.Duration
	}
	// stateMsg carries the sweep's state; nil when it wrote none.
	stateMsg struct {
		gen   int
		state *bench.SweepState
		alive bool
	}
	// watchMsg says the follower could not start or stopped.
	watchMsg struct {
		gen int
		err error
	}
	// followingMsg hands the view the follower's channel.
	followingMsg struct {
		gen int
		ch  <-chan tea.Msg
	}
)

// Msg is every message the bench view takes: the root hands them to it
// whatever screen is open.
type Msg interface{ benchMsg() }

func (rowsMsg) benchMsg()       {}
func (stateMsg) benchMsg()      {}
func (watchMsg) benchMsg()      {}
func (followingMsg) benchMsg()  {}
func (acceptanceMsg) benchMsg() {}

// pollEvery is the follower's safety poll: it catches a change the file
// watcher missed, and a sweep that died (which changes no file).
const pollEvery = 2 * time.Second

// follow reads the results file at path, or the newest in dir when path
// is "", and then follows it and its sweep's state until ctx ends,
// sending what it finds on the returned channel (closed then). It
// watches the directory, not the file: the file may not exist yet.
func follow(ctx context.Context, gen int, path, dir string, poll time.Duration) <-chan tea.Msg {
	ch := make(chan tea.Msg)
	go func() {
		defer close(ch)
		send := func(msg tea.Msg) bool {
			select {
			case ch <- msg:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if path == "" {
			p, err := bench.NewestResults(dir)
			if err != nil {
				send(watchMsg{gen: gen, err: err})
				return
			}
			path = p
		}
		w, err := fsnotify.NewWatcher()
		if err != nil {
			send(watchMsg{gen: gen, err: fmt.Errorf("watch %s: %w", path, err)})
			return
		}
		defer func() { _ = w.Close() }() // nothing is left to report to
		if err := w.Add(filepath.Dir(path)); err != nil {
			send(watchMsg{gen: gen, err: fmt.Errorf("watch %s: %w", filepath.Dir(path), err)})
			return
		}
		f := &follower{gen: gen, path: path, tail: &tail{path: path}, send: send}
		// The watch is in place before the first read, so a row appended
		// after it still makes an event.
		if !f.rows() || !f.state() {
			return
		}
		ticker := time.NewTicker(poll)
		defer ticker.Stop()
		name, stateName := filepath.Base(path), filepath.Base(bench.StatePath(path))
		for {
			ok := true
			select {
			case <-ctx.Done():
				return
			case ev, open := <-w.Events:
				if !open {
					send(watchMsg{gen: gen, err: fmt.Errorf("watch %s: %w", path, errWatchClosed)})
					return
				}
				switch filepath.Base(ev.Name) {
				case name:
					ok = f.rows()
				case stateName:
					ok = f.state()
				}
			case err, open := <-w.Errors:
				if !open {
					send(watchMsg{gen: gen, err: fmt.Errorf("watch %s: %w", path, errWatchClosed)})
					return
				}
				// Lost events are made good by the reads below.
				if !errors.Is(err, fsnotify.ErrEventOverflow) {
					ok = send(watchMsg{gen: gen, err: fmt.Errorf("watch %s: %w", path, err)})
				}
				ok = ok && f.rows() && f.state()
			case <-ticker.C:
				ok = f.rows() && f.state()
			}
			if !ok {
				return
			}
		}
	}()
	return ch
}

var errWatchClosed = errors.New("file watcher closed")

// follower is one follow's state; only its goroutine touches it.
type follower struct {
	gen   int
	path  string
	tail  *tail
	send  func(tea.Msg) bool
	first bool // the first read was sent
	// lastErr is the read error sent last: the same one is not sent on
	// every poll.
	lastErr string
	// last is the state sent last, to send only changes.
	last      *bench.SweepState
	lastAlive bool
	sentState bool
}

// rows sends what was appended; false when ctx ended.
func (f *follower) rows() bool {
	start := time.Now()
	u, err := f.tail.read()
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	if f.first && errText == f.lastErr && u.empty() {
		return true
	}
	f.lastErr = errText
	if !f.first {
		u.Reset = true
	}
	f.first = true
	return f.send(rowsMsg{gen: f.gen, path: f.path, u: u, err: err, took: time.Since(start)})
}

// state sends the sweep's state when it changed; false when ctx ended.
func (f *follower) state() bool {
	st, alive, err := bench.ReadState(f.path)
	var cur *bench.SweepState
	switch {
	case err == nil:
		cur = &st
	case errors.Is(err, fs.ErrNotExist):
	default:
		return true // caught mid-rewrite: the rewrite makes another event
	}
	if f.sentState && alive == f.lastAlive && reflect.DeepEqual(cur, f.last) {
		return true
	}
	f.last, f.lastAlive, f.sentState = cur, alive, true
	return f.send(stateMsg{gen: f.gen, state: cur, alive: alive})
}

// waitCmd delivers the follower's next message; it is armed again each
// time one is handled, and ends with the follower.
func waitCmd(ch <-chan tea.Msg) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		return msg
	}
}
