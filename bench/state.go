package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A sweep keeps its state beside its results file while it runs
// (StatePath): how many cases it has, how many were scored before it
// started (a resumed sweep), and which cases are in flight. Mission
// control's bench view shows a sweep's progress from it. The sweep holds
// an exclusive flock on the file for as long as it runs, which the kernel
// drops however the sweep ends, so a reader tells a running sweep from a
// killed one without trusting a pid that may have been reused.

// StatePath is where the sweep writing the results file at results keeps
// its state: beside it, hidden (.<name>.sweep).
func StatePath(results string) string {
	dir, name := filepath.Split(results)
	return filepath.Join(dir, "."+name+stateSuffix)
}

const stateSuffix = ".sweep"

// SweepState is what a sweep says of itself while it runs.
type SweepState struct {
	Stamp   string    `json:"stamp"`
	Started time.Time `json:"started"`
	// Total counts every case of the sweep; Skipped the cases already
	// scored when it started.
	Total   int `json:"total"`
	Skipped int `json:"skipped"`
	// Scratch is the directory the sweep stages its repositories in; a
	// resumed sweep removes a killed one's.
	Scratch string `json:"scratch,omitempty"`
	// InFlight are the cases being run or scored, in the order they
	// started.
	InFlight []Flight `json:"in_flight"`
	// Ended is when the sweep ended, done or cancelled; nil while it runs,
	// and for a sweep that was killed.
	Ended *time.Time `json:"ended,omitempty"`
}

// Flight is a case in flight.
type Flight struct {
	Model   string    `json:"model"`
	Task    string    `json:"task"`
	Repeat  int       `json:"repeat"`
	Started time.Time `json:"started"`
	// Slug names the case's run once it started (the latest fix round's).
	Slug string `json:"slug,omitempty"`
	// DockerHost is the engine the case runs on ("" the environment's);
	// Repo the temporary repository it was staged in. A resumed sweep
	// reaps what a killed one left with them.
	DockerHost string `json:"docker_host,omitempty"`
	Repo       string `json:"repo,omitempty"`
}

// stateLimit bounds how much of a state file is read: a sweep's state
// is a few kilobytes.
const stateLimit = 1 << 20

// ReadState reads the state of the sweep writing the results file at
// results, and reports whether that sweep is still running. Without a
// state file the error matches fs.ErrNotExist. A state file caught while
// the sweep rewrites it reads as not JSON: read it again on its next
// change.
func ReadState(results string) (SweepState, bool, error) {
	path := StatePath(results)
	// O_NONBLOCK: a FIFO planted at path must not hang the reader; it is
	// refused below.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return SweepState{}, false, fmt.Errorf("open sweep state: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return SweepState{}, false, fmt.Errorf("sweep state %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, stateLimit))
	if err != nil {
		return SweepState{}, false, fmt.Errorf("read sweep state %s: %w", path, err)
	}
	var st SweepState
	if err := json.Unmarshal(data, &st); err != nil {
		return SweepState{}, false, fmt.Errorf("read sweep state %s: %w", path, err)
	}
	return st, heldByOther(f), nil
}

// heldByOther reports whether another process holds f's exclusive lock:
// a shared lock cannot be had then. The probe's own lock is let go at
// once.
func heldByOther(f *os.File) bool {
	err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN) // closing the file would drop it too
	return false
}

// lockGrace is how long a sweep retries the state file's lock: a reader
// probing it holds a shared lock for an instant.
const lockGrace = 250 * time.Millisecond

// sweepState is the sweep's side of its state file: every change
// rewrites the file. A nil *sweepState does nothing: a sweep whose state
// file cannot be made (another sweep holds it, the directory refuses it)
// goes on without one.
type sweepState struct {
	mu      sync.Mutex
	f       *os.File
	now     func() time.Time
	st      SweepState
	flights []*Flight
}

// openSweepState creates or takes over the state file of the results file
// at results and locks it for the sweep's life.
func openSweepState(results, stamp, scratch string, now func() time.Time) *sweepState {
	f, err := os.OpenFile(StatePath(results), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, resultsFileMode)
	if err != nil {
		return nil
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		_ = f.Close() // not ours to write
		return nil
	}
	deadline := time.Now().Add(lockGrace)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close() // nothing was written
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &sweepState{f: f, now: now, st: SweepState{Stamp: stamp, Started: now().UTC(), Scratch: scratch}}
}

func (s *sweepState) start(total, skipped int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Total, s.st.Skipped = total, skipped
	s.writeLocked()
}

func (s *sweepState) caseStarted(c benchCase, dockerHost string) *Flight {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &Flight{Model: c.model.Model, Task: c.task, Repeat: c.repeat, Started: s.now().UTC(), DockerHost: dockerHost}
	s.flights = append(s.flights, f)
	s.writeLocked()
	return f
}

// follow names the case's run once it started.
func (s *sweepState) follow(f *Flight, slug, runDir string) {
	if s == nil || f == nil {
		return
	}
	if slug == "" && runDir != "" {
		slug = filepath.Base(runDir)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Slug = slug
	s.writeLocked()
}

// staged records the case's temporary repository.
func (s *sweepState) staged(f *Flight, repo string) {
	if s == nil || f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Repo = repo
	s.writeLocked()
}

func (s *sweepState) caseEnded(f *Flight) {
	if s == nil || f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flights = slices.DeleteFunc(s.flights, func(g *Flight) bool { return g == f })
	s.writeLocked()
}

// finish records the end and lets the lock go.
func (s *sweepState) finish() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flights = nil
	end := s.now().UTC()
	s.st.Ended = &end
	s.writeLocked()
	_ = s.f.Close() // the state is written; closing drops the lock
}

// writeLocked rewrites the file in place (a rename would leave the lock
// on the old file). A failed write is dropped: the state only informs.
func (s *sweepState) writeLocked() {
	s.st.InFlight = make([]Flight, len(s.flights))
	for i, f := range s.flights {
		s.st.InFlight[i] = *f
	}
	data, err := json.Marshal(s.st)
	if err != nil {
		return
	}
	if s.f.Truncate(0) == nil {
		_, _ = s.f.WriteAt(append(data, '\n'), 0)
	}
}

// NewestResults is the newest results file in dir, the bench root: the
// greatest name, names being UTC stamps, among the *.jsonl files and the
// results files whose sweep has written its state but no row yet. None
// gives an error matching fs.ErrNotExist.
func NewestResults(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("list results files: %w", err)
	}
	newest := ""
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.HasSuffix(name, stateSuffix) {
			name = strings.TrimSuffix(strings.TrimPrefix(name, "."), stateSuffix)
		} else if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		if strings.HasSuffix(name, ".jsonl") && name > newest {
			newest = name
		}
	}
	if newest == "" {
		return "", fmt.Errorf("no results file in %s: %w", dir, fs.ErrNotExist)
	}
	return filepath.Join(dir, newest), nil
}
