// Command dirtywork hands coding tasks to local language models and keeps
// their work isolated for review. See the README for an overview.
package main

import (
	"os"

	"github.com/dirtywork/dirtywork/sandbox/host"
	"github.com/dirtywork/dirtywork/sandbox/host/jail"
)

func main() {
	// When this process is the host jail's setup, or the tool server a
	// host workspace started in it, it does that and never returns here.
	jail.MaybeRun()
	host.MaybeServe()
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
