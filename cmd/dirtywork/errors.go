package main

import (
	"errors"
	"fmt"
)

// Exit codes of every dirtywork command. They are part of the machine
// contract: orchestrators branch on them.
const (
	// ExitOK means the command succeeded (for run: status completed).
	ExitOK = 0
	// ExitRunNotCompleted means a run ended in a status other than completed.
	ExitRunNotCompleted = 1
	// ExitUsage covers usage, preflight and environment errors; nothing
	// was created.
	ExitUsage = 2
)

// exitError carries an explicit exit code out of a command. Msg, when
// non-empty, is printed as "error: <msg>"; Hint follows on its own line.
type exitError struct {
	Code int
	Err  error
	Hint string
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// usageErrorf reports a usage, preflight or environment error (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// withHint wraps err as an exit-2 error that prints hint after the message.
func withHint(err error, hint string) error {
	return &exitError{Code: ExitUsage, Err: err, Hint: hint}
}

// silentExit ends the command with code without printing anything more;
// the command already wrote what it had to say (for example the JSON
// result of a run that did not complete).
var errSilent = errors.New("silent exit")

func silentExit(code int) error {
	return &exitError{Code: code, Err: errSilent}
}

// exitCode maps any error returned by a command to the process exit code
// and the lines to print on stderr. It is the only place that decides.
func exitCode(err error) (code int, message, hint string) {
	if err == nil {
		return ExitOK, "", ""
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if errors.Is(ee.Err, errSilent) {
			return ee.Code, "", ""
		}
		return ee.Code, err.Error(), ee.Hint
	}
	// Anything not classified is an environment error: the command could
	// not do its job and (by construction) created nothing it left behind.
	return ExitUsage, err.Error(), ""
}
