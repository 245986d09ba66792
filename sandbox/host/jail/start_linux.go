package jail

import (
	"context"
	"errors"
	"os"
)

// MaybeRun turns this process into the jail's setup child when it was
// started as one (first argument "__jail"), and then never returns: it
// builds the jail and replaces itself with the program, or exits after
// reporting why it could not. Otherwise it returns at once. Call it first
// thing in main, and in TestMain of test binaries that start jails.
func MaybeRun() {
	if len(os.Args) < 2 || os.Args[1] != setupArg {
		return
	}
	os.Exit(exitSetup)
}

// Start builds a jail for cfg and starts its program as the jail's pid 1.
// ctx bounds the setup only: the jail lives until its program ends or
// Kill. On success the caller must Wait (after Kill, if need be); on
// failure nothing of the jail is left.
func Start(ctx context.Context, cfg Config) (*Jail, error) {
	return nil, errors.New("jail: not implemented yet")
}

// Probe tries every layer out on this system, by building a jail that
// runs nothing, and reports each: for preflight (Report.Err is a refusal,
// exit 2, unless DIRTYWORK_ALLOW_UNCONFINED=1 and no essential layer is
// missing) and for `dirtywork doctor`.
func Probe(ctx context.Context) Report {
	return Report{}
}
