package toolbox

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/egress"
)

// defaultMaxFileBytes is the per-file cap on what a command writes in a
// sandbox (S-28: ulimit -f 524288, 512 MiB).
const defaultMaxFileBytes = 512 << 20

// stopGrace is how long, after SIGTERM or SIGINT was forwarded to the
// commands, the server waits for them before it stops serving (and so
// kills what is left). A second signal stops it at once.
const stopGrace = 2 * time.Second

// Main is `dirtywork toolbox`, started inside the sandbox with its stdin
// and stdout attached to the client: it serves the protocol on them until
// the client shuts it down or closes stdin, and returns the process's exit
// code: 0 for a clean end, 1 when serving failed, 2 for bad arguments.
// Diagnostics go to stderr, never stdout, which carries only frames.
//
// The process is meant to be its PID namespace's init: pid 1 of the
// worker container (no docker-init), or of the namespace a host jail
// makes. It is non-dumpable from its first instruction, reaps every child
// (ServerConfig.Subreaper), and forwards SIGTERM and SIGINT to the
// commands before it stops.
//
// Flags: -root DIR (the tree, default /work), -display PATH (the path the
// model knows it by, default the root), -bash PATH (default /bin/bash),
// -max-file-bytes N (default 512 MiB, 0 for none), -measure-only (refuse
// everything but hello and measure), -egress-socket PATH (forward
// -egress-listen, default 127.0.0.1:3128, to the egress proxy's socket:
// the sandbox's network, when it has one). Commands get the
// process's own environment, which whoever starts it sets.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The very first thing: no core dumps, and ptrace and
	// /proc/<pid>/{fd,mem,environ,…} refused to anyone without
	// CAP_SYS_PTRACE, which no process in a sandbox has. That suffices
	// although the Go runtime and the command line ran before this line:
	// the flag belongs to the whole process (every thread) and nothing
	// could have used the window. The server is the only process in its
	// PID namespace (no init before it, nothing exec'd into the
	// container), every other process there is a command it starts, and
	// it starts none before this returns; the flag stays cleared because
	// the server never execs or changes its credentials (a command's exec
	// gives the command its own flag). So no process can ever attach to
	// the server, open its stream, or read the key the hello brings.
	if err := setNonDumpable(); err != nil {
		fmt.Fprintf(stderr, "toolbox: make the server non-dumpable: %v\n", err)
		return 1
	}
	cfg := ServerConfig{Env: os.Environ(), Subreaper: true}
	fl := flag.NewFlagSet("toolbox", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&cfg.Root, "root", "/work", "directory holding the tree")
	fl.StringVar(&cfg.Display, "display", "", "absolute path the model knows the tree by (default: -root)")
	fl.StringVar(&cfg.Bash, "bash", "/bin/bash", "shell commands run with")
	fl.Int64Var(&cfg.MaxFileBytes, "max-file-bytes", defaultMaxFileBytes, "largest file a command may write (0: no cap)")
	fl.BoolVar(&cfg.MeasureOnly, "measure-only", false, "answer hello and measure only")
	cgroupOOM := fl.Bool("cgroup-oom", false, "report a command's OOM kills from the container's cgroup")
	egressSocket := fl.String("egress-socket", "", "the egress proxy's unix socket, forwarded to from -egress-listen")
	egressListen := fl.String("egress-listen", egress.ListenAddr, "the sandbox's loopback address forwarded to -egress-socket")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "toolbox: unexpected arguments: %q\n", fl.Args())
		return 2
	}
	if *cgroupOOM {
		cfg.OOMEvents = CgroupOOMEvents
	}
	if *egressSocket != "" {
		// The sandbox's only way out: listening before any command runs,
		// so no command can take the port first.
		l, err := net.Listen("tcp", *egressListen)
		if err != nil {
			fmt.Fprintf(stderr, "toolbox: forward to the egress proxy: %v\n", err)
			return 1
		}
		defer func() { _ = l.Close() }()
		go func() { _ = egress.Forward(l, *egressSocket) }()
	}
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go forwardStops(serveCtx, stop)
	if err := Serve(serveCtx, stdin, stdout, cfg); err != nil {
		if serveCtx.Err() != nil && errors.Is(err, context.Canceled) {
			return 0 // stopped by a signal, as asked
		}
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	return 0
}

// forwardStops is init's part in stopping: SIGTERM or SIGINT (the daemon
// stopping the container, or whoever runs the server) is passed on to
// every command, which gets stopGrace to end before stop ends serving,
// killing what is left; a second signal stops at once. The caller's own
// cancellation, which the same signals cause, is not followed directly, so
// the commands hear the signal before they are killed.
func forwardStops(ctx context.Context, stop context.CancelFunc) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	var grace <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-grace:
			stop()
			return
		case sig := <-sigs:
			if grace != nil {
				stop()
				return
			}
			if s, ok := sig.(syscall.Signal); ok {
				forwardSignal(s)
			}
			grace = time.After(stopGrace)
		}
	}
}
