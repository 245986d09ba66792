// Command dirtywork hands coding tasks to local language models and keeps
// their work isolated for review. See the README for an overview.
package main

import (
	"os"

	"github.com/dirtywork/dirtywork/sandbox/host/confine"
)

func main() {
	// When this process is the launcher that confines a host-mode bash
	// command, it does that and never returns here.
	confine.MaybeRun()
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
