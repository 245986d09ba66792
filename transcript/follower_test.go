package transcript

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// liveness bounds how long a test waits for something that should take
// milliseconds; generous so a loaded machine does not flake.
const liveness = 5 * time.Second

// noPoll disables the safety poll in practice, so a test passes only if
// file events drive delivery.
var noPoll = WithPollInterval(time.Hour)

// seqLine is a transcript line whose "args" carries seq, padded with pad
// bytes of result so lines vary in size.
func seqLine(seq, pad int) []byte {
	body := fmt.Sprintf(`{"tool":"bash","args":"%d","result":"%s"}`, seq, strings.Repeat("r", pad))
	return appendLine(nil, testTime, EventToolResult, []byte(body))
}

// seqOf returns the seq of a line written by seqLine.
func seqOf(t *testing.T, l Line) int {
	t.Helper()
	ev, err := l.Decode()
	if err != nil {
		t.Fatalf("line %d: %v", l.Number, err)
	}
	n, err := strconv.Atoi(ev.(ToolResult).Args)
	if err != nil {
		t.Fatalf("line %d: args %q", l.Number, ev.(ToolResult).Args)
	}
	return n
}

// follow starts a follower that is cancelled, and drained until its channel
// closes, when the test ends.
func follow(t *testing.T, path string, opts ...FollowOption) <-chan Item {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ch, err := Follow(ctx, path, opts...)
	if err != nil {
		cancel()
		t.Fatalf("Follow: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		awaitClosed(t, ch)
	})
	return ch
}

// next returns the next item, failing the test if none arrives in time.
func next(t *testing.T, ch <-chan Item) Item {
	t.Helper()
	select {
	case it, ok := <-ch:
		if !ok {
			t.Fatal("follower channel closed early")
		}
		return it
	case <-time.After(liveness):
		t.Fatalf("no item within %v", liveness)
	}
	return Item{}
}

// expectSeq asserts the next item is the line with seq and number.
func expectSeq(t *testing.T, ch <-chan Item, seq, number int) {
	t.Helper()
	it := next(t, ch)
	if it.Kind != ItemLine {
		t.Fatalf("got %v item %+v, want line seq %d", it.Kind, it.Problem, seq)
	}
	if got := seqOf(t, it.Line); got != seq || it.Line.Number != number {
		t.Fatalf("got line seq %d number %d, want seq %d number %d", got, it.Line.Number, seq, number)
	}
}

func expectReset(t *testing.T, ch <-chan Item) {
	t.Helper()
	if it := next(t, ch); it.Kind != ItemReset {
		t.Fatalf("got %v item, want reset", it.Kind)
	}
}

// awaitClosed drains ch until it is closed.
func awaitClosed(t *testing.T, ch <-chan Item) {
	t.Helper()
	deadline := time.After(liveness)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("follower channel not closed within %v of cancel", liveness)
		}
	}
}

func appendTo(t *testing.T, path string, data ...[]byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range data {
		if _, err := f.Write(d); err != nil {
			_ = f.Close()
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFollowConcurrentWriterWithTruncation is the follower's main contract:
// a writer appends 10,000 events in fragments that split lines at random
// byte offsets (and often hold several lines), truncating the file to zero
// once halfway. Every event must arrive exactly once, in order, with one
// reset exactly between the two halves.
func TestFollowConcurrentWriterWithTruncation(t *testing.T) {
	const total, cut = 10000, 5000
	path := filepath.Join(t.TempDir(), TranscriptName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	ch := follow(t, path)

	halfway := make(chan struct{}) // the consumer has seen event `cut`
	stop := make(chan struct{})    // the test is over; the writer must quit
	defer close(stop)
	writerDone := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		if err := writeFragmented(f, rng, 1, cut); err != nil {
			writerDone <- err
			return
		}
		// Truncating while the follower still has unread lines would lose
		// them for real; wait until it has caught up, then cut.
		select {
		case <-halfway:
		case <-stop:
			writerDone <- errors.New("stopped before halfway")
			return
		}
		if err := f.Truncate(0); err != nil {
			writerDone <- err
			return
		}
		writerDone <- writeFragmented(f, rng, cut+1, total)
	}()

	deadline := time.After(120 * time.Second) // a liveness bound for 10,000 events under -race
	want, resets := 1, 0
	for want <= total {
		var it Item
		select {
		case it = <-ch:
		case err := <-writerDone:
			if err != nil {
				t.Fatalf("writer: %v", err)
			}
			writerDone = nil // finished; keep consuming
			continue
		case <-deadline:
			t.Fatalf("stuck waiting for event %d", want)
		}
		switch it.Kind {
		case ItemLine:
			seq := seqOf(t, it.Line)
			if seq != want {
				t.Fatalf("got event %d, want %d (resets so far %d)", seq, want, resets)
			}
			if seq > cut && resets != 1 {
				t.Fatalf("event %d arrived without the reset", seq)
			}
			if wantNum := seq - resets*cut; it.Line.Number != wantNum {
				t.Fatalf("event %d has line number %d, want %d", seq, it.Line.Number, wantNum)
			}
			if seq == cut {
				close(halfway)
			}
			want++
		case ItemReset:
			if want != cut+1 || resets != 0 {
				t.Fatalf("reset before event %d (resets so far %d), want one reset before %d", want, resets, cut+1)
			}
			resets++
		default:
			t.Fatalf("unexpected %v item: %v", it.Kind, it.Problem)
		}
	}
	// Nothing may follow the last event: no duplicate, no stray reset.
	select {
	case it := <-ch:
		t.Fatalf("unexpected item after the last event: %+v", it)
	case <-time.After(200 * time.Millisecond):
	}
}

// writeFragmented appends events from..to as one byte stream cut into
// writes of random size: most split a line, many carry several.
func writeFragmented(f *os.File, rng *rand.Rand, from, to int) error {
	var stream []byte
	for seq := from; seq <= to; seq++ {
		stream = append(stream, seqLine(seq, rng.IntN(300))...)
	}
	for len(stream) > 0 {
		n := min(len(stream), 1+rng.IntN(1500))
		if _, err := f.Write(stream[:n]); err != nil {
			return err
		}
		stream = stream[n:]
		if rng.IntN(50) == 0 {
			runtime.Gosched() // let the follower see a half-written line now and then
		}
	}
	return nil
}

func TestFollowFileCreatedAfterStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TranscriptName)
	ch := follow(t, path, noPoll)

	w, err := Create(path, WithClock(fixedClock))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	for i := 1; i <= 3; i++ {
		if err := w.Write(ToolResult{Tool: "bash", Args: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The file's appearance is not a reset: nothing came before it.
	for i := 1; i <= 3; i++ {
		expectSeq(t, ch, i, i)
	}
}

func TestFollowReplacementByRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TranscriptName)
	appendTo(t, path, seqLine(1, 0), seqLine(2, 0), seqLine(3, 0))
	ch := follow(t, path, noPoll)
	for i := 1; i <= 3; i++ {
		expectSeq(t, ch, i, i)
	}

	// A last line lands in the old file right before the new one is
	// renamed over it: it still belongs to the old content, before the reset.
	appendTo(t, path, seqLine(4, 0))
	tmp := filepath.Join(dir, ".transcript.tmp")
	appendTo(t, tmp, seqLine(101, 5), seqLine(102, 5))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	expectSeq(t, ch, 4, 4)
	expectReset(t, ch)
	expectSeq(t, ch, 101, 1)
	expectSeq(t, ch, 102, 2)

	// Appends to the new file keep flowing.
	appendTo(t, path, seqLine(103, 0))
	expectSeq(t, ch, 103, 3)
}

func TestFollowDeleteAndRecreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TranscriptName)
	appendTo(t, path, seqLine(1, 0), seqLine(2, 0))
	ch := follow(t, path, noPoll)
	expectSeq(t, ch, 1, 1)
	expectSeq(t, ch, 2, 2)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, seqLine(50, 0))
	expectReset(t, ch)
	expectSeq(t, ch, 50, 1)
}

func TestFollowDeliversPromptly(t *testing.T) {
	path := filepath.Join(t.TempDir(), TranscriptName)
	appendTo(t, path)
	ch := follow(t, path, noPoll)
	for i := 1; i <= 3; i++ {
		start := time.Now()
		appendTo(t, path, seqLine(i, 10))
		expectSeq(t, ch, i, i)
		// expectSeq already failed past the liveness bound; the log shows
		// the real latency, normally a few milliseconds.
		t.Logf("line %d delivered after %v", i, time.Since(start))
	}
}

func TestFollowHoldsPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), TranscriptName)
	appendTo(t, path)
	ch := follow(t, path, noPoll)

	second := seqLine(2, 40)
	half := len(second) / 2
	// One write holds line 1 and half of line 2. Once line 1 has arrived
	// the follower has read that half too, and must hold it back.
	appendTo(t, path, append(seqLine(1, 0), second[:half]...))
	expectSeq(t, ch, 1, 1)
	appendTo(t, path, second[half:])
	expectSeq(t, ch, 2, 2)
}

func TestFollowReportsCorruptLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), TranscriptName)
	appendTo(t, path, []byte("this is not json\n"), seqLine(2, 0))
	ch := follow(t, path, noPoll)
	it := next(t, ch)
	if it.Kind != ItemProblem || it.Problem.Kind != ProblemCorrupt || it.Problem.Line != 1 ||
		!errors.Is(it.Problem.Err, ErrCorruptLine) || it.Problem.Excerpt != "this is not json" {
		t.Fatalf("got %v item %+v, want a corrupt problem on line 1", it.Kind, it.Problem)
	}
	expectSeq(t, ch, 2, 2)
}

func TestFollowMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := Follow(t.Context(), filepath.Join(dir, "no-run", TranscriptName))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing directory: got %v, want fs.ErrNotExist", err)
	}
	notDir := filepath.Join(dir, "file")
	putFile(t, notDir, "")
	if _, err := Follow(t.Context(), filepath.Join(notDir, TranscriptName)); err == nil {
		t.Fatal("Follow under a regular file succeeded")
	}
}

func TestFollowCancelClosesChannelWithoutLeaks(t *testing.T) {
	tests := []struct {
		name string
		// run drives a follower of path over ch before it is cancelled.
		run func(t *testing.T, path string, ch <-chan Item)
	}{
		{"idle, file missing", func(t *testing.T, path string, ch <-chan Item) {}},
		{"after delivering", func(t *testing.T, path string, ch <-chan Item) {
			appendTo(t, path, seqLine(1, 0))
			expectSeq(t, ch, 1, 1)
		}},
		{"blocked on a consumer that stopped reading", func(t *testing.T, path string, ch <-chan Item) {
			var lines [][]byte
			for i := range 3 * followBuffer {
				lines = append(lines, seqLine(i+1, 0))
			}
			appendTo(t, path, lines...)
			expectSeq(t, ch, 1, 1) // the follower is running and now blocks on a full channel
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			path := filepath.Join(t.TempDir(), TranscriptName)
			ctx, cancel := context.WithCancel(t.Context())
			ch, err := Follow(ctx, path, noPoll)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			tc.run(t, path, ch)
			cancel()
			awaitClosed(t, ch)
			// The follower's goroutine and the watcher's are gone once the
			// channel is closed and Close has returned; give the runtime a
			// moment to retire them.
			deadline := time.Now().Add(liveness)
			for runtime.NumGoroutine() > before {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<16)
					t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestFollowerNoticesRewriteBeyondOffset drives the follower by hand to pin
// down the case its size check alone would miss: the file is cut and
// rewritten past the old offset between two looks.
func TestFollowerNoticesRewriteBeyondOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), TranscriptName)
	appendTo(t, path, seqLine(1, 0), seqLine(2, 0))
	f := &follower{path: path, name: TranscriptName, out: make(chan Item, 100), parser: lineParser{limit: MaxLineBytes}}
	defer func() {
		if f.file != nil {
			_ = f.file.Close()
		}
	}()
	ctx := t.Context()
	if !f.sync(ctx) {
		t.Fatal("sync stopped")
	}
	expectSeq(t, f.out, 1, 1)
	expectSeq(t, f.out, 2, 2)

	// Same inode, truncated and regrown beyond the old size.
	if err := os.WriteFile(path, append(seqLine(7, 30), seqLine(8, 30)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if !f.sync(ctx) {
		t.Fatal("sync stopped")
	}
	expectReset(t, f.out)
	expectSeq(t, f.out, 7, 1)
	expectSeq(t, f.out, 8, 2)
	if len(f.out) != 0 {
		t.Fatalf("%d extra items", len(f.out))
	}
}

func TestFollowReportsUnfinishedLineOfReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, TranscriptName)
	appendTo(t, path, seqLine(1, 0), []byte(`{"ts":"2026-`))
	ch := follow(t, path, noPoll)
	expectSeq(t, ch, 1, 1)

	tmp := filepath.Join(dir, "new")
	appendTo(t, tmp, seqLine(9, 0))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	it := next(t, ch)
	if it.Kind != ItemProblem || it.Problem.Kind != ProblemPartial || it.Problem.Line != 2 {
		t.Fatalf("got %v %+v, want the old file's partial line 2", it.Kind, it.Problem)
	}
	expectReset(t, ch)
	expectSeq(t, ch, 9, 1)
}
