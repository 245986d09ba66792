package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Off a terminal the progress is B-4's line per scored case and the notes,
// nothing else; worker-chosen text in them is made inert.
func TestProgressPlainLines(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := NewProgress(&out, false)
	p.start(3, 1)
	f := p.caseStarted(benchCase{model: ModelSpec{Model: "m\x1b[31m"}, task: "t", repeat: 0})
	p.note("m  t  repeat 0: server failure, retrying once (x)")
	p.caseEnded(f)
	p.caseDone(Row{Model: "m\x1b[31m", Task: "t", Repeat: 0, Status: "completed", Acceptance: AcceptancePass})
	p.finish()
	want := "resuming: 1 of 3 cases already scored\n" +
		"m  t  repeat 0: server failure, retrying once (x)\n" +
		"m␛[31m  t  repeat 0: completed / acceptance pass\n"
	if out.String() != want {
		t.Fatalf("progress:\n%q\nwant\n%q", out.String(), want)
	}
}

// On a terminal a frame follows the lines: the bar (done of all, passes,
// elapsed, estimate) and a line per case in flight, in the order they
// started, with the turn its transcript reached; each new frame first
// erases the last.
func TestProgressFrameOnATerminal(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := NewProgress(&out, true)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC).UnixNano())
	p.now = func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	// As start sets it, without the once-a-second redraw (a loaded
	// machine would slip one in between the lines checked here).
	p.total, p.began = 4, p.now()
	tr := filepath.Join(t.TempDir(), "transcript.jsonl")
	if err := os.WriteFile(tr, []byte(`{"event":"model_request","turn":1}`+"\n"+`{"turn":3,"event":"model_request"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := p.caseStarted(benchCase{model: ModelSpec{Model: "alpha"}, task: "t1", repeat: 0})
	b := p.caseStarted(benchCase{model: ModelSpec{Model: "beta"}, task: "t2", repeat: 1})
	p.follow(a, tr)
	clock.Add(int64(20 * time.Second))
	p.caseEnded(b)
	p.caseDone(Row{Model: "beta", Task: "t2", Repeat: 1, Status: "completed", Acceptance: AcceptancePass})
	got := out.String()
	frame := "[######..................] 1/4 cases  1 passed  elapsed 20s  eta 1m0s\n  alpha  t1  repeat 0  turn 3\n"
	if !strings.HasSuffix(got, "beta  t2  repeat 1: completed / acceptance pass\n"+frame) {
		t.Fatalf("last frame:\n%q", got)
	}
	if strings.Contains(got, "beta  t2  repeat 1  turn") {
		t.Fatalf("an ended case is still in flight:\n%q", got)
	}
	p.note("a note")
	if !strings.Contains(out.String(), frame+"\x1b[2A\x1b[Ja note\n") {
		t.Fatalf("the frame was not erased before the note:\n%q", out.String())
	}
}
