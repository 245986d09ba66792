package workspace

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/transcript"
)

// The egress proxy's sidecar (see egressSpec).
const (
	// egressDir is the directory of the tools volume the sidecar makes its
	// socket in: the sidecar's own (egressUID), read-only to everyone else.
	egressDir    = toolsDir + "/egress"
	egressSocket = egressDir + "/" + egress.SocketName
	// egressUID is the sidecar's user: nobody, owning nothing in the
	// volume but its directory, so a proxy taken over could not touch the
	// tool server or the base objects beside it.
	egressUID = 65534
	// egressPids and egressMemory bound the sidecar: one process and its
	// threads, and the connections' buffers.
	egressPids   = 64
	egressMemory = 256 << 20
	// egressReadyTimeout bounds the wait for the sidecar's first line.
	egressReadyTimeout = 30 * time.Second
)

// egressWanted reports whether the run has network: a worker with
// --allow-network or a --setup command, each only through the proxy.
func (w *Workspace) egressWanted() bool { return w.cfg.AllowNetwork || w.cfg.Setup != "" }

// egressSpec is the egress proxy's sidecar, dw-<slug>-egress: the same
// binary from the tools volume as `dirtywork __egress proxy`, on docker's
// default bridge, serving only a unix socket in the tools volume; it
// listens on no port, so nothing on the bridge can use it. The worker and
// the setup container have no network at all (--network none): they reach
// the proxy through that socket, forwarded to from their own loopback.
// Locked down as the other containers: read-only root, every capability
// dropped, no-new-privileges, pids and memory limits, an unprivileged
// user. It ends when dirtywork does (stdin tether).
//
// Why not an internal docker network holding the worker and the sidecar:
// an Internal network's bridge still carries the gateway address on the
// host, and the daemon (20.10 here) lets a container on it reach the
// host's listeners through that address and the host's other addresses;
// no network at all leaves nothing to reach, and there is no network to
// create, remove or reconcile.
func egressSpec(n objectNames, imageID string, labels map[string]string, allow egress.Allowlist, denied []netip.Addr) daemon.ContainerSpec {
	deny := make([]string, len(denied))
	for i, a := range denied {
		deny[i] = a.String()
	}
	return sidecar{
		imageID: imageID, user: fmt.Sprintf("%d:%d", egressUID, egressUID), network: "bridge",
		cmd: []string{
			"__egress", "proxy", "-socket", egressSocket,
			"-allow", strings.Join(allow.Strings(), ","), "-deny-addr", strings.Join(deny, ","),
		},
		labels: labels, memory: egressMemory, pids: egressPids,
		mounts: []daemon.Mount{
			// Writable for the socket, in the one directory nobody owns.
			{Volume: n.ToolsVolume, Target: toolsDir},
			n.Toolbox.mount(),
		},
	}.spec()
}

// egressDirEntry is the sidecar's directory in the tools volume.
func egressDirEntry() uploadEntry {
	return uploadEntry{Name: "egress/", Mode: 0o755, UID: egressUID, GID: egressUID}
}

// egressArgs make the worker's tool server the forwarder to the proxy.
func egressArgs() []string {
	return []string{"-egress-socket", egressSocket, "-egress-listen", egress.ListenAddr}
}

// dockerEgress is the running sidecar and the log of its decisions.
type dockerEgress struct {
	id     string
	stream daemon.Stream // nil until attached
	rec    *egress.Recorder
	stderr *cappedLog
	// read ends once the sidecar's stream ended and every decision in it
	// is recorded.
	read     chan struct{}
	stopOnce sync.Once
}

// startEgress creates and starts the sidecar once the tools volume holds
// the binary and the sidecar's directory, and waits until its socket
// takes connections. A workspace closed meanwhile stops it.
func (w *Workspace) startEgress(ctx context.Context) (err error) {
	rec, err := egress.OpenRecorder(filepath.Join(w.cfg.RunDir, egress.LogName))
	if err != nil {
		return err
	}
	var denied []netip.Addr
	if w.local {
		// The sidecar reaches the host's listeners through the host's
		// addresses, public ones included: it refuses them (a remote
		// daemon's host is not known here; its private addresses are
		// refused as every private address is).
		denied = egress.InterfaceAddrs()
	}
	spec := egressSpec(w.names, w.imageID, w.labels, w.cfg.Allow, denied)
	id, err := w.createWorkerContainer(ctx, w.names.Egress, spec)
	if err != nil {
		_ = rec.Close()
		return err
	}
	e := &dockerEgress{id: id, rec: rec, stderr: &cappedLog{max: maxServerLog}, read: make(chan struct{})}
	defer func() {
		if err != nil {
			w.stopEgressSidecar(e)
		}
	}()
	if e.stream, err = w.eng.Attach(ctx, id, e.stderr); err != nil {
		close(e.read)
		return err
	}
	if err := w.eng.StartContainer(ctx, id); err != nil {
		close(e.read)
		return err
	}
	ready := make(chan error, 1)
	go e.readDecisions(ready)
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("start the egress proxy %s: %w%s", w.names.Egress, err, e.suffix())
		}
	case <-time.After(egressReadyTimeout):
		return fmt.Errorf("start the egress proxy %s: not ready after %v%s", w.names.Egress, egressReadyTimeout, e.suffix())
	case <-ctx.Done():
		return ctx.Err()
	}
	w.mu.Lock()
	stopped := w.closed || w.finalized
	if !stopped {
		w.egr = e
	}
	w.mu.Unlock()
	if stopped {
		w.stopEgressSidecar(e)
	}
	w.cfg.trace("egress")
	return nil
}

// readDecisions reads the sidecar's stdout: the first line must be
// egress.Ready (reported on ready), every later one is a decision for the
// log. It returns when the stream ends.
func (e *dockerEgress) readDecisions(ready chan<- error) {
	defer close(e.read)
	sc := bufio.NewScanner(e.stream)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			if sc.Text() != egress.Ready {
				ready <- fmt.Errorf("unexpected first line %q", truncate(sc.Text(), 200))
				_ = e.stream.CloseRead()
				return
			}
			ready <- nil
			continue
		}
		var d egress.Decision
		if err := json.Unmarshal(sc.Bytes(), &d); err == nil {
			e.rec.Record(d)
		}
	}
	if first {
		if err := sc.Err(); err != nil {
			ready <- fmt.Errorf("it ended before it was ready: %w", err)
		} else {
			ready <- errors.New("it ended before it was ready")
		}
	}
	_ = e.stream.CloseRead() // a line past the cap: the stream is abandoned
}

// suffix is the sidecar's stderr for an error message.
func (e *dockerEgress) suffix() string {
	if s := e.stderr.String(); s != "" {
		return "; it said: " + truncate(s, 500)
	}
	return ""
}

// stopEgress kills the sidecar (nothing reaches the network from then on)
// and waits until its last decisions are recorded. The container stays
// for Close to remove. Idempotent.
func (w *Workspace) stopEgress() {
	w.mu.Lock()
	e := w.egr
	w.mu.Unlock()
	if e != nil {
		w.stopEgressSidecar(e)
	}
}

// stopEgressSidecar is stopEgress for e.
func (w *Workspace) stopEgressSidecar(e *dockerEgress) {
	e.stopOnce.Do(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		_ = w.eng.KillContainer(ctx, e.id)
		if e.stream != nil {
			<-e.read
			_ = e.stream.Close()
		}
		_ = e.rec.Close()
	})
}

// egressSummary is what the proxy decided, nil for a run without network.
func (w *Workspace) egressSummary() *transcript.Egress {
	w.mu.Lock()
	e := w.egr
	w.mu.Unlock()
	if e == nil {
		return nil
	}
	s := e.rec.Summary()
	return &s
}

// recordEgress stops the proxy and writes its summary into run.json: a
// run whose setup failed never reaches run_end, and its record must still
// say what the setup's network did.
func (w *Workspace) recordEgress() error {
	w.stopEgress()
	s := w.egressSummary()
	if s == nil {
		return nil
	}
	if _, err := transcript.Patch(w.cfg.RunDir, transcript.EgressFields{Egress: s}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("record the egress summary: %w", err)
	}
	return nil
}

// egressSettings is run_start.sandbox.egress: the allowlist, what has the
// network through it, and the log; nil without network.
func (w *Workspace) egressSettings() map[string]any {
	if !w.egressWanted() {
		return nil
	}
	var users []string
	if w.cfg.Setup != "" {
		users = append(users, "setup")
	}
	if w.cfg.AllowNetwork {
		users = append(users, "worker")
	}
	return map[string]any{
		"allowlist": w.cfg.Allow.Strings(),
		"for":       users,
		"log":       filepath.Join(w.cfg.RunDir, egress.LogName),
	}
}
