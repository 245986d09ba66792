package host

import (
	"context"
	"os"

	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// MaybeServe turns this process into the tool server when it was started
// as one by a host workspace (first argument "__toolbox"), and then never
// returns: it serves on stdin and stdout until its client is done, and
// exits. Otherwise it returns at once. Call it first thing in main, and in
// TestMain of test binaries that open host workspaces.
func MaybeServe() {
	if !isToolboxArgs(os.Args) {
		return
	}
	os.Exit(toolbox.Main(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
}
