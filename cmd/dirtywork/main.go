// Command dirtywork hands coding tasks to local language models and keeps
// their work isolated for review. See the README for an overview.
package main

import (
	"os"

	"github.com/dirtywork/dirtywork/sandbox/host/confine"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

func main() {
	// When this process is the launcher that confines a host-mode bash
	// command, it does that and never returns here.
	confine.MaybeRun()
	// When this process is the setup of a host-mode run's jail, it builds
	// the jail, becomes the program run in it and never returns here.
	jail.MaybeRun()
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
