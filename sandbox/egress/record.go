package egress

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/dirtywork/dirtywork/transcript"
)

// LogName is the decisions' log in the run dir.
const LogName = "egress.log"

// Bounds of what a Recorder keeps: a worker that asks a million times
// fills neither the disk nor run.json.
const (
	// MaxLogBytes caps egress.log; past it decisions are counted only.
	MaxLogBytes = 16 << 20
	// MaxRefusedHosts caps the summary's list of refused hosts.
	MaxRefusedHosts = 100
)

// Recorder writes decisions as JSON lines to a log and keeps their
// counts. Its methods may be called from many goroutines.
type Recorder struct {
	mu           sync.Mutex
	path         string
	f            *os.File
	written      int64
	truncated    bool
	sum          transcript.Egress
	refusedSeen  map[string]bool
	writeFailure error
}

// OpenRecorder creates (or appends to: a resumed run has its own run
// dir, a docker setup and worker share one) the log at path.
func OpenRecorder(path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the egress log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open the egress log: %w", err)
	}
	return &Recorder{
		path: path, f: f, written: fi.Size(), refusedSeen: map[string]bool{},
		sum: transcript.Egress{Log: path, RefusedHosts: []string{}},
	}, nil
}

// Record logs d and counts it.
func (r *Recorder) Record(d Decision) {
	line, err := json.Marshal(d)
	if err != nil {
		return // a Decision always marshals
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	switch d.Decision {
	case Allowed:
		r.sum.Allowed++
	case Refused:
		r.sum.Refused++
		key := d.Host + ":" + strconv.Itoa(d.Port)
		if !r.refusedSeen[key] && len(r.sum.RefusedHosts) < MaxRefusedHosts {
			r.refusedSeen[key] = true
			r.sum.RefusedHosts = append(r.sum.RefusedHosts, key)
		}
	case Failed:
		r.sum.Failed++
	}
	if r.f == nil || r.truncated {
		return
	}
	if r.written+int64(len(line)) > MaxLogBytes {
		r.truncated = true
		return
	}
	n, err := r.f.Write(line)
	r.written += int64(n)
	if err != nil && r.writeFailure == nil {
		r.writeFailure = err
	}
}

// Summary is what was counted so far, for run_end and run.json.
func (r *Recorder) Summary() transcript.Egress {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sum
	s.RefusedHosts = append([]string{}, r.sum.RefusedHosts...)
	s.LogTruncated = r.truncated
	return s
}

// Close closes the log; the summary stays. It returns the first write
// error, if any.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return r.writeFailure
	}
	err := r.f.Close()
	r.f = nil
	if r.writeFailure != nil {
		return fmt.Errorf("write the egress log: %w", r.writeFailure)
	}
	return err
}
