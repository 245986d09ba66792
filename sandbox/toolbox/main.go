package toolbox

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
)

// defaultMaxFileBytes is the per-file cap on what a command writes in a
// sandbox (S-28: ulimit -f 524288, 512 MiB).
const defaultMaxFileBytes = 512 << 20

// Main is `dirtywork toolbox`, started inside the sandbox with its stdin
// and stdout attached to the client: it serves the protocol on them until
// the client shuts it down or closes stdin, and returns the process's exit
// code: 0 for a clean end, 1 when serving failed, 2 for bad arguments.
// Diagnostics go to stderr, never stdout, which carries only frames.
//
// Flags: -root DIR (the tree, default /work), -display PATH (the path the
// model knows it by, default the root), -bash PATH (default /bin/bash),
// -max-file-bytes N (default 512 MiB, 0 for none). Commands get the
// process's own environment, which whoever starts it sets. The process is
// dedicated to the server, so it reaps (and kills) what commands leave
// behind (ServerConfig.Subreaper).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg := ServerConfig{Env: os.Environ(), Subreaper: true}
	fl := flag.NewFlagSet("toolbox", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&cfg.Root, "root", "/work", "directory holding the tree")
	fl.StringVar(&cfg.Display, "display", "", "absolute path the model knows the tree by (default: -root)")
	fl.StringVar(&cfg.Bash, "bash", "/bin/bash", "shell commands run with")
	fl.Int64Var(&cfg.MaxFileBytes, "max-file-bytes", defaultMaxFileBytes, "largest file a command may write (0: no cap)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "toolbox: unexpected arguments: %q\n", fl.Args())
		return 2
	}
	if err := Serve(ctx, stdin, stdout, cfg); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	return 0
}
