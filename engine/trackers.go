package engine

import (
	"fmt"

	"github.com/dirtywork/dirtywork/engine/policy"
	"github.com/dirtywork/dirtywork/transcript"
)

// Failure kinds the failure tracker counts (E-47).
const (
	kindMalformedEntry = "malformed_entry"
	kindMalformedArgs  = "malformed_args"
	kindUnknownTool    = "unknown_tool"
	kindBadArgs        = "bad_args"
	kindEmptyReply     = "empty_reply"
)

// failureTracker aborts a run whose model keeps failing to use the tools:
// three failures of one kind, or six of any kinds, with no call that ran
// cleanly in between.
type failureTracker struct {
	byKind map[string]int
	total  int
}

func newFailureTracker() *failureTracker { return &failureTracker{byKind: map[string]int{}} }

// record counts one failure and returns the abort message when a
// threshold is reached ("" otherwise). The per-kind threshold is checked
// first.
func (f *failureTracker) record(kind string) string {
	switch kind {
	case kindMalformedEntry, kindMalformedArgs, kindUnknownTool, kindBadArgs, kindEmptyReply:
	default:
		panic("engine: unknown failure kind " + kind) // a programming error, never input
	}
	f.byKind[kind]++
	f.total++
	if f.byKind[kind] >= 3 {
		return fmt.Sprintf("aborted after 3 consecutive %s failures", kind)
	}
	if f.total >= 6 {
		return "aborted after 6 consecutive tool failures"
	}
	return ""
}

// reset forgets every failure: a call ran without one.
func (f *failureTracker) reset() {
	clear(f.byKind)
	f.total = 0
}

// stallTracker ends a run that makes no progress for n turns (E-48): no
// file changed, no call never seen before, no bash output never seen
// before. Halfway it nudges once per idle streak.
type stallTracker struct {
	n       int
	idle    int
	nudged  bool
	seen    map[string]bool
	turnHit bool
}

func newStallTracker(n int) *stallTracker { return &stallTracker{n: n, seen: map[string]bool{}} }

func (s *stallTracker) enabled() bool { return s.n > 0 }

// observe feeds one executed call. canonical is the call's canonical
// arguments; fingerprint is set for bash.
func (s *stallTracker) observe(tool, canonical, result string, mutated bool, fingerprint string) {
	if len(result) >= 5 && result[:5] == "ERROR" {
		return
	}
	key := tool + "\x00" + canonical
	progress := mutated || !s.seen[key]
	s.seen[key] = true
	if fingerprint != "" {
		fk := "bash\x00" + fingerprint
		if !s.seen[fk] {
			progress = true
		}
		s.seen[fk] = true
	}
	if progress {
		s.turnHit = true
	}
}

// endTurn closes a turn. It returns stalled when the idle streak reached
// n, and nudge when this turn is the streak's halfway point.
func (s *stallTracker) endTurn() (stalled, nudge bool) {
	hit := s.turnHit
	s.turnHit = false
	if !s.enabled() {
		return false, false
	}
	if hit {
		s.idle = 0
		s.nudged = false
		return false, false
	}
	s.idle++
	if s.idle >= s.n {
		return true, false
	}
	if s.n >= 2 && s.idle == s.n/2 && !s.nudged {
		s.nudged = true
		return false, true
	}
	return false, false
}

// repeatTracker notices the same failing bash command with the same
// output over and over (E-51).
type repeatTracker struct {
	limit       int
	command     string
	fingerprint [32]byte
	output      string
	repeats     int
	latched     *transcript.StuckOn
}

func newRepeatTracker(limit int) *repeatTracker { return &repeatTracker{limit: limit} }

// observe feeds one bash call with its raw command and result.
func (r *repeatTracker) observe(command, result string) {
	if r.limit <= 0 {
		return
	}
	if code, ok := policy.ExitCode(result); ok && code == 0 {
		if command == r.command {
			r.resetStreak()
		}
		return
	}
	fp := policy.Fingerprint(command, result)
	if r.repeats > 0 && fp == r.fingerprint {
		r.repeats++
	} else {
		r.repeats, r.fingerprint, r.command, r.output = 1, fp, command, result
	}
	if r.repeats >= r.limit && r.latched == nil {
		r.latched = &transcript.StuckOn{Command: r.command, Output: firstRunes(r.output, 4000), Repeats: r.repeats}
	}
}

func (r *repeatTracker) resetStreak() {
	r.repeats, r.command, r.output, r.fingerprint = 0, "", "", [32]byte{}
}

// clear drops the latch and the streak (a verify round failed: the model
// gets a fresh start on the commands it runs to fix it).
func (r *repeatTracker) clear() {
	r.resetStreak()
	r.latched = nil
}
