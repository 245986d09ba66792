//go:build !linux

package jail

import (
	"context"
	"fmt"
	"os"
)

// MaybeRun refuses the jail's hidden setup mode, which only exists on
// Linux, and otherwise returns at once.
func MaybeRun() {
	if len(os.Args) >= 2 && os.Args[1] == setupArg {
		fmt.Fprintln(os.Stderr, ErrUnsupported)
		os.Exit(exitSetup)
	}
}

// Start fails with ErrUnsupported.
func Start(context.Context, Config) (*Jail, error) { return nil, ErrUnsupported }

// Probe reports that no layer can be had here.
func Probe(context.Context, ...string) Report {
	return Report{Layers: []LayerStatus{{
		Name: LayerUserNS, Essential: true,
		Problem: ErrUnsupported.Error(), Fix: "use the docker sandbox",
	}}}
}
