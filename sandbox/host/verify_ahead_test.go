package host

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingJailer counts the jails it starts and ends.
type countingJailer struct {
	inner jailer
	mu    sync.Mutex
	procs []*countedProc
}

type countedProc struct {
	jailProc
	mu     sync.Mutex
	waited bool
}

func (p *countedProc) Wait() error {
	err := p.jailProc.Wait()
	p.mu.Lock()
	p.waited = true
	p.mu.Unlock()
	return err
}

func (j *countingJailer) Start(ctx context.Context, spec jailSpec) (jailProc, error) {
	proc, err := j.inner.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	cp := &countedProc{jailProc: proc}
	j.mu.Lock()
	j.procs = append(j.procs, cp)
	j.mu.Unlock()
	return cp, nil
}

func (j *countingJailer) started() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.procs)
}

// aheadReady waits until the verify jail being made ahead is up, and
// returns its session's directory.
func aheadReady(t *testing.T, w *Workspace) string {
	t.Helper()
	w.mu.Lock()
	ahead := w.verifyNext
	w.mu.Unlock()
	if ahead == nil {
		t.Fatal("no verify jail is being made ahead")
	}
	select {
	case <-ahead.done:
	case <-time.After(time.Minute):
		t.Fatal("the verify jail made ahead was not up within a minute")
	}
	if ahead.err != nil {
		t.Fatalf("making the verify jail ahead: %v", ahead.err)
	}
	return ahead.vj.sess.dir
}

// The verify jail is made while the worker works, out of the worker's
// sight, and the verify takes it: no jail is started when the verify
// begins. A failed verify has the next round's made meanwhile; a passed
// one, or the finalize, stops that; every jail ends with the workspace.
func TestVerifyTakesAJailMadeAhead(t *testing.T) {
	t.Parallel()
	cj := &countingJailer{inner: testJailer()}
	cfg := newTestRepo(t).config()
	cfg.jailer = cj
	w := open(t, cfg)
	w.PrepareVerify()
	sessDir := aheadReady(t, w)
	if n := cj.started(); n != 2 {
		t.Fatalf("%d jails started; want the worker's and the verify's", n)
	}
	if _, plain := w.jailer.(childJailer); !plain {
		if out := bash(t, w, "test -e "+sessDir+" && echo visible || echo hidden").Output; strings.TrimSpace(out) != "hidden" {
			t.Fatalf("the worker sees the verify session made ahead: %q", out)
		}
	}
	bash(t, w, "echo made > by-worker.txt")

	run, err := w.Verify(t.Context(), "test -f by-worker.txt && test -z \"$(ls -A $HOME)\" && echo judged", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if run.ExitCode != 0 || strings.TrimSpace(run.Output) != "judged" {
		t.Fatalf("verify in the jail made ahead: exit %d %q", run.ExitCode, run.Output)
	}
	if n := cj.started(); n != 2 {
		t.Fatalf("%d jails started: the verify started its own instead of taking the one made ahead", n)
	}
	w.mu.Lock()
	next := w.verifyNext
	w.mu.Unlock()
	if next != nil {
		t.Fatal("a passed verify had another jail made")
	}

	// A failed round: the next round's jail is made meanwhile, and taken.
	w.PrepareVerify()
	aheadReady(t, w)
	if run, err := w.Verify(t.Context(), "exit 3", 30*time.Second); err != nil || run.ExitCode != 3 {
		t.Fatalf("failing verify: %+v %v", run, err)
	}
	aheadReady(t, w)
	before := cj.started()
	if run, err := w.Verify(t.Context(), "true", 30*time.Second); err != nil || run.ExitCode != 0 {
		t.Fatalf("second round: %+v %v", run, err)
	}
	if cj.started() != before {
		t.Fatal("the second round did not take the jail made for it")
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cj.mu.Lock()
	defer cj.mu.Unlock()
	for i, p := range cj.procs {
		p.mu.Lock()
		waited := p.waited
		p.mu.Unlock()
		if !waited {
			t.Errorf("jail %d still runs after Close", i)
		}
	}
}

// A jail made ahead that no verify takes ends with the finalize.
func TestFinalizeEndsTheVerifyJailMadeAhead(t *testing.T) {
	t.Parallel()
	cj := &countingJailer{inner: testJailer()}
	cfg := newTestRepo(t).config()
	cfg.jailer = cj
	w := open(t, cfg)
	w.PrepareVerify()
	aheadReady(t, w)
	if _, err := w.Finalize(t.Context()); err != nil {
		t.Fatal(err)
	}
	cj.mu.Lock()
	verify := cj.procs[1]
	cj.mu.Unlock()
	verify.mu.Lock()
	defer verify.mu.Unlock()
	if !verify.waited {
		t.Fatal("the verify jail made ahead outlived the finalize")
	}
}
