package workspace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/gitops"
	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/volstore"
	"github.com/dirtywork/dirtywork/sandbox/export"
	"github.com/dirtywork/dirtywork/sandbox/pause"
	"github.com/dirtywork/dirtywork/sandbox/seal"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// Workspace is a docker sandbox: the run's tree in a volume, worked on by
// a tool server inside a locked-down container for the run's life. It
// implements sandbox.Workspace; DisplayRoot is /work.
//
// Nothing of the host is mounted into the container: the base commit's
// objects and the tool server are uploaded into a root-owned tools volume,
// the tree is checked out from them inside, and the export downloads the
// tree through the Engine API and validates it before anything reaches the
// host lane. When the tool server dies or stops answering, the container
// is replaced on the same volumes (a reset) and the model is told.
type Workspace struct {
	cfg     Config
	eng     daemon.Engine
	git     *gitops.Git
	names   objectNames
	labels  map[string]string
	limits  limits
	imageID string
	arch    string // the image's architecture, as Go names it
	digest  *string
	// pack is the base pack, packErr why it could not be made; both are
	// set once packed is closed (open makes it meanwhile).
	pack    *basePack
	packErr error
	packed  chan struct{}
	// baseline fills the host lane with the base tree meanwhile.
	baseline *baseline
	// size says how the tree's caps hold; store, when the kernel holds
	// them, is the work volume's file system (package volstore).
	size  sizeLimit
	store *volstore.Store
	// longPaths are what the tool server listed, at finalize, as past
	// what the daemon can export.
	longPaths []string
	// ready, when not nil, is closed once the first checkout in the
	// container ended, readyErr set if it failed (checkOutMeanwhile).
	ready    chan struct{}
	readyErr error
	// measured, when not nil, is closed once the measurer's start ended
	// (started, or not needed), measuredErr set if it failed.
	measured    chan struct{}
	measuredErr error
	// meas is the measurer (measurer.go), once started; guarded by mu.
	meas *session
	// egr is the egress proxy's sidecar (egress.go), once started, for
	// a run with network; guarded by mu.
	egr *dockerEgress
	// reaping is the removal of what finished runs left (reapMarked);
	// Close waits for it.
	reaping sync.WaitGroup
	// discarding is the measurer's removal once the worker stopped.
	discarding  sync.WaitGroup
	stopReaping context.CancelFunc
	toolbox     Toolbox // for the image's architecture; cleared once uploaded
	local       bool    // the daemon runs on this machine

	// resetMu serialises resets, watchdog kills and the final stop, so a
	// container is never replaced twice at once.
	resetMu sync.Mutex

	mu        sync.Mutex
	sess      *session   // guarded by mu; nil once stopped
	violation *violation // guarded by mu: what the watchdog found
	finalized bool       // guarded by mu
	closed    bool       // guarded by mu
	exportOK  bool       // guarded by mu: the volumes may go
	// oomSeen and died are what the events API said about the current
	// container, straySeen what the watchdog saw running in it besides
	// the tool server between commands; guarded by mu, cleared by a reset.
	oomSeen, died, straySeen bool
	// walkPending is set after a command: the tool server is walking the
	// tree, and the next operation that can change it takes the verdict
	// first. Guarded by mu.
	walkPending bool
	// since is the seal's baseline, marked by the tool server once the
	// checkout (and the setup) were done; sealed is what every seal of
	// the run found. Guarded by mu.
	since  time.Time
	sealed seal.Report

	wd *watchdog
	// isolated judges what a tool server says of itself (serverIsolated;
	// the unit tests' in-process servers are not pid 1).
	isolated func(toolbox.ServerInfo) bool
}

var _ sandbox.Workspace = (*Workspace)(nil)

// Open creates the run's volumes and container, delivers the tool server
// and the base commit into them, makes the worker's repository inside
// (the base commit under the host's ids, one commit unless
// cfg.WithHistory), runs cfg.Setup when given, and starts the watchdog.
// On failure everything it created is removed again; a failing setup is a
// *sandbox.SandboxError carrying the setup's output. The daemon is the one
// connect gives, once cfg passed its checks; Close closes it.
func Open(ctx context.Context, connect Connect, cfg Config) (*Workspace, error) {
	w, err := newWorkspace(connect, cfg)
	if err != nil {
		return nil, &sandbox.SandboxError{Op: "start the docker sandbox", Err: err}
	}
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// start is Open's work once the workspace is made: on failure everything
// is removed again.
func (w *Workspace) start(ctx context.Context) error {
	if err := w.open(ctx); err != nil {
		_ = w.Close()
		var se *sandbox.SandboxError
		if errors.As(err, &se) || errors.Is(err, context.Canceled) {
			return err
		}
		return &sandbox.SandboxError{Op: "start the docker sandbox", Err: err}
	}
	return nil
}

// Connect gives the daemon a workspace talks to (docker.ConnectEngine, or
// a fake in tests). Every entry point below calls it once it has checked
// its configuration, and closes what it gave when done with it.
type Connect func() (daemon.Engine, error)

// newWorkspace checks cfg and connects to the daemon.
func newWorkspace(connect Connect, cfg Config) (*Workspace, error) {
	names, err := namesFor(cfg.Slug)
	if err != nil {
		return nil, err
	}
	l, err := limitsOf(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Toolbox == nil {
		return nil, fmt.Errorf("%w: no tool server source is configured", ErrNoToolbox)
	}
	cl, err := connect()
	if err != nil {
		return nil, err
	}
	return &Workspace{
		cfg:      cfg,
		eng:      cl,
		git:      gitops.New(),
		names:    names,
		labels:   labelsFor(cfg.Slug, cfg.RepoRoot),
		limits:   l,
		local:    cl.Local(),
		isolated: serverIsolated,
	}, nil
}

func (w *Workspace) open(ctx context.Context) error {
	// S-10 again: another run may have taken the names since preflight.
	// The image is looked at meanwhile.
	free := make(chan error, 1)
	go func() { free <- checkNamesFree(ctx, w.eng, w.names) }()
	img, err := w.eng.InspectImage(ctx, w.cfg.Image)
	if ferr := <-free; ferr != nil {
		return ferr
	}
	if err != nil {
		return imageError(w.cfg.Image, err)
	}
	w.imageID, w.digest, w.arch = img.ID, img.Digest, img.Arch
	if w.toolbox, err = imageToolbox(w.cfg, img); err != nil {
		return err
	}
	if !w.cfg.Resume { // a resumed run's lane holds the prior work: never fill it
		w.baseline = startBaseline(w.git, w.cfg.RepoRoot, w.cfg.BaseCommit, w.cfg.Worktree)
	}
	// The base pack is made while everything up to the container's start
	// is: only its upload, beside the start, waits for it.
	w.packed = make(chan struct{})
	go func() {
		defer close(w.packed)
		w.pack, w.packErr = makeBasePack(ctx, w.git, w.cfg.RepoRoot, w.cfg.BaseCommit, w.cfg.WithHistory)
		if w.packErr == nil {
			w.cfg.trace("pack")
		}
	}()
	// Close removes the pack's directory: it is known before open ends.
	defer func() { <-w.packed }()
	// The work volume's file system, the toolbox volume and the run's
	// tools volume are made at once.
	stored := make(chan sizeLimit, 1)
	go func() { stored <- w.makeStore(ctx) }()
	tooled := make(chan error, 1)
	go func() { tooled <- w.prepareToolbox(ctx) }()
	toolsErr := w.eng.CreateVolume(ctx, w.names.ToolsVolume, w.labels)
	w.size = <-stored
	w.store = w.size.store // Close releases it, whatever fails from here
	var workErr error
	if w.store != nil {
		workErr = w.eng.CreateBoundVolume(ctx, w.names.WorkVolume, w.labels, w.store.Tree())
	} else {
		workErr = w.eng.CreateVolume(ctx, w.names.WorkVolume, w.labels)
	}
	if err := errors.Join(<-tooled, toolsErr, workErr); err != nil {
		return err
	}
	w.cfg.trace("volumes")
	pause.At(pause.Volume)
	s, err := w.startSession(ctx, true)
	// The pack lives in the tools volume now (or never will), the tool
	// server in the toolbox volume; a carried build's bytes need not stay
	// in memory (a refill asks for them again).
	<-w.packed
	if w.pack != nil {
		w.pack.Close()
	}
	w.toolbox = Toolbox{}
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.sess = s
	w.mu.Unlock()
	// What finished runs left to remove goes meanwhile, once the
	// container serves: its daemon calls would only slow the start.
	rctx, stopReaping := context.WithTimeout(context.Background(), reapTimeout)
	w.stopReaping = stopReaping
	w.reaping.Go(func() {
		defer stopReaping()
		reapMarked(rctx, w.eng)
		reapToolboxes(rctx, w.eng, w.names.Toolbox.key)
	})
	pause.At(pause.Container)
	if w.cfg.Setup == "" {
		w.wd = startWatchdog(w)
		w.checkOutMeanwhile(s)
		return nil
	}
	// --setup works on the tree: it must be there first. Its network, the
	// egress proxy, starts meanwhile.
	proxy := make(chan error, 1)
	go func() { proxy <- w.startEgress(ctx) }()
	err = w.initRepo(ctx, s, true)
	if err == nil {
		err = w.startOutside(ctx)
	}
	if perr := <-proxy; err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	err = w.runSetup(ctx)
	if !w.cfg.AllowNetwork {
		// The worker has no network: the proxy goes before its first
		// command (the socket lies in the tools volume it mounts).
		w.stopEgress()
	}
	if err != nil {
		return err
	}
	if err := w.markBaseline(ctx, s); err != nil {
		return err
	}
	w.wd = startWatchdog(w)
	return nil
}

// prepareToolbox names the toolbox volume by the tool server's hash and
// makes sure it exists (ensureToolbox).
func (w *Workspace) prepareToolbox(ctx context.Context) error {
	v, err := toolboxVolumeOf(w.toolbox)
	if err != nil {
		return err
	}
	w.names.Toolbox = v
	return w.ensureToolbox(ctx)
}

// makeStore makes the work volume's file system when the kernel can hold
// its size here; otherwise the size limit says why it is measured.
func (w *Workspace) makeStore(ctx context.Context) sizeLimit {
	measured := func(err error) sizeLimit {
		return sizeLimit{kind: sizeMeasured, reason: strings.TrimPrefix(err.Error(), volstore.ErrUnavailable.Error()+": ")}
	}
	if w.cfg.MeasuredSize {
		return sizeLimit{kind: sizeMeasured, reason: "the run asked for a measured size limit"}
	}
	if err := volstore.Available(ctx, w.eng, w.cfg.Limits.MaxBytes > 0); err != nil {
		return measured(err)
	}
	dir, err := volstore.Dir()
	if err != nil {
		return measured(err)
	}
	store, err := volstore.Create(ctx, dir, w.names.WorkVolume, w.cfg.Limits.MaxBytes, w.cfg.Limits.MaxEntries, workerUID, workerGID)
	if err != nil {
		return measured(fmt.Errorf("make the work volume's file system: %w", err))
	}
	w.cfg.trace("store")
	return sizeLimit{kind: sizeFilesystem, store: store}
}

// DisplayRoot is /work, where the model is told its files are.
func (w *Workspace) DisplayRoot() string { return workDir }

// Names are the worker container's and the work volume's names.
func (w *Workspace) Names() (container, volume string) {
	return w.names.Container, w.names.WorkVolume
}

// ImageDigest is the registry digest the image was pulled by, nil for a
// locally built image.
func (w *Workspace) ImageDigest() *string { return w.digest }

// Settings is run_start's sandbox object (S-8).
func (w *Workspace) Settings() map[string]any {
	network := "none"
	if w.cfg.AllowNetwork {
		network = "proxy"
	}
	var digest any
	if w.digest != nil {
		digest = *w.digest
	}
	settings := map[string]any{
		"backend":            "docker",
		"image":              w.cfg.Image,
		"image_digest":       digest,
		"image_pinned":       false,
		"network":            network,
		"memory":             w.limits.Memory,
		"cpus":               w.limits.CPUs,
		"pids_limit":         w.limits.PidsLimit,
		"tmp_size":           w.limits.TmpSize,
		"gitdir_size":        w.limits.GitdirSize,
		"max_worktree_mb":    w.cfg.Limits.MaxBytes >> 20,
		"max_worktree_files": w.cfg.Limits.MaxEntries,
		"user":               userSpec(),
		"with_history":       w.cfg.WithHistory,
		"container":          w.names.Container,
		"volume":             w.names.WorkVolume,
		"size_limit":         w.size.settings(),
	}
	if e := w.egressSettings(); e != nil {
		settings["egress"] = e
	}
	return settings
}

// Close stops the watchdog and removes the container and, unless the
// volume is to be kept (KeepVolume, or an export that did not succeed),
// the volumes; each only when its labels say it is this run's. Of the host
// lane it only takes back, when the run was never exported, the base tree
// the baseline wrote into it. Idempotent.
func (w *Workspace) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	keep := w.cfg.KeepVolume || (w.finalized && !w.exportOK)
	finalized := w.finalized
	w.mu.Unlock()
	if w.baseline != nil {
		w.baseline.stop() // nothing may write into the lane after Close
		if !finalized {
			// Never exported, the lane holds only what the baseline
			// wrote: leave it as it came, with its .git file only.
			_ = export.Clear(w.cfg.Worktree)
		}
	}
	if w.wd != nil {
		w.wd.stop()
	}
	w.stopContainer()
	if w.ready != nil {
		<-w.ready // the checkout's call ended with the container
	}
	if w.measured != nil {
		<-w.measured // a measurer started after Close is discarded
	}
	w.discarding.Wait()
	var errs []error
	if err := w.recordEgress(); err != nil {
		errs = append(errs, err)
	}
	// The removals' budget starts after the waits above, not before them.
	ctx, cancel := cleanupContext()
	defer cancel()
	// The containers go at once, each a daemon call of its own.
	names := []string{w.names.Setup, w.names.Container, w.names.Measurer, w.names.Egress}
	cerrs := make([]error, len(names))
	var removing sync.WaitGroup
	for i, name := range names {
		removing.Go(func() { cerrs[i] = w.removeOwnContainer(ctx, name) })
	}
	removing.Wait()
	errs = append(errs, slices.DeleteFunc(cerrs, func(err error) bool { return err == nil })...)
	vols := []string{w.names.ToolsVolume}
	if !keep {
		vols = append(vols, w.names.WorkVolume)
	}
	// A work volume on a file system of its own costs the daemon nothing
	// to remove (its tree is in the image): no marker is needed.
	if w.cfg.DetachRemoval && w.imageID != "" && w.store == nil {
		if err := w.removeDetached(ctx, vols); err != nil {
			errs = append(errs, err)
		}
	} else {
		// The volumes go at once too: each is a daemon call, and the
		// work volume's file system is unmounted and detached after it.
		verrs := make([]error, len(vols))
		for i, v := range vols {
			removing.Go(func() { verrs[i] = w.removeOwnVolume(ctx, v) })
		}
		removing.Wait()
		errs = append(errs, slices.DeleteFunc(verrs, func(err error) bool { return err == nil })...)
	}
	w.cfg.trace("removed")
	w.waitReaping()
	if w.pack != nil {
		w.pack.Close()
	}
	if err := w.eng.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// stopContainer ends the current session, if any: the tool server is
// asked to shut down, then the container is killed, so no worker process
// outlives it. The container is kept (stopped) for the export.
func (w *Workspace) stopContainer() {
	w.resetMu.Lock()
	defer w.resetMu.Unlock()
	w.mu.Lock()
	s, m := w.sess, w.meas
	w.sess, w.meas = nil, nil
	w.mu.Unlock()
	if m != nil {
		// It measures only while the worker runs; Close waits for it to go.
		w.discarding.Go(func() { w.discardSession(m) })
	}
	if s == nil {
		return
	}
	_ = s.tb.Close() // shutdown, then the stream closes
	ctx, cancel := cleanupContext()
	defer cancel()
	_ = w.eng.KillContainer(ctx, s.id)
	_, _ = w.eng.WaitStopped(ctx, s.id, daemon.LifecycleTimeout)
	_ = s.stream.Close()
}

// removeOwnContainer removes the named container if it carries this run's
// label; one that does not exist is removed.
func (w *Workspace) removeOwnContainer(ctx context.Context, name string) error {
	info, err := w.eng.InspectContainer(ctx, name)
	if errors.Is(err, daemon.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Labels[daemon.LabelRun] != w.cfg.Slug {
		return fmt.Errorf("container %s is not this run's (label %s); left alone", name, daemon.LabelRun)
	}
	return w.eng.RemoveContainer(ctx, info.ID)
}

// removeOwnVolume removes the named volume if it carries this run's
// label, and its file system with it (a volume never made leaves the one
// made for it).
func (w *Workspace) removeOwnVolume(ctx context.Context, name string) error {
	labels, err := volumeLabels(ctx, w.eng, name)
	if errors.Is(err, daemon.ErrNotFound) {
		return volstore.ReleaseGone(name)
	}
	if err != nil {
		return err
	}
	if labels[daemon.LabelRun] != w.cfg.Slug {
		return fmt.Errorf("volume %s is not this run's (label %s); left alone", name, daemon.LabelRun)
	}
	return removeVolume(ctx, w.eng, name)
}

// volumeLabels returns the named volume's labels (daemon.ErrNotFound when there
// is none).
func volumeLabels(ctx context.Context, eng daemon.Engine, name string) (map[string]string, error) {
	v, err := eng.InspectVolume(ctx, name)
	return v.Labels, err
}

// removeVolume removes the named volume; one already gone is removed. A
// work volume whose size the kernel held goes with its file system: its
// loop device is detached and its image deleted (volstore.Release).
func removeVolume(ctx context.Context, eng daemon.Engine, name string) error {
	if err := eng.RemoveVolume(ctx, name, true); err != nil {
		return err
	}
	return volstore.ReleaseGone(name)
}

// The kinds of size limit (run_start.sandbox.size_limit.kind): see
// package volstore.
const (
	sizeFilesystem = "filesystem"
	sizeMeasured   = "measured"
)

// sizeLimit is how a workspace's caps hold, for run_start.
type sizeLimit struct {
	kind string
	// reason says why the kernel does not hold them (measured only).
	reason string
	store  *volstore.Store
}

// settings is run_start's size_limit object.
func (s sizeLimit) settings() map[string]any {
	if s.store == nil {
		return map[string]any{"kind": sizeMeasured, "reason": s.reason}
	}
	return map[string]any{
		"kind":    sizeFilesystem,
		"bytes":   s.store.Bytes,
		"entries": s.store.Entries,
		"image":   s.store.Image,
		"mount":   s.store.Mount,
	}
}

// reapGrace is how long Close lets the removal of what finished runs left
// go on before it stops it.
const reapGrace = 300 * time.Millisecond

// waitReaping lets the removal of what finished runs left go on for a
// moment, then stops it: what it did not finish, the next run does.
func (w *Workspace) waitReaping() {
	if w.stopReaping == nil {
		return
	}
	done := make(chan struct{})
	go func() { w.reaping.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(reapGrace):
		w.stopReaping()
		<-done
	}
}
