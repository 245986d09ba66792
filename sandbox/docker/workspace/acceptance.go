package workspace

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/docker/volstore"
)

// An acceptance check runs a bench fixture's checker against a run's tree
// in a container of its own (the bench contract's B-6): the tree at /work,
// read-write, the fixture's acceptance/ at /acceptance, read-only, no
// network, a read-only root, no capabilities, no new privileges, memory
// and process limits, the worker's user. Nothing is bind-mounted (a remote
// daemon works as a local one): the tree, when it comes from this machine,
// and the checker are uploaded into volumes of the check's own, through a
// container that never starts, and removed with it.

// LabelAcceptance marks the containers and volumes of an acceptance check;
// its value is the check's name (dw-accept-<hex>). RemoveAcceptance finds
// what a killed check left by it.
const LabelAcceptance = "dirtywork.acceptance"

// Defaults of an AcceptanceSpec's zero fields.
const (
	// DefaultAcceptanceTimeout bounds the command (B-6's 300 s).
	DefaultAcceptanceTimeout = 300 * time.Second
	// DefaultAcceptanceOutput is how much of the command's output is kept.
	DefaultAcceptanceOutput = 64 << 10
)

// Paths and limits of the acceptance containers (B-6).
const (
	acceptanceDir = "/acceptance"
	// acceptanceFillDir is where the fill container mounts the checker's
	// volume: not at /acceptance, so a worker's acceptance/ that is a
	// link to /acceptance does not read as the pristine copy when hashed.
	acceptanceFillDir = "/opt/dirtywork-acceptance"
	acceptanceMemory  = 2 << 30
	acceptancePids    = 256
	acceptanceTmp     = "rw,exec,size=256m,mode=1777"
	// maxHashedFile bounds a hashed file's download.
	maxHashedFile = 64 << 20
)

// ErrAcceptanceSpec is an AcceptanceSpec that cannot be run.
var ErrAcceptanceSpec = errors.New("invalid acceptance check")

// AcceptanceSpec is one acceptance check.
type AcceptanceSpec struct {
	// Image is the image the run used; the check runs in it.
	Image string
	// TreeDir is a host directory holding the run's tree (its exported
	// worktree): it is copied into a fresh volume at /work, owned by the
	// worker's user, leaving out its top-level .git. Volume is the other
	// form: an existing volume (the run's kept work volume) mounted at
	// /work as it is. Exactly one of them is set.
	TreeDir, Volume string
	// Acceptance is the fixture's acceptance/ directory, at /acceptance.
	Acceptance fs.FS
	// Command runs as /bin/sh -c "cd /work && <Command>".
	Command string
	// Guard maps paths under /work to the SHA-256 (hex) they must have:
	// they are hashed before the command runs, and when one differs or is
	// not a regular file the command does not run.
	Guard map[string]string
	// Timeout bounds the command (DefaultAcceptanceTimeout when 0); a
	// command still running then is killed and TimedOut set.
	Timeout time.Duration
	// OutputCap bounds the output kept (DefaultAcceptanceOutput when 0):
	// its first and last halves.
	OutputCap int
	// Labels are added to every object of the check.
	Labels map[string]string
}

// AcceptanceResult is what an acceptance check found.
type AcceptanceResult struct {
	// Hashes are the SHA-256 (hex) of the Guard paths that are regular
	// files; a path that is missing or anything else is absent.
	Hashes map[string]string
	// Ran reports whether the command ran: every guarded file matched.
	Ran bool
	// ExitCode is the command's exit code (137 when it was killed).
	ExitCode int
	// TimedOut reports that the command outlived its Timeout.
	TimedOut bool
	// Output is the command's stdout and stderr, merged, capped.
	Output []byte
	// Truncated reports that output was left out of Output.
	Truncated bool
	// Duration is how long the command ran.
	Duration time.Duration
}

// AcceptanceChecker runs acceptance checks on a daemon: the bench
// scorer's runner.
type AcceptanceChecker struct {
	// Engine is the daemon the checks run on; the checker does not close
	// it.
	Engine daemon.Engine
}

// RunAcceptance runs the acceptance check spec: the tree and the checker
// into volumes, the guarded files hashed, then, when they all match, the
// command in a fresh locked-down container under its deadline. Every
// container and volume it made is removed when it returns, whatever
// happened. The error is for a check that could not be made (no daemon,
// no image, no such volume, a failed upload); a failing or hanging
// command is a result.
func (c AcceptanceChecker) RunAcceptance(ctx context.Context, spec AcceptanceSpec) (AcceptanceResult, error) {
	var res AcceptanceResult
	if (spec.TreeDir == "") == (spec.Volume == "") {
		return res, fmt.Errorf("%w: give the tree as a directory or as a volume, not both or neither", ErrAcceptanceSpec)
	}
	if spec.Acceptance == nil || strings.TrimSpace(spec.Command) == "" {
		return res, fmt.Errorf("%w: no checker or no command", ErrAcceptanceSpec)
	}
	// A tree on this machine is hashed here, before anything is made: a
	// gamed tree costs no container.
	if spec.TreeDir != "" {
		var err error
		if res.Hashes, err = hashTreeFiles(spec.TreeDir, spec.Guard); err != nil {
			return res, err
		}
		if !guarded(spec.Guard, res.Hashes) {
			return res, nil
		}
	}
	img, err := c.Engine.InspectImage(ctx, spec.Image)
	if err != nil {
		return res, imageError(spec.Image, err)
	}
	if spec.Volume != "" {
		if _, err := volumeLabels(ctx, c.Engine, spec.Volume); err != nil {
			if errors.Is(err, daemon.ErrNotFound) {
				return res, fmt.Errorf("%w: %s", ErrVolumeMissing, spec.Volume)
			}
			return res, err
		}
		if err := volstore.Ensure(spec.Volume); err != nil {
			return res, err
		}
	}
	ac, err := newAcceptanceCheck(c.Engine, spec, img.ID)
	if err != nil {
		return res, err
	}
	defer ac.remove()
	if err := ac.fill(ctx); err != nil {
		return res, err
	}
	if err := ac.uploadTree(ctx); err != nil {
		return res, err
	}
	if spec.Volume != "" {
		if res.Hashes, err = ac.hash(ctx); err != nil {
			return res, err
		}
		if !guarded(spec.Guard, res.Hashes) {
			return res, nil
		}
	}
	id, err := ac.createRun(ctx)
	if err != nil {
		return res, err
	}
	res.Ran = true
	return res, runAttached(ctx, ac.eng, id, ac.timeout(), ac.spec.OutputCap, &res)
}

// PreparedAcceptance is an acceptance check of a tree that does not exist
// yet (a run still working): its volumes, its checker and its container
// are made ahead, so that scoring the tree, once it is there, costs only
// its upload and the command. Run it once; Remove it always.
type PreparedAcceptance struct {
	ac    *acceptanceCheck
	runID string
	// armed is the command's container, started and attached, its shell
	// waiting on stdin for the line that lets the command run.
	armed *attachedOutput
	once  sync.Once
}

// Prepare makes the check spec ready for a tree directory given to Run
// (spec.TreeDir and spec.Volume are not set: a kept volume's check cannot
// be prepared): the volumes made and the checker uploaded, and the
// command's container started, its shell held on stdin until Run has
// uploaded the tree and sends the line that lets the command go. Nothing
// of the worker's exists in the container before that. Everything made
// is removed by Remove, or here when Prepare fails.
func (c AcceptanceChecker) Prepare(ctx context.Context, spec AcceptanceSpec) (*PreparedAcceptance, error) {
	if spec.TreeDir != "" || spec.Volume != "" {
		return nil, fmt.Errorf("%w: a prepared check is given its tree directory when it runs", ErrAcceptanceSpec)
	}
	if spec.Acceptance == nil || strings.TrimSpace(spec.Command) == "" {
		return nil, fmt.Errorf("%w: no checker or no command", ErrAcceptanceSpec)
	}
	img, err := c.Engine.InspectImage(ctx, spec.Image)
	if err != nil {
		return nil, imageError(spec.Image, err)
	}
	ac, err := newAcceptanceCheck(c.Engine, spec, img.ID)
	if err != nil {
		return nil, err
	}
	p := &PreparedAcceptance{ac: ac}
	if err := ac.fill(ctx); err != nil {
		p.Remove()
		return nil, err
	}
	ac.held = true
	if p.runID, err = ac.createRun(ctx); err != nil {
		p.Remove()
		return nil, err
	}
	if p.armed, err = attachOutput(ctx, ac.eng, p.runID, spec.OutputCap); err != nil {
		p.Remove()
		return nil, err
	}
	if err := ac.eng.StartContainer(ctx, p.runID); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

// Run scores the tree in treeDir (the run's exported worktree): its
// guarded files are hashed here (a gamed tree runs nothing), the tree is
// uploaded, and the command runs in the prepared container. A second Run
// is refused.
func (p *PreparedAcceptance) Run(ctx context.Context, treeDir string) (AcceptanceResult, error) {
	var res AcceptanceResult
	ran := false
	p.once.Do(func() { ran = true })
	if !ran {
		return res, fmt.Errorf("%w: a prepared check runs once", ErrAcceptanceSpec)
	}
	if treeDir == "" {
		return res, fmt.Errorf("%w: no tree directory", ErrAcceptanceSpec)
	}
	ac := p.ac
	ac.spec.TreeDir = treeDir
	var err error
	if res.Hashes, err = hashTreeFiles(ac.spec.TreeDir, ac.spec.Guard); err != nil {
		return res, err
	}
	if !guarded(ac.spec.Guard, res.Hashes) {
		return res, nil
	}
	if err := ac.uploadTree(ctx); err != nil {
		return res, err
	}
	// The line lets the held shell go on; closing stdin gives the command
	// an empty one, as an unheld check's has.
	if _, err := io.WriteString(p.armed.stream, "go\n"); err != nil {
		return res, fmt.Errorf("start the acceptance command: %w", err)
	}
	if err := p.armed.stream.CloseWrite(); err != nil {
		return res, fmt.Errorf("start the acceptance command: %w", err)
	}
	res.Ran = true
	return res, p.armed.wait(ctx, ac.timeout(), &res)
}

// Remove removes what the check made, whatever its context: it may run
// after the score is taken, off the caller's path. A container still
// held is removed without its command ever running.
func (p *PreparedAcceptance) Remove() {
	if p.armed != nil {
		_ = p.armed.stream.Close() // the container goes next
	}
	p.ac.remove()
}

// guarded reports whether every guarded path is a file with the hash it
// must have.
func guarded(guard, hashes map[string]string) bool {
	for p, want := range guard {
		if got, ok := hashes[p]; !ok || got != want {
			return false
		}
	}
	return true
}

// hashTreeFiles is the SHA-256 of every path of guard that is a regular
// file in the tree at dir, read without leaving it (a link out of the
// tree, such as to /acceptance, reads as missing).
func hashTreeFiles(dir string, guard map[string]string) (map[string]string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("hash the guarded files of %s: %w", dir, err)
	}
	defer func() { _ = root.Close() }() // read-only
	sums := map[string]string{}
	for p := range guard {
		if !fs.ValidPath(p) {
			continue
		}
		if fi, err := root.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		f, err := root.Open(p)
		if err != nil {
			continue
		}
		h := sha256.New()
		_, err = io.Copy(h, io.LimitReader(f, maxHashedFile+1))
		_ = f.Close() // read-only
		if err != nil {
			return nil, fmt.Errorf("hash %s in %s: %w", p, dir, err)
		}
		sums[p] = hex.EncodeToString(h.Sum(nil))
	}
	return sums, nil
}

// acceptanceCheck is one check's objects while it runs.
type acceptanceCheck struct {
	eng    daemon.Engine
	spec   AcceptanceSpec
	image  string
	name   string
	labels map[string]string
	// work is the volume at /work; ownWork when the check made it.
	work, checker string
	ownWork       bool
	// fillID is the container the volumes are filled and read through.
	fillID string
	// held makes the command's container wait for a line on stdin
	// (PreparedAcceptance).
	held bool
	// made are the containers and volumes made so far, for removal.
	containers, volumes []string
}

func newAcceptanceCheck(eng daemon.Engine, spec AcceptanceSpec, imageID string) (*acceptanceCheck, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("name an acceptance check: %w", err)
	}
	name := "dw-accept-" + hex.EncodeToString(b[:])
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelAcceptance] = name
	ac := &acceptanceCheck{eng: eng, spec: spec, image: imageID, name: name, labels: labels, checker: name + "-acceptance", work: spec.Volume}
	if spec.Volume == "" {
		ac.work, ac.ownWork = name+"-work", true
	}
	return ac, nil
}

// fill makes the check's volumes and uploads the checker into them,
// through a container that never starts (the checker root's, read-only to
// everyone); the tree, when it comes from a directory, is uploaded through
// the same container by uploadTree.
func (ac *acceptanceCheck) fill(ctx context.Context) error {
	vols := []string{ac.checker}
	if ac.ownWork {
		vols = append(vols, ac.work)
	}
	for _, v := range vols {
		if err := ac.eng.CreateVolume(ctx, v, ac.labels); err != nil {
			return err
		}
		ac.volumes = append(ac.volumes, v)
	}
	fill := ac.lockedDown([]daemon.Mount{
		{Volume: ac.work, Target: workDir, ReadOnly: !ac.ownWork},
		{Volume: ac.checker, Target: acceptanceFillDir},
	})
	fill.Entrypoint = []string{"/bin/true"}
	id, err := ac.create(ctx, ac.name+"-fill", fill)
	if err != nil {
		return err
	}
	ac.fillID = id
	return ac.uploadWith(ctx, id, acceptanceFillDir, func(w io.Writer) error { return writeChecker(w, ac.spec.Acceptance) })
}

// uploadTree copies a tree directory (the worker's files) into the
// check's own work volume; a kept volume needs nothing.
func (ac *acceptanceCheck) uploadTree(ctx context.Context) error {
	if !ac.ownWork {
		return nil
	}
	return ac.uploadWith(ctx, ac.fillID, workDir, func(w io.Writer) error { return writeWorkTree(w, ac.spec.TreeDir) })
}

// hash returns the SHA-256 of every guarded path that is a regular file in
// the volume, read through the fill container: each top-level entry a
// guarded path is under is downloaded whole, and nothing in it is
// followed, so a link (to the checker's mount, say) is never a file.
func (ac *acceptanceCheck) hash(ctx context.Context) (map[string]string, error) {
	sums := map[string]string{}
	fill := ac.fillID
	tops := map[string]bool{}
	for p := range ac.spec.Guard {
		if fs.ValidPath(p) && p != "." {
			top, _, _ := strings.Cut(p, "/")
			tops[top] = true
		}
	}
	for top := range tops {
		err := ac.eng.Download(ctx, fill, path.Join(workDir, top), func(r io.Reader) error {
			return hashArchived(r, ac.spec.Guard, sums)
		})
		if err != nil && !errors.Is(err, daemon.ErrNotFound) {
			return nil, err
		}
	}
	return sums, nil
}

// hashArchived adds to sums the SHA-256 of every regular file of the
// archive whose name guard holds.
func hashArchived(r io.Reader, guard, sums map[string]string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the guarded files: %w", err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if _, ok := guard[name]; !ok || hdr.Typeflag != tar.TypeReg || hdr.Size > maxHashedFile {
			continue
		}
		h := sha256.New()
		if _, err := io.Copy(h, tr); err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		sums[name] = hex.EncodeToString(h.Sum(nil))
	}
}

// timeout is the command's deadline.
func (ac *acceptanceCheck) timeout() time.Duration {
	if ac.spec.Timeout <= 0 {
		return DefaultAcceptanceTimeout
	}
	return ac.spec.Timeout
}

// createRun creates the container the command runs in (not started).
func (ac *acceptanceCheck) createRun(ctx context.Context) (string, error) {
	spec := ac.lockedDown([]daemon.Mount{
		{Volume: ac.work, Target: workDir},
		{Volume: ac.checker, Target: acceptanceDir, ReadOnly: true},
	})
	// docker-init as pid 1 reaps what the checker leaves and, when the
	// shell ends, the container ends with every process in it (a
	// background server the checker started included).
	spec.Init = true
	spec.Tmpfs = map[string]string{"/tmp": acceptanceTmp}
	// The output is read from the attached stream; the daemon keeps none.
	spec.NoLogs, spec.Output = true, true
	spec.Env = []string{"PATH=" + pathEnvValue, "HOME=/tmp", "TMPDIR=/tmp", "LANG=C.UTF-8"}
	spec.Entrypoint = []string{"/bin/sh", "-c", "cd /work && " + ac.spec.Command}
	if ac.held {
		// A prepared check's shell waits for its line (an ended stdin
		// exits 125 without running anything).
		spec.Stdin = true
		spec.Entrypoint = []string{"/bin/sh", "-c", "read -r _ || exit 125; cd /work && " + ac.spec.Command}
	}
	return ac.create(ctx, ac.name, spec)
}

// lockedDown is the spec of both containers of a check: the image, the
// worker's user, the labels, no network, a read-only root, no
// capabilities, no new privileges, no init, the limits, and mounts.
func (ac *acceptanceCheck) lockedDown(mounts []daemon.Mount) daemon.ContainerSpec {
	return daemon.ContainerSpec{
		Image:        ac.image,
		User:         userSpec(),
		Labels:       ac.labels,
		Network:      "none",
		ReadOnlyRoot: true,
		CapDrop:      []string{"ALL"},
		SecurityOpt:  []string{"no-new-privileges"},
		Memory:       acceptanceMemory,
		NanoCPUs:     2e9,
		PidsLimit:    acceptancePids,
		Mounts:       mounts,
	}
}

// create creates a container of the check, remembered for removal.
func (ac *acceptanceCheck) create(ctx context.Context, name string, spec daemon.ContainerSpec) (string, error) {
	id, err := ac.eng.CreateContainer(ctx, name, spec)
	if id != "" {
		ac.containers = append(ac.containers, id)
	}
	return id, err
}

// uploadWith streams what write writes into dir of container id.
func (ac *acceptanceCheck) uploadWith(ctx context.Context, id, dir string, write func(io.Writer) error) error {
	pr, pw := io.Pipe()
	go func() { _ = pw.CloseWithError(write(pw)) }()
	err := ac.eng.Upload(ctx, id, dir, pr)
	_ = pr.CloseWithError(errors.New("upload ended")) // stops the writer if the daemon stopped reading
	return err
}

// remove removes the check's containers, then its volumes (never the
// run's), even when the caller's context is done.
func (ac *acceptanceCheck) remove() {
	ctx, cancel := cleanupContext()
	defer cancel()
	for _, id := range ac.containers {
		_ = ac.eng.RemoveContainer(ctx, id) // labelled: RemoveAcceptance finds a leftover
	}
	for _, v := range ac.volumes {
		_ = ac.eng.RemoveVolume(ctx, v, false)
	}
}

// runAttached starts the created container id with its output attached,
// waits for it at most timeout (then kills it) and records the outcome.
func runAttached(ctx context.Context, eng daemon.Engine, id string, timeout time.Duration, outputCap int, res *AcceptanceResult) error {
	a, err := attachOutput(ctx, eng, id, outputCap)
	if err != nil {
		return err
	}
	defer func() { _ = a.stream.Close() }() // the container is gone or going
	if err := eng.StartContainer(ctx, id); err != nil {
		return err
	}
	return a.wait(ctx, timeout, res)
}

// attachedOutput is an acceptance container's attached streams, its
// output copied into a capped buffer.
type attachedOutput struct {
	eng    daemon.Engine
	id     string
	stream daemon.Stream
	out    *headTail
	copied chan struct{}
}

// attachOutput attaches to the created container id before it starts,
// so that none of its output is lost.
func attachOutput(ctx context.Context, eng daemon.Engine, id string, outputCap int) (*attachedOutput, error) {
	if outputCap <= 0 {
		outputCap = DefaultAcceptanceOutput
	}
	out := newHeadTail(outputCap)
	// stdout and stderr merge into out; as two pipes of the command they
	// never had an order between them.
	stream, err := eng.Attach(ctx, id, out)
	if err != nil {
		return nil, err
	}
	a := &attachedOutput{eng: eng, id: id, stream: stream, out: out, copied: make(chan struct{})}
	go func() {
		defer close(a.copied)
		_, _ = io.Copy(out, stream)
	}()
	return a, nil
}

// wait waits for the running container at most timeout (then kills it)
// and records the outcome and the output.
func (a *attachedOutput) wait(ctx context.Context, timeout time.Duration, res *AcceptanceResult) error {
	started := time.Now()
	// Waiting for a container that does not run returns at once with its
	// exit code: a quick exit is not missed.
	code, err := a.eng.WaitStopped(ctx, a.id, timeout)
	if errors.Is(err, daemon.ErrTimedOut) && ctx.Err() == nil {
		res.TimedOut = true
		kctx, cancel := cleanupContext()
		_ = a.eng.KillContainer(kctx, a.id)
		code, err = a.eng.WaitStopped(kctx, a.id, daemon.LifecycleTimeout)
		cancel()
	}
	res.Duration = time.Since(started)
	if err != nil {
		return fmt.Errorf("wait for acceptance container %s: %w", a.id, err)
	}
	res.ExitCode = int(code)
	// The stream ends with the container; a process that escaped it
	// cannot hold the check up for more than a moment.
	select {
	case <-a.copied:
	case <-time.After(5 * time.Second):
		_ = a.stream.Close()
		<-a.copied
	}
	res.Output, res.Truncated = a.out.bytes()
	return nil
}

// RemoveAcceptance removes the containers and volumes of acceptance checks
// that carry every label of selector (all of them when it is empty): what
// checks a killed process ran left behind. It returns the names of what it
// removed. Checks still running under selector are removed too; the
// caller chooses a selector only its own checks carry.
func (c AcceptanceChecker) RemoveAcceptance(ctx context.Context, selector map[string]string) ([]string, error) {
	list, err := c.Engine.ListContainers(ctx, LabelAcceptance)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, ct := range list {
		if !carries(ct.Labels, selector) {
			continue
		}
		name := ct.Name
		if name == "" {
			name = ct.ID
		}
		if err := c.Engine.RemoveContainer(ctx, ct.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	vols, err := c.Engine.ListVolumes(ctx, LabelAcceptance)
	if err != nil {
		return removed, errors.Join(append(errs, err)...)
	}
	for _, v := range vols {
		if !carries(v.Labels, selector) {
			continue
		}
		if err := c.Engine.RemoveVolume(ctx, v.Name, false); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, v.Name)
	}
	return removed, errors.Join(errs...)
}

// carries reports whether labels holds every label of selector.
func carries(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// writeChecker writes fsys as a tar stream of root's files, readable (and,
// where they were, executable) by everyone and writable by no one.
func writeChecker(w io.Writer, fsys fs.FS) error {
	tw := tar.NewWriter(w)
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: p, ModTime: uploadModTime, Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o555
			if p == "." {
				hdr.Name = "/" // the volume's root itself (see uploadEntry)
			} else {
				hdr.Name += "/"
			}
			return tw.WriteHeader(hdr)
		case !d.Type().IsRegular():
			return fmt.Errorf("checker file %s is not a regular file", p)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o444, int64(len(b))
		if info, err := d.Info(); err == nil && info.Mode()&0o111 != 0 {
			hdr.Mode = 0o555
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("archive the checker: %w", err)
	}
	return tw.Close()
}

// writeWorkTree writes the tree at dir as a tar stream owned by the
// worker's user, as it was at /work in the run: directories, regular files
// and symbolic links (never followed), modes kept but set-id bits; the
// top-level .git (the host worktree's link to its repository) and
// anything else (sockets, devices) left out.
func writeWorkTree(w io.Writer, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("archive the tree %s: %w", dir, err)
	}
	defer func() { _ = root.Close() }() // read-only
	tw := tar.NewWriter(w)
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == ".git" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{
			Name: p, Mode: int64(info.Mode().Perm()), Uid: workerUID, Gid: workerGID,
			ModTime: info.ModTime(), Format: tar.FormatPAX,
		}
		switch {
		case p == ".":
			hdr.Name, hdr.Typeflag = "/", tar.TypeDir
			return tw.WriteHeader(hdr)
		case d.IsDir():
			hdr.Name, hdr.Typeflag = p+"/", tar.TypeDir
			return tw.WriteHeader(hdr)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
			return tw.WriteHeader(hdr)
		case !info.Mode().IsRegular():
			return nil
		}
		f, err := root.Open(p)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // read-only
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		// The size is in the header: a file that grows while it is copied
		// fails the archive rather than corrupting it.
		_, err = io.Copy(tw, io.LimitReader(f, info.Size()))
		return err
	})
	if err != nil {
		return fmt.Errorf("archive the tree %s: %w", dir, err)
	}
	return tw.Close()
}

// headTail keeps the first and the last half of what is written to it.
type headTail struct {
	mu         sync.Mutex
	half       int
	head, tail []byte
	dropped    bool
}

func newHeadTail(limit int) *headTail { return &headTail{half: max(limit/2, 1)} }

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	if room := h.half - len(h.head); room > 0 {
		take := min(room, len(p))
		h.head = append(h.head, p[:take]...)
		p = p[take:]
	}
	if len(p) == 0 {
		return n, nil
	}
	h.tail = append(h.tail, p...)
	if over := len(h.tail) - h.half; over > 0 {
		h.tail = append(h.tail[:0], h.tail[over:]...)
		h.dropped = true
	}
	return n, nil
}

// bytes is what was kept, with a marker where output was left out.
func (h *headTail) bytes() ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]byte{}, h.head...)
	if h.dropped {
		out = append(out, "\n[output truncated]\n"...)
	}
	return append(out, h.tail...), h.dropped
}
