package host

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/transcript"
)

// jailEgressDir is where the proxy's socket directory is bound in the
// jail (read-only: connecting needs no write access to the mount).
const jailEgressDir = "/run/dirtywork/egress"

// EgressInfo is run_start.sandbox.egress: what the proxy lets through and
// where it logs.
type EgressInfo struct {
	Allowlist []string `json:"allowlist"`
	Log       string   `json:"log"`
}

// hostEgress is the run's egress proxy: served by this process, in the
// host's network namespace, on a unix socket the jail sees at
// jailEgressDir. Inside, the tool server (pid 1) forwards 127.0.0.1:3128 to
// it, and the proxy variables point every command there; the jail's own
// network namespace has nothing else.
type hostEgress struct {
	dir string // the socket's directory on the host
	// addr and port are where the proxy listens on the host's loopback
	// instead (loopbackEgress: Seatbelt), "" and 0 otherwise.
	addr   string
	port   int
	proxy  *egress.Proxy
	rec    *egress.Recorder
	served chan error
}

// egressOn reports whether the run's network goes through the proxy: with
// --allow-network in a jail. Without a jail (unconfined) the commands have
// the host's network as they have everything else of it.
func (w *Workspace) egressOn() bool {
	if !w.cfg.Network {
		return false
	}
	_, plain := w.jailer.(childJailer)
	return !plain
}

// startEgress starts the proxy before the jail, so the socket takes
// connections from the first command on.
func (w *Workspace) startEgress() error {
	dir := filepath.Join(w.private.dir, "egress")
	// 0755 inside the run's 0700 directory: the jail's uid (another uid
	// on the host for a root operator) passes through its bind; nobody
	// else reaches it.
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("start the egress proxy: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		return fmt.Errorf("start the egress proxy: %w", err)
	}
	rec, err := egress.OpenRecorder(filepath.Join(w.cfg.RunDir, egress.LogName))
	if err != nil {
		return err
	}
	e := &hostEgress{dir: dir, rec: rec, served: make(chan error, 1)}
	var l net.Listener
	if loopbackEgress(w.jailer) {
		// A port of the host's loopback, the kernel's choice: the
		// commands share the host's network, where 3128 may be taken, and
		// the profile names this port alone.
		l, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			e.addr = l.Addr().String()
			e.port = l.Addr().(*net.TCPAddr).Port
		}
	} else {
		l, err = egress.ListenUnix(filepath.Join(dir, egress.SocketName))
	}
	if err != nil {
		_ = rec.Close()
		return fmt.Errorf("start the egress proxy: %w", err)
	}
	// The host's own addresses are refused by the proxy itself: it runs
	// in the host's network namespace and lists its interfaces.
	e.proxy = egress.New(egress.Config{Allow: w.cfg.Allow, Log: rec.Record})
	go func() { e.served <- e.proxy.Serve(l) }()
	w.egress = e
	return nil
}

// egressArgs are the tool server's arguments that make it the forwarder.
func egressArgs() []string {
	return []string{"-egress-socket", jailEgressDir + "/" + egress.SocketName, "-egress-listen", egress.ListenAddr}
}

// egressSummary is what the proxy decided so far, nil without one.
func (w *Workspace) egressSummary() *transcript.Egress {
	if w.egress == nil {
		return nil
	}
	s := w.egress.rec.Summary()
	return &s
}

// stopEgress stops the proxy (its tunnels too), closes its log and
// records the summary in run.json.
func (w *Workspace) stopEgress() error {
	e := w.egress
	if e == nil {
		return nil
	}
	var errs []error
	_ = e.proxy.Close()
	if err := <-e.served; err != nil {
		errs = append(errs, fmt.Errorf("egress proxy: %w", err))
	}
	if err := e.rec.Close(); err != nil {
		errs = append(errs, err)
	}
	s := e.rec.Summary()
	if _, err := transcript.Patch(w.cfg.RunDir, transcript.EgressFields{Egress: &s}); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("record the egress summary: %w", err))
	}
	return errors.Join(errs...)
}
