package engine

import (
	"sync"

	"github.com/dirtywork/dirtywork/transcript"
)

// sandboxEvents receives what a docker sandbox reports on its own: resets
// (from the loop or the watchdog's goroutine) and the --setup result. The
// workspace opens before the transcript exists, and run_start must stay the
// first line, so events are held until attach and written through after.
type sandboxEvents struct {
	mu      sync.Mutex
	tw      *transcript.Writer
	pending []transcript.Event
	setup   *transcript.Setup
}

// reset records a sandbox_reset event.
func (s *sandboxEvents) reset(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := transcript.SandboxReset{Reason: reason}
	if s.tw == nil {
		s.pending = append(s.pending, ev)
		return
	}
	_ = s.tw.Write(ev) // a lost event must not end the run; run_end still tells the outcome
}

// setupDone records the --setup command's result: a setup event (held
// until run_start is written, since setup runs before it) and run_end's
// setup field.
func (s *sandboxEvents) setupDone(command string, exitCode *int, output string, seconds float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setup = &transcript.Setup{Command: command, ExitCode: exitCode, Output: output, DurationS: transcript.Float(seconds)}
	if s.tw == nil {
		s.pending = append(s.pending, *s.setup)
		return
	}
	_ = s.tw.Write(*s.setup) // a lost event must not end the run; run_end repeats it
}

// attach writes the held events to tw, which already holds run_start, and
// every later one as it comes.
func (s *sandboxEvents) attach(tw *transcript.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.pending {
		_ = tw.Write(ev)
	}
	s.pending = nil
	s.tw = tw
}

// setupRecord is the --setup result, nil when no setup command ran.
func (s *sandboxEvents) setupRecord() *transcript.Setup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setup
}
