package workspace

import (
	"errors"

	"github.com/dirtywork/dirtywork/sandbox"
)

// Kinds of watchdog violation (watchdog_violation_kind).
const (
	kindBudget  = "budget"
	kindSandbox = "sandbox_error"
)

// violation is what stopped the run from outside the loop: a budget breach
// or a failure of the watchdog itself.
type violation struct {
	Reason, Kind string
}

// err is the violation as the run's end.
func (v *violation) err() error {
	if v.Kind == kindSandbox {
		return &sandbox.SandboxError{Op: "watchdog", Err: errors.New(v.Reason)}
	}
	return &sandbox.BudgetError{Reason: v.Reason}
}

// recordViolation keeps the first violation (a later budget breach
// replaces a watchdog failure, W-4) and kills the container, so whatever
// runs in it stops now; the call in flight then fails and reports it.
func (w *Workspace) recordViolation(reason, kind string) *violation {
	w.mu.Lock()
	if w.violation == nil || (kind == kindBudget && w.violation.Kind != kindBudget) {
		w.violation = &violation{Reason: reason, Kind: kind}
	}
	v, s := w.violation, w.sess
	w.mu.Unlock()
	if s != nil {
		ctx, cancel := cleanupContext()
		defer cancel()
		_ = w.eng.KillContainer(ctx, s.id) // the export reads the volume either way
	}
	return v
}

// currentViolation is the recorded violation, or nil.
func (w *Workspace) currentViolation() *violation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.violation
}
