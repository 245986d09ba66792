package runs

import "fmt"

// Refusal is a verb refused before it changed anything: what is wrong and
// how to fix it. The CLI exits 2 for it (the engine's PreflightError is
// this type).
type Refusal struct {
	Msg  string
	Hint string
	// Err is the refusal's cause when one was classified (a docker
	// sentinel, say), so callers can refine the hint; nil otherwise.
	Err error
}

func (e *Refusal) Error() string { return e.Msg }

// Unwrap exposes the cause.
func (e *Refusal) Unwrap() error { return e.Err }

// refuse is a Refusal with hint.
func refuse(hint, format string, args ...any) *Refusal {
	return &Refusal{Msg: fmt.Sprintf(format, args...), Hint: hint}
}
