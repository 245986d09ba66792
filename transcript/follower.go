package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ItemKind says what an [Item] carries.
type ItemKind int

// Item kinds.
const (
	// ItemLine carries a well-formed line in Item.Line.
	ItemLine ItemKind = iota + 1
	// ItemReset says the file was truncated or replaced: everything
	// delivered before is void, and the lines that follow are the new
	// content from its start (numbered from 1 again).
	ItemReset
	// ItemProblem carries a damaged line or a watch failure in Item.Problem.
	ItemProblem
)

// String returns the kind's name.
func (k ItemKind) String() string {
	switch k {
	case ItemLine:
		return "line"
	case ItemReset:
		return "reset"
	case ItemProblem:
		return "problem"
	}
	return fmt.Sprintf("ItemKind(%d)", int(k))
}

// Item is one thing a follower delivers, in file order.
type Item struct {
	Kind    ItemKind
	Line    Line    // for ItemLine
	Problem Problem // for ItemProblem
}

// ErrWatchClosed is reported (as a ProblemWatch item) when the file watcher
// stops on its own; the follower then ends.
var ErrWatchClosed = errors.New("file watcher closed")

// DefaultPollInterval is the follower's safety poll. Deliveries are driven by
// file events; the poll only catches events the watcher missed.
const DefaultPollInterval = 2 * time.Second

// FollowOption configures Follow.
type FollowOption func(*follower)

// WithPollInterval sets the safety poll interval (DefaultPollInterval when
// unset or not positive).
func WithPollInterval(d time.Duration) FollowOption {
	return func(f *follower) {
		if d > 0 {
			f.poll = d
		}
	}
}

// followBuffer is the item channel's capacity: enough to batch a burst
// without letting a stalled consumer make the follower read far ahead.
const followBuffer = 64

// Follow tails the transcript at path and delivers its lines as they are
// written, each complete line exactly once and in order (between resets). A
// partial last line is held back until its newline arrives. If the file is
// truncated or replaced (renamed over, deleted and created again), Follow
// delivers an ItemReset and starts again from the new content's first byte.
//
// Damaged lines arrive as ItemProblem (ProblemCorrupt), as does a replaced
// file's unfinished last line (ProblemPartial) and a watch failure
// (ProblemWatch). A replacement loses nothing: the old file is read to its
// end before the reset. An in-place truncation can only be seen after the
// fact, so lines appended in the instant before it may never be delivered.
//
// path's directory must exist; the file itself may appear later. Follow
// watches the directory, not the file, so it sees the file being created or
// replaced; a slow safety poll covers missed events. When the consumer is
// slow Follow waits for it; it never drops an item. The channel is closed
// after ctx is done, once the watcher is closed.
func Follow(ctx context.Context, path string, opts ...FollowOption) (<-chan Item, error) {
	dir, name := filepath.Split(filepath.Clean(path))
	if dir == "" {
		dir = "."
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", path, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("follow %s: %s is not a directory", path, dir)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("follow %s: start file watcher: %w", path, err)
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close() // the Add error is the one worth reporting
		return nil, fmt.Errorf("follow %s: watch directory %s: %w", path, dir, err)
	}
	f := &follower{
		path:    path,
		name:    name,
		poll:    DefaultPollInterval,
		watcher: w,
		out:     make(chan Item, followBuffer),
		parser:  lineParser{limit: MaxLineBytes},
	}
	for _, opt := range opts {
		opt(f)
	}
	go f.run(ctx)
	return f.out, nil
}

// tailCheckBytes is how many bytes before the read offset are compared on
// every read, to notice a file that was truncated and rewritten past the
// offset before the follower looked (its size alone would not show it).
const tailCheckBytes = 64

// follower is the state of one Follow call; only its goroutine touches it.
type follower struct {
	path    string
	name    string // base name filtered from the directory's events
	poll    time.Duration
	watcher *fsnotify.Watcher
	out     chan Item

	file   *os.File    // the file being read; nil until it exists
	info   fs.FileInfo // file's identity, to notice a replacement
	opened bool        // some file was opened before: a new one means a reset
	offset int64       // bytes of file consumed
	tail   []byte      // the last bytes consumed, up to tailCheckBytes
	parser lineParser
	buf    []byte
}

func (f *follower) run(ctx context.Context) {
	defer close(f.out)
	defer func() {
		_ = f.watcher.Close() // nothing is left to report to
		if f.file != nil {
			_ = f.file.Close() // read-only: closing cannot lose data
		}
	}()
	ticker := time.NewTicker(f.poll)
	defer ticker.Stop()

	// The watch is in place before this first read, so a write that lands
	// after it still produces an event.
	if !f.sync(ctx) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-f.watcher.Events:
			if !ok {
				f.send(ctx, problemItem(ProblemWatch, 0, ErrWatchClosed, ""))
				return
			}
			if filepath.Base(ev.Name) != f.name {
				continue
			}
		case err, ok := <-f.watcher.Errors:
			if !ok {
				f.send(ctx, problemItem(ProblemWatch, 0, ErrWatchClosed, ""))
				return
			}
			// An overflow means events were lost, which the read below
			// makes good; anything else is worth showing, and the poll
			// keeps the follower going.
			if !errors.Is(err, fsnotify.ErrEventOverflow) &&
				!f.send(ctx, problemItem(ProblemWatch, 0, fmt.Errorf("watch %s: %w", f.path, err), "")) {
				return
			}
		case <-ticker.C:
		}
		if !f.sync(ctx) {
			return
		}
	}
}

// send delivers it, waiting for the consumer; false means ctx is done.
func (f *follower) send(ctx context.Context, it Item) bool {
	select {
	case f.out <- it:
		return true
	case <-ctx.Done():
		return false
	}
}

// sync brings the consumer up to date with the file: it notices a
// replacement or truncation, then delivers every complete line written
// since the last sync. It returns false when ctx is done.
func (f *follower) sync(ctx context.Context) bool {
	if f.file != nil {
		cur, err := os.Stat(f.path)
		switch {
		case err == nil && !os.SameFile(cur, f.info):
			// Replaced: finish the old file (its last lines were written
			// before the new one took its place), then start over.
			if !f.drain(ctx) || !f.restart(ctx) {
				return false
			}
		case err != nil:
			// Gone (deleted, or its directory removed): deliver what the
			// open file still holds and wait for a new one to appear.
			return f.drain(ctx)
		}
	}
	if f.file == nil && !f.open(ctx) {
		return false
	}
	if f.file == nil {
		return true // not there yet
	}
	return f.readNew(ctx)
}

// open opens the file if it exists; after an earlier file, that is a reset.
func (f *follower) open(ctx context.Context) bool {
	file, err := os.Open(f.path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return f.send(ctx, problemItem(ProblemWatch, 0, fmt.Errorf("open %s: %w", f.path, err), ""))
		}
		return true
	}
	info, err := file.Stat()
	if err != nil {
		_ = file.Close() // unusable either way
		return f.send(ctx, problemItem(ProblemWatch, 0, fmt.Errorf("stat %s: %w", f.path, err), ""))
	}
	f.file, f.info = file, info
	if f.opened {
		if !f.send(ctx, Item{Kind: ItemReset}) {
			return false
		}
	}
	f.opened = true
	return true
}

// restart drops the current file so the next open starts from scratch.
func (f *follower) restart(ctx context.Context) bool {
	if f.parser.unfinished() {
		// The old file ended mid-line; say so rather than drop it quietly.
		f.parser.finish(func(it Item) bool { return f.send(ctx, it) })
		if ctx.Err() != nil {
			return false
		}
	}
	_ = f.file.Close() // read-only: closing cannot lose data
	f.file, f.info = nil, nil
	f.resetPosition()
	return true
}

func (f *follower) resetPosition() {
	f.offset = 0
	f.tail = f.tail[:0]
	f.parser.reset()
}

// drain delivers the complete lines left in the current file, without the
// truncation checks: a file no longer at path is not rewritten through it.
func (f *follower) drain(ctx context.Context) bool {
	for {
		data, ok := f.readMore(ctx)
		if !ok {
			return false
		}
		if len(data) == 0 {
			return true
		}
		if !f.deliver(ctx, data) {
			return false
		}
	}
}

// readNew delivers what was appended since the last read, starting over
// (with a reset) if the file was truncated or rewritten in place.
func (f *follower) readNew(ctx context.Context) bool {
	for {
		if !f.unchanged() {
			if !f.truncated(ctx) {
				return false
			}
			continue
		}
		data, ok := f.readMore(ctx)
		if !ok {
			return false
		}
		if len(data) == 0 {
			return true
		}
		// The file may have been cut and rewritten between the check and
		// the read: check again, so bytes of new content are never taken
		// for the continuation of the old. (A cut that lands after this
		// check is caught by the next read.)
		if !f.unchanged() {
			if !f.truncated(ctx) {
				return false
			}
			continue
		}
		if !f.deliver(ctx, data) {
			return false
		}
	}
}

// truncated handles a file cut or rewritten under the follower.
func (f *follower) truncated(ctx context.Context) bool {
	if f.parser.unfinished() {
		f.parser.finish(func(it Item) bool { return f.send(ctx, it) })
		if ctx.Err() != nil {
			return false
		}
	}
	f.resetPosition()
	return f.send(ctx, Item{Kind: ItemReset})
}

// unchanged reports whether the bytes already consumed are still in the
// file: it is at least offset long, and the last consumed bytes read back
// the same.
func (f *follower) unchanged() bool {
	if f.offset == 0 {
		return true
	}
	info, err := f.file.Stat()
	if err != nil || info.Size() < f.offset {
		return false
	}
	got := make([]byte, len(f.tail))
	n, err := f.file.ReadAt(got, f.offset-int64(len(f.tail)))
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return bytes.Equal(got[:n], f.tail)
}

// readMore reads the next chunk at offset without consuming it; it is empty
// at the end of the file. ok is false when ctx is done.
func (f *follower) readMore(ctx context.Context) (data []byte, ok bool) {
	if f.buf == nil {
		f.buf = make([]byte, readChunk)
	}
	n, err := f.file.ReadAt(f.buf, f.offset)
	if n == 0 && err != nil && !errors.Is(err, io.EOF) {
		return nil, f.send(ctx, problemItem(ProblemWatch, 0, fmt.Errorf("read %s: %w", f.path, err), ""))
	}
	return f.buf[:n], true
}

// deliver consumes data: it advances the offset and sends the lines it
// completes. It returns false when ctx is done.
func (f *follower) deliver(ctx context.Context, data []byte) bool {
	f.offset += int64(len(data))
	f.remember(data)
	return f.parser.feed(data, func(it Item) bool { return f.send(ctx, it) })
}

// remember keeps the last tailCheckBytes consumed bytes.
func (f *follower) remember(data []byte) {
	f.tail = append(f.tail, data[max(0, len(data)-tailCheckBytes):]...)
	if extra := len(f.tail) - tailCheckBytes; extra > 0 {
		f.tail = append(f.tail[:0], f.tail[extra:]...)
	}
}
