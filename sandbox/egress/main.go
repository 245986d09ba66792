package egress

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
)

// Ready is the first line the proxy command writes on stdout, once its
// socket takes connections.
const Ready = `{"ready":true}`

// Main is `dirtywork __egress`, what a docker sandbox runs of this
// package, and returns the exit code:
//
//	proxy -socket PATH -allow RULES [-deny-addr ADDRS]
//	    serves the proxy on a unix socket at PATH (made connectable by
//	    anyone who can reach it) and writes Ready, then every decision, as
//	    JSON lines on stdout, until stdin ends (its client is gone);
//	run -socket PATH [-listen ADDR] -- COMMAND [ARGS...]
//	    forwards ADDR (default ListenAddr) to the proxy at PATH while
//	    COMMAND runs, and exits as it did.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "egress: want 'proxy' or 'run'")
		return 2
	}
	switch args[0] {
	case "proxy":
		return mainProxy(ctx, args[1:], stdin, stdout, stderr)
	case "run":
		return mainRun(ctx, args[1:], stderr)
	}
	fmt.Fprintf(stderr, "egress: unknown command %q\n", args[0])
	return 2
}

func mainProxy(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("egress proxy", flag.ContinueOnError)
	fl.SetOutput(stderr)
	socket := fl.String("socket", "", "unix socket to serve on")
	allow := fl.String("allow", "", "allowlist: comma-separated HOST[:PORT], *.DOMAIN[:PORT]")
	deny := fl.String("deny-addr", "", "comma-separated addresses refused besides the forbidden ranges (the host's own)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	rules, err := ParseRules(*allow)
	if err != nil || *socket == "" || fl.NArg() > 0 {
		fmt.Fprintf(stderr, "egress proxy: want -socket PATH and a valid -allow list (%v)\n", err)
		return 2
	}
	var denied []netip.Addr
	for a := range strings.SplitSeq(*deny, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			fmt.Fprintf(stderr, "egress proxy: -deny-addr %q is not an address\n", a)
			return 2
		}
		denied = append(denied, ip)
	}
	l, err := ListenUnix(*socket)
	if err != nil {
		fmt.Fprintf(stderr, "egress proxy: %v\n", err)
		return 1
	}
	var outMu sync.Mutex
	emit := func(line []byte) {
		outMu.Lock()
		defer outMu.Unlock()
		_, _ = stdout.Write(append(line, '\n'))
	}
	p := New(Config{
		Allow:       rules,
		DeniedAddrs: func() []netip.Addr { return denied },
		Log: func(d Decision) {
			if b, err := json.Marshal(d); err == nil {
				emit(b)
			}
		},
	})
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	emit([]byte(Ready))
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin) // the tether: our client's end
		close(gone)
	}()
	select {
	case <-gone:
	case <-ctx.Done():
	case err := <-served:
		if err != nil {
			fmt.Fprintf(stderr, "egress proxy: %v\n", err)
			return 1
		}
	}
	_ = p.Close()
	return 0
}

// ListenUnix listens on a fresh unix socket at path (a stale one is
// replaced) that anyone who can reach the path may connect to: what
// reaches it is decided by where the path is bound.
func ListenUnix(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("replace the socket %s: %w", path, err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("open the socket %s to the sandbox: %w", path, err)
	}
	return l, nil
}

func mainRun(ctx context.Context, args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("egress run", flag.ContinueOnError)
	fl.SetOutput(stderr)
	socket := fl.String("socket", "", "the proxy's unix socket")
	listen := fl.String("listen", ListenAddr, "address to forward to the proxy")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *socket == "" || fl.NArg() == 0 {
		fmt.Fprintln(stderr, "egress run: want -socket PATH -- COMMAND [ARGS...]")
		return 2
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "egress run: %v\n", err)
		return 1
	}
	defer func() { _ = l.Close() }()
	go func() { _ = Forward(l, *socket) }()
	cmd := exec.CommandContext(ctx, fl.Arg(0), fl.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "egress run: %v\n", err)
		return 127
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var ee *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &ee):
				if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
					return 128 + int(st.Signal())
				}
				return ee.ExitCode()
			}
			fmt.Fprintf(stderr, "egress run: %v\n", err)
			return 1
		}
	}
}
