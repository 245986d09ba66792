package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// runScheduled drains s with workers goroutines; each case calls work
// while it holds its slots.
func runScheduled(t *testing.T, s *scheduler[string], workers int, work func(c string, host int)) {
	t.Helper()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, host, ok := s.next(t.Context())
				if !ok {
					return
				}
				work(c, host)
				s.done(serverOf(c), host)
			}
		}()
	}
	wg.Wait()
}

func serverOf(c string) string { return c[:1] }

func TestSchedulerKeepsEveryServerWithinItsSlots(t *testing.T) {
	t.Parallel()
	s := newScheduler[string](8, 2, map[string]int{"a": 4, "b": 2})
	for i := range 12 {
		s.add(fmt.Sprintf("a%d", i), "a", false)
		s.add(fmt.Sprintf("b%d", i), "b", false)
	}
	s.close()
	var mu sync.Mutex
	inFlight := map[string]int{}
	hosts := map[int]int{}
	peak := 0
	started := 0
	// Every case waits until enough others started to fill the sweep's
	// slots, so the limits are tested at their edge, not by luck.
	release := make(chan struct{})
	runScheduled(t, s, 10, func(c string, host int) {
		mu.Lock()
		inFlight[serverOf(c)]++
		hosts[host]++
		total := inFlight["a"] + inFlight["b"]
		peak = max(peak, total)
		if inFlight["a"] > 4 || inFlight["b"] > 2 || total > 8 {
			t.Errorf("in flight %v", inFlight)
		}
		started++
		if started == 6 {
			close(release)
		}
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight[serverOf(c)]--
		mu.Unlock()
	})
	if started != 24 || peak != 6 {
		t.Fatalf("started %d, peak %d (want 24 and 4+2)", started, peak)
	}
	if s.maxInFlight("a") != 4 || s.maxInFlight("b") != 2 {
		t.Fatalf("max in flight a=%d b=%d", s.maxInFlight("a"), s.maxInFlight("b"))
	}
	if hosts[0] == 0 || hosts[1] == 0 {
		t.Fatalf("cases per engine %v: both engines should be used", hosts)
	}
}

// A paused server's cases wait; the other server's go on, and the paused
// ones start once it resumes.
func TestSchedulerPausesOneServer(t *testing.T) {
	t.Parallel()
	s := newScheduler[string](2, 1, map[string]int{"a": 1, "b": 1})
	s.pause("a")
	s.add("a0", "a", false)
	s.add("b0", "b", false)
	s.add("b1", "b", false)
	c, host, ok := s.next(t.Context())
	if !ok || c != "b0" {
		t.Fatalf("first case %q %v, want b0 while a is paused", c, ok)
	}
	s.done("b", host)
	if c, host, ok = s.next(t.Context()); !ok || c != "b1" {
		t.Fatalf("second case %q, want b1", c)
	}
	s.done("b", host)
	s.resume("a")
	s.add("a1", "a", true) // a retry goes first
	s.close()
	var order []string
	for {
		c, host, ok := s.next(t.Context())
		if !ok {
			break
		}
		order = append(order, c)
		s.done(serverOf(c), host)
	}
	if fmt.Sprint(order) != "[a1 a0]" {
		t.Fatalf("after resume: %v", order)
	}
}

func TestSchedulerNextEndsWithItsContext(t *testing.T) {
	t.Parallel()
	s := newScheduler[string](1, 1, nil)
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan bool)
	go func() {
		_, _, ok := s.next(ctx)
		got <- ok
	}()
	cancel()
	if <-got {
		t.Fatal("next returned a case from an empty open queue")
	}
}
