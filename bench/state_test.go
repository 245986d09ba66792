package bench

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine"
	"github.com/dirtywork/dirtywork/transcript"
)

// While a sweep runs, its state file names its cases and those in flight
// and reads as held; once it returns, as ended and let go.
func TestSweepStateWhileRunning(t *testing.T) {
	t.Parallel()
	f := newFakeBench(t)
	f.outcome = func(string, string, int) (transcript.Status, string) { return transcript.StatusCompleted, "" }
	f.pass = func(string) bool { return true }
	out := filepath.Join(t.TempDir(), "results.jsonl")
	s := f.sweep(out, []ModelSpec{{Model: "m", Slots: 2}}, []string{"a", "b"}, 2)
	// Both slots' cases wait inside their runs until the state is read.
	inside := make(chan struct{}, 4)
	release := make(chan struct{})
	run := s.RunCase
	s.RunCase = func(ctx context.Context, spec engine.Spec, log io.Writer, hooks CaseHooks) (*engine.Payload, error) {
		p, err := run(ctx, spec, log, hooks)
		inside <- struct{}{}
		<-release
		return p, err
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(t.Context())
		done <- err
	}()
	<-inside
	<-inside
	st, alive, err := ReadState(out)
	if err != nil || !alive {
		t.Fatalf("state of a running sweep: alive %v, %v", alive, err)
	}
	if st.Total != 4 || st.Skipped != 0 || st.Stamp != "20261202T000000Z" || st.Ended != nil || len(st.InFlight) != 2 {
		t.Fatalf("state %+v", st)
	}
	for _, fl := range st.InFlight {
		if fl.Model != "m" || fl.Slug == "" || fl.Started.IsZero() {
			t.Errorf("flight %+v", fl)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, alive, err = ReadState(out)
	if err != nil || alive || st.Ended == nil || len(st.InFlight) != 0 || st.Total != 4 {
		t.Fatalf("state of a finished sweep: %+v alive %v %v", st, alive, err)
	}
}

// A sweep killed mid-run leaves its state unended and no longer held; a
// second writer of one results file gets no state file of its own.
func TestSweepStateOfAKilledSweep(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.jsonl")
	if _, _, err := ReadState(out); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no state: %v", err)
	}
	now := func() time.Time { return time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC) }
	s := openSweepState(out, "st", "", now)
	if s == nil {
		t.Fatal("no state file")
	}
	if other := openSweepState(out, "st", "", now); other != nil {
		t.Fatal("a second sweep took the state file of a running one")
	}
	s.start(6, 2)
	fl := s.caseStarted(benchCase{model: ModelSpec{Model: "m"}, task: "t", repeat: 1}, "")
	s.follow(fl, "", "/runs/t-1202130000-abcd")
	// Killed: the kernel drops the lock, nothing more is written.
	killState(t, s, out)
	st, alive, err := ReadState(out)
	if err != nil || alive || st.Ended != nil {
		t.Fatalf("killed sweep: %+v alive %v %v", st, alive, err)
	}
	want := []Flight{{Model: "m", Task: "t", Repeat: 1, Started: now(), Slug: "t-1202130000-abcd"}}
	if !reflect.DeepEqual(st.InFlight, want) || st.Total != 6 || st.Skipped != 2 {
		t.Fatalf("state %+v", st)
	}
	if info, err := os.Stat(StatePath(out)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode: %v %v", info, err)
	}
}

func TestNewestResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := NewestResults(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("empty dir: %v", err)
	}
	for _, name := range []string{"20261201T100000Z.jsonl", "20261202T100000Z.jsonl", "notes.txt", ".hidden.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "20261209T000000Z.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got, err := NewestResults(dir); err != nil || got != filepath.Join(dir, "20261202T100000Z.jsonl") {
		t.Fatalf("newest = %q, %v", got, err)
	}
	// A sweep that has written its state but no row yet is the newest.
	started := filepath.Join(dir, "20261203T100000Z.jsonl")
	if err := os.WriteFile(StatePath(started), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := NewestResults(dir); err != nil || got != started {
		t.Fatalf("newest = %q, %v", got, err)
	}
}

func TestParseLinesNumbersFromFirst(t *testing.T) {
	t.Parallel()
	rows, problems := ParseLines([]byte("{\"model\":\"a\"}\n\nnot json\n  {\"model\":\"b\"}  "), 41)
	if len(rows) != 2 || rows[0].Line != 41 || rows[0].Model != "a" || rows[1].Line != 44 || rows[1].Model != "b" {
		t.Fatalf("rows %+v", rows)
	}
	if len(problems) != 1 || problems[0].Line != 43 {
		t.Fatalf("problems %+v", problems)
	}
}

// GroupRows is summarize's groups, each with the rows it counted.
func TestGroupRowsAreSummarizesGroups(t *testing.T) {
	t.Parallel()
	res, err := ReadResults(filepath.Join("testdata", "ours.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	groups := GroupRows(res.Rows, nil)
	want := Summarize(res, nil, nil).A.Groups
	if len(groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(groups), len(want))
	}
	seen := map[int]bool{}
	for i, g := range groups {
		if !reflect.DeepEqual(g.GroupStats, want[i]) {
			t.Errorf("group %d = %+v\nwant %+v", i, g.GroupStats, want[i])
		}
		if len(g.Rows) != g.Runs {
			t.Errorf("group %s holds %d rows, counts %d", g.Label, len(g.Rows), g.Runs)
		}
		for _, r := range g.Rows {
			if seen[r] || res.Rows[r].Model != g.Model {
				t.Errorf("row %d in group %s", r, g.Label)
			}
			seen[r] = true
		}
	}
	if len(seen) != len(res.Rows) {
		t.Fatalf("%d of %d rows grouped", len(seen), len(res.Rows))
	}
}

// killState closes the state file as a killed sweep's process would and
// waits for its lock to go: a child another test is forking at that
// moment holds the open file (and so the lock) until it execs.
func killState(t *testing.T, s *sweepState, results string) {
	t.Helper()
	_ = s.f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, alive, err := ReadState(results)
		if err == nil && !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the state file is still locked 10 s after its sweep was killed (%v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
