package bench

import (
	"context"
	"sync"
)

// scheduler hands out a sweep's cases to its workers: at most parallel in
// flight in all, never more against one server than its slots, none
// against a paused server, each pinned to the least busy docker engine.
// Cases start in the order given, except that a case whose server is full
// or paused lets the next one of another server go first.
type scheduler[C any] struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever a slot frees or a server resumes
	parallel int
	inFlight int
	queue    []queued[C]
	servers  map[string]*serverSlots
	hosts    []int // cases in flight per engine, by index into the sweep's hosts
	closed   bool
}

type queued[C any] struct {
	c      C
	server string
}

// serverSlots is one model server's share of the sweep.
type serverSlots struct {
	slots, inFlight, maxSeen int
	paused                   bool
}

// newScheduler returns a scheduler over hosts docker engines (at least
// one) with slots per server key.
func newScheduler[C any](parallel, hosts int, slots map[string]int) *scheduler[C] {
	s := &scheduler[C]{
		changed: make(chan struct{}), parallel: max(1, parallel),
		servers: map[string]*serverSlots{}, hosts: make([]int, max(1, hosts)),
	}
	for key, n := range slots {
		s.servers[key] = &serverSlots{slots: max(1, n)}
	}
	return s
}

// add queues c against server; front puts it before every waiting case
// (a retry goes first).
func (s *scheduler[C]) add(c C, server string, front bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.servers[server]; !ok {
		s.servers[server] = &serverSlots{slots: 1}
	}
	q := queued[C]{c: c, server: server}
	if front {
		s.queue = append([]queued[C]{q}, s.queue...)
	} else {
		s.queue = append(s.queue, q)
	}
	s.signalLocked()
}

// close says no more cases will be added: next returns false once the
// queue is empty and nothing is in flight that could add a retry.
func (s *scheduler[C]) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.signalLocked()
}

// next blocks until a case may start and returns it with its engine's
// index; ok is false when the sweep is over or ctx is done.
func (s *scheduler[C]) next(ctx context.Context) (c C, host int, ok bool) {
	for {
		s.mu.Lock()
		if i := s.startableLocked(); i >= 0 {
			q := s.queue[i]
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			srv := s.servers[q.server]
			srv.inFlight++
			srv.maxSeen = max(srv.maxSeen, srv.inFlight)
			s.inFlight++
			host = s.leastBusyHostLocked()
			s.hosts[host]++
			s.mu.Unlock()
			return q.c, host, true
		}
		if s.closed && len(s.queue) == 0 && s.inFlight == 0 {
			s.mu.Unlock()
			return c, 0, false
		}
		wait := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return c, 0, false
		case <-wait:
		}
	}
}

// done returns a finished case's slots.
func (s *scheduler[C]) done(server string, host int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers[server].inFlight--
	s.inFlight--
	s.hosts[host]--
	s.signalLocked()
}

// pause stops new cases against server (it is being probed); its queue
// waits while the other servers' go on.
func (s *scheduler[C]) pause(server string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv, ok := s.servers[server]; ok {
		srv.paused = true
	}
}

// resume lets server's cases start again.
func (s *scheduler[C]) resume(server string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv, ok := s.servers[server]; ok {
		srv.paused = false
	}
	s.signalLocked()
}

// maxInFlight is the most cases ever in flight at once against server.
func (s *scheduler[C]) maxInFlight(server string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv, ok := s.servers[server]; ok {
		return srv.maxSeen
	}
	return 0
}

func (s *scheduler[C]) startableLocked() int {
	if s.inFlight >= s.parallel {
		return -1
	}
	for i, q := range s.queue {
		srv := s.servers[q.server]
		if !srv.paused && srv.inFlight < srv.slots {
			return i
		}
	}
	return -1
}

func (s *scheduler[C]) leastBusyHostLocked() int {
	best := 0
	for i, n := range s.hosts {
		if n < s.hosts[best] {
			best = i
		}
	}
	return best
}

func (s *scheduler[C]) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
