package workspace

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// fakeEngine is a Docker daemon in memory, for the workspace's unit tests.
// A volume is a directory of the test's; a container is its spec, with its
// mounts resolved to those directories for uploads, downloads and path
// lookups (a volume a create names that does not exist is made empty and
// unlabelled, as the daemon makes it). Started, a container does what the
// workspace's containers do:
//
//   - the tool server (the worker, the measurer) is toolbox.Serve in this
//     process, over the attached stream, on the work volume's directory,
//     with a shell that runs the worker's repository script (which makes
//     /gitdir, not here) as a checkout of base from repo (when set) into
//     an empty tree;
//   - the egress proxy writes its ready line, then the decisions in
//     egressDecisions, and runs until killed;
//   - the setup exits setupExit with setupOutput;
//   - a reap marker empties the volume it mounts and exits reapExit;
//   - anything else exits 0.
//
// Every call is recorded, in order, as "Method name" (calls); a call found
// in fail returns that error and does nothing. The tool server must never
// be asked to verify: verify empties /tmp, which here is the machine's.
type fakeEngine struct {
	t    *testing.T
	dir  string // volumes live under it
	bash string // the tool servers' shell
	// repo and base are what the worker's repository script checks out.
	repo, base string

	mu         sync.Mutex
	log        []string
	fail       map[string]error
	images     map[string]daemon.Image
	volumes    map[string]*fakeVolume
	containers map[string]*fakeContainer // by id
	ids        map[string]string         // name → id
	subs       []*fakeSub
	serial     int
	closed     int
	local      bool
	// What containers do when started (see the type's comment), and what
	// Top lists of a tool server's container.
	setupExit       int64
	setupOutput     string
	reapExit        int
	egressDecisions []string
	top             []string
	// downloadDelay makes every download take at least that long (a big
	// tree's); removeBudgets are the time each RemoveContainer's context
	// had left when it was called (0: no deadline).
	downloadDelay time.Duration
	removeBudgets []time.Duration
}

// fakeVolume is a volume: the directory it is, and the ownership the
// uploads into it gave its paths (relative; "." is its root).
type fakeVolume struct {
	name    string
	labels  map[string]string
	dir     string
	created time.Time
	owners  map[string][2]int
}

// fakeContainer is a container and what runs in it.
type fakeContainer struct {
	id, name string
	spec     daemon.ContainerSpec
	created  time.Time
	state    daemon.State
	stopped  chan struct{} // closed when a started container stops
	// stdin and stdout are the attached stream's other ends, once
	// attached: what the container reads and writes.
	stdin  *io.PipeReader
	stdout *io.PipeWriter
	// cancel stops what runs in it.
	cancel context.CancelFunc
}

// fakeSub is an Events subscriber.
type fakeSub struct {
	ctx     context.Context
	label   string
	actions []string
	ch      chan daemon.Event
}

var _ daemon.Engine = (*fakeEngine)(nil)

// newFakeEngine is an empty daemon holding images (reference → image).
func newFakeEngine(t *testing.T, images map[string]daemon.Image) *fakeEngine {
	t.Helper()
	dir := t.TempDir()
	bash := filepath.Join(dir, "bash")
	// The worker's repository script makes /gitdir, which is not here:
	// it checks the base tree out of the test's repository instead, into
	// an empty tree (a reset finds the tree there).
	script := "#!/bin/bash\n" +
		"case \"$2\" in *objects/info/alternates*)\n" +
		"  if [ -n \"$FAKE_REPO\" ] && [ -z \"$(ls -A)\" ]; then git -C \"$FAKE_REPO\" archive \"$FAKE_BASE\" | tar -x || exit 1; fi\n" +
		"  exit 0 ;;\n" +
		"esac\n" +
		"exec /bin/bash \"$@\"\n"
	if err := os.WriteFile(bash, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{
		t: t, dir: dir, bash: bash, fail: map[string]error{}, images: images,
		volumes: map[string]*fakeVolume{}, containers: map[string]*fakeContainer{}, ids: map[string]string{},
		top: []string{toolboxPath + " toolbox -root /work"},
	}
	t.Cleanup(f.stopAll)
	return f
}

// connect is the fake as an entry point's Connect.
func (f *fakeEngine) connect() (daemon.Engine, error) { return f, nil }

// failOn makes the call ("Method name") fail with err.
func (f *fakeEngine) failOn(call string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[call] = err
}

// record notes a call and returns the error it is to fail with. The
// caller holds mu.
func (f *fakeEngine) record(method, name string) error {
	call := strings.TrimSpace(method + " " + name)
	f.log = append(f.log, call)
	return f.fail[call]
}

// calls are the calls made so far.
func (f *fakeEngine) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// stopAll stops what still runs, when the test ends.
func (f *fakeEngine) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		f.stop(c, 137)
	}
}

// hasVolume reports whether the named volume exists.
func (f *fakeEngine) hasVolume(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.volumes[name]
	return ok
}

// volumeDir is the directory the named volume is ("" when there is none).
func (f *fakeEngine) volumeDir(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.volumes[name]; ok {
		return v.dir
	}
	return ""
}

// containerNames are the names of the containers there are.
func (f *fakeEngine) containerNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, c := range f.containers {
		names = append(names, c.name)
	}
	slices.Sort(names)
	return names
}

// closes counts the calls of Close.
func (f *fakeEngine) closes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// nameOf is what a call records for a container: its name.
func (f *fakeEngine) nameOf(id string) string {
	if c := f.find(id); c != nil {
		return c.name
	}
	return id
}

// find is the container with id or name, or nil. The caller holds mu.
func (f *fakeEngine) find(id string) *fakeContainer {
	if c, ok := f.containers[id]; ok {
		return c
	}
	return f.containers[f.ids[id]]
}

func notFound(what, name string) error {
	return fmt.Errorf("%s %s: %w", what, name, daemon.ErrNotFound)
}

func (f *fakeEngine) Host() string { return "unix:///fake/docker.sock" }
func (f *fakeEngine) Local() bool  { return f.local }

func (f *fakeEngine) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return nil
}

func (f *fakeEngine) ServerVersion(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "28.0.0", f.record("ServerVersion", "")
}

func (f *fakeEngine) DockerRoot(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dir, f.record("DockerRoot", "")
}

func (f *fakeEngine) InspectImage(_ context.Context, ref string) (daemon.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("InspectImage", ref); err != nil {
		return daemon.Image{}, err
	}
	img, ok := f.images[ref]
	if !ok {
		return daemon.Image{}, notFound("image", ref)
	}
	return img, nil
}

func (f *fakeEngine) CreateVolume(_ context.Context, name string, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CreateVolume", name); err != nil {
		return err
	}
	f.volume(name, labels, "")
	return nil
}

func (f *fakeEngine) CreateBoundVolume(_ context.Context, name string, labels map[string]string, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CreateBoundVolume", name); err != nil {
		return err
	}
	f.volume(name, labels, dir)
	return nil
}

// volume is the named volume, made (in dir, or a directory of its own)
// with labels unless it exists: the daemon hands out an existing volume
// as it is. The caller holds mu.
func (f *fakeEngine) volume(name string, labels map[string]string, dir string) *fakeVolume {
	if v, ok := f.volumes[name]; ok {
		return v
	}
	if dir == "" {
		dir = filepath.Join(f.dir, "volumes", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			f.t.Error(err)
		}
	}
	v := &fakeVolume{name: name, labels: labels, dir: dir, created: time.Now(), owners: map[string][2]int{}}
	f.volumes[name] = v
	return v
}

func (f *fakeEngine) InspectVolume(_ context.Context, name string) (daemon.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("InspectVolume", name); err != nil {
		return daemon.Volume{}, err
	}
	v, ok := f.volumes[name]
	if !ok {
		return daemon.Volume{}, notFound("volume", name)
	}
	return v.describe(), nil
}

func (v *fakeVolume) describe() daemon.Volume {
	return daemon.Volume{Name: v.name, Labels: v.labels, Driver: "local", Mountpoint: v.dir, Created: v.created}
}

// hasLabel reports whether labels carry label (a key, or key=value).
func hasLabel(labels map[string]string, label string) bool {
	k, v, withValue := strings.Cut(label, "=")
	have, ok := labels[k]
	return ok && (!withValue || have == v)
}

func (f *fakeEngine) ListVolumes(_ context.Context, label string) ([]daemon.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListVolumes", label); err != nil {
		return nil, err
	}
	var out []daemon.Volume
	for _, v := range f.volumes {
		if hasLabel(v.labels, label) {
			out = append(out, v.describe())
		}
	}
	return out, nil
}

func (f *fakeEngine) RemoveVolume(_ context.Context, name string, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("RemoveVolume", name); err != nil {
		return err
	}
	v, ok := f.volumes[name]
	if !ok {
		return nil
	}
	for _, c := range f.containers {
		if slices.ContainsFunc(c.spec.Mounts, func(m daemon.Mount) bool { return m.Volume == name }) {
			return fmt.Errorf("remove volume %s: in use by %s: %w", name, c.name, daemon.ErrConflict)
		}
	}
	delete(f.volumes, name)
	if strings.HasPrefix(v.dir, f.dir) {
		return os.RemoveAll(v.dir)
	}
	return nil
}

func (f *fakeEngine) CreateContainer(_ context.Context, name string, spec daemon.ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CreateContainer", name); err != nil {
		return "", err
	}
	if _, taken := f.ids[name]; taken && name != "" {
		return "", fmt.Errorf("create container %s: name in use: %w", name, daemon.ErrConflict)
	}
	for _, m := range spec.Mounts {
		f.volume(m.Volume, nil, "")
	}
	f.serial++
	c := &fakeContainer{
		id: fmt.Sprintf("%064x", f.serial), name: name, spec: spec, created: time.Now(),
		state: daemon.State{Status: "created"}, stopped: make(chan struct{}),
	}
	if name == "" {
		c.name = c.id[:12]
	}
	f.containers[c.id] = c
	f.ids[c.name] = c.id
	return c.id, nil
}

func (f *fakeEngine) InspectContainer(_ context.Context, id string) (daemon.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("InspectContainer", f.nameOf(id)); err != nil {
		return daemon.Container{}, err
	}
	c := f.find(id)
	if c == nil {
		return daemon.Container{}, notFound("container", id)
	}
	return c.describe(), nil
}

func (c *fakeContainer) describe() daemon.Container {
	return daemon.Container{ID: c.id, Name: c.name, Labels: c.spec.Labels, Created: c.created, State: c.state}
}

func (f *fakeEngine) ListContainers(_ context.Context, label string) ([]daemon.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListContainers", label); err != nil {
		return nil, err
	}
	var out []daemon.Container
	for _, c := range f.containers {
		if hasLabel(c.spec.Labels, label) {
			d := c.describe()
			d.State = daemon.State{Status: c.state.Status}
			out = append(out, d)
		}
	}
	return out, nil
}

// kind is what a container runs.
func (c *fakeContainer) kind() string {
	switch {
	case c.spec.Labels[daemon.LabelReap] != "":
		return "reap"
	case len(c.spec.Entrypoint) > 1 && c.spec.Entrypoint[0] == toolboxPath && c.spec.Entrypoint[1] == "__egress":
		return "setup"
	case len(c.spec.Cmd) > 0 && c.spec.Cmd[0] == "toolbox":
		return "toolbox"
	case len(c.spec.Cmd) > 0 && c.spec.Cmd[0] == "__egress":
		return "egress"
	}
	return "true"
}

// dirOf is the directory of the volume mounted at target in c.
func (f *fakeEngine) dirOf(c *fakeContainer, target string) string {
	for _, m := range c.spec.Mounts {
		if m.Target == target {
			return f.volumes[m.Volume].dir
		}
	}
	return ""
}

func (f *fakeEngine) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("StartContainer", f.nameOf(id)); err != nil {
		return err
	}
	c := f.find(id)
	if c == nil {
		return notFound("container", id)
	}
	if c.state.Running {
		return nil
	}
	c.state = daemon.State{Status: "running", Running: true}
	c.stopped = make(chan struct{})
	ctx, cancel := context.WithCancel(f.t.Context())
	c.cancel = cancel
	switch c.kind() {
	case "toolbox":
		f.serve(ctx, c)
	case "egress":
		f.proxy(ctx, c)
	case "setup":
		f.stop(c, f.setupExit)
	case "reap":
		if work := f.dirOf(c, workDir); work != "" {
			entries, _ := os.ReadDir(work)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(work, e.Name()))
			}
		}
		f.stop(c, int64(f.reapExit))
	default:
		f.stop(c, 0)
	}
	return nil
}

// serve runs the tool server of c over its attached stream: one whose
// stdin is not attached ends at once, as the real one does. The caller
// holds mu.
func (f *fakeEngine) serve(ctx context.Context, c *fakeContainer) {
	in, out := c.stdin, c.stdout
	if in == nil {
		f.stop(c, 0)
		return
	}
	cfg := toolbox.ServerConfig{
		Root: f.dirOf(c, workDir), Display: workDir, Bash: f.bash,
		Env: []string{
			"PATH=" + pathEnvValue, "HOME=" + f.t.TempDir(), "LANG=C.UTF-8",
			"FAKE_REPO=" + f.repo, "FAKE_BASE=" + f.base,
		},
		MeasureOnly: slices.Contains(c.spec.Cmd, "-measure-only"),
	}
	go func() {
		err := toolbox.Serve(ctx, in, out, cfg)
		_ = out.CloseWithError(err)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.stop(c, 0)
	}()
}

// proxy plays the egress proxy of c: ready, its decisions, then nothing
// until it is killed. The caller holds mu.
func (f *fakeEngine) proxy(ctx context.Context, c *fakeContainer) {
	out := c.stdout
	lines := append([]string{egress.Ready}, f.egressDecisions...)
	go func() {
		if out == nil {
			return
		}
		for _, l := range lines {
			if _, err := io.WriteString(out, l+"\n"); err != nil {
				return
			}
		}
		<-ctx.Done()
		_ = out.Close()
	}()
}

// stop ends what runs in c with code, if it runs. The caller holds mu.
func (f *fakeEngine) stop(c *fakeContainer, code int64) {
	if c.cancel != nil {
		c.cancel()
	}
	if c.stdout != nil {
		_ = c.stdout.Close()
	}
	if c.stdin != nil {
		_ = c.stdin.Close()
	}
	if c.state.Running || c.state.Status == "created" {
		c.state = daemon.State{Status: "exited", ExitCode: int(code)}
		select {
		case <-c.stopped:
		default:
			close(c.stopped)
		}
	}
}

func (f *fakeEngine) KillContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("KillContainer", f.nameOf(id)); err != nil {
		return err
	}
	if c := f.find(id); c != nil && c.state.Running {
		f.stop(c, 137)
	}
	return nil
}

// crash ends the named container as a process dying in it would, and
// reports its death to the events' subscribers.
func (f *fakeEngine) crash(name string, oom bool) {
	f.mu.Lock()
	c := f.find(name)
	f.stop(c, 137)
	c.state.OOMKilled = oom
	subs := slices.Clone(f.subs)
	f.mu.Unlock()
	actions := []string{daemon.ActionDie}
	if oom {
		actions = []string{daemon.ActionOOM, daemon.ActionDie}
	}
	for _, a := range actions {
		for _, s := range subs {
			if hasLabel(c.spec.Labels, s.label) && slices.Contains(s.actions, a) {
				select {
				case s.ch <- daemon.Event{ContainerID: c.id, Action: a}:
				case <-s.ctx.Done():
				}
			}
		}
	}
}

func (f *fakeEngine) WaitStopped(ctx context.Context, id string, limit time.Duration) (int64, error) {
	f.mu.Lock()
	err := f.record("WaitStopped", f.nameOf(id))
	c := f.find(id)
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if c == nil {
		return 0, notFound("container", id)
	}
	f.mu.Lock()
	stopped := c.stopped
	running := c.state.Running
	f.mu.Unlock()
	if running {
		timer := time.NewTimer(limit)
		defer timer.Stop()
		select {
		case <-stopped:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timer.C:
			return 0, fmt.Errorf("wait for container %s: %w", c.name, daemon.ErrTimedOut)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(c.state.ExitCode), nil
}

func (f *fakeEngine) RemoveContainer(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	budget := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d)
	}
	f.removeBudgets = append(f.removeBudgets, budget)
	if err := f.record("RemoveContainer", f.nameOf(id)); err != nil {
		return err
	}
	c := f.find(id)
	if c == nil {
		return nil
	}
	f.stop(c, 137)
	delete(f.containers, c.id)
	delete(f.ids, c.name)
	return nil
}

func (f *fakeEngine) Attach(_ context.Context, id string, _ io.Writer) (daemon.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Attach", f.nameOf(id)); err != nil {
		return nil, err
	}
	c := f.find(id)
	if c == nil {
		return nil, notFound("container", id)
	}
	s := &fakeStream{}
	c.stdin, s.stdin = io.Pipe()
	s.stdout, c.stdout = io.Pipe()
	return s, nil
}

// fakeStream is the workspace's end of an attached container's streams.
type fakeStream struct {
	stdin  *io.PipeWriter
	stdout *io.PipeReader
}

func (s *fakeStream) Read(p []byte) (int, error)  { return s.stdout.Read(p) }
func (s *fakeStream) Write(p []byte) (int, error) { return s.stdin.Write(p) }
func (s *fakeStream) CloseRead() error            { return s.stdout.Close() }
func (s *fakeStream) CloseWrite() error           { return s.stdin.Close() }

func (s *fakeStream) Close() error {
	_ = s.stdin.Close()
	return s.stdout.Close()
}

// locate records the call method makes on path in container id, and
// resolves the path (resolve).
func (f *fakeEngine) locate(method, id, path string) (*fakeVolume, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(method, f.nameOf(id)+" "+path); err != nil {
		return nil, "", err
	}
	c := f.find(id)
	if c == nil {
		return nil, "", notFound("container", id)
	}
	return f.resolve(c, path)
}

// resolve is the volume path lies in, in c, and path relative to it ("."
// for the mount point itself). The caller holds mu.
func (f *fakeEngine) resolve(c *fakeContainer, path string) (*fakeVolume, string, error) {
	best := daemon.Mount{}
	for _, m := range c.spec.Mounts {
		if (path == m.Target || strings.HasPrefix(path, m.Target+"/")) && len(m.Target) > len(best.Target) {
			best = m
		}
	}
	if best.Target == "" {
		return nil, "", notFound("path", path+" in container "+c.name)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(path, best.Target), "/")
	if rel == "" {
		rel = "."
	}
	return f.volumes[best.Volume], rel, nil
}

func (f *fakeEngine) Upload(_ context.Context, id, dir string, r io.Reader) error {
	v, rel, err := f.locate("Upload", id, dir)
	if err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(rel, strings.TrimSuffix(hdr.Name, "/"))
		if hdr.Name == "/" {
			name = rel
		}
		if !filepath.IsLocal(name) && name != "." {
			return fmt.Errorf("upload member %q leaves the volume", hdr.Name)
		}
		path := filepath.Join(v.dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, path); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("upload member %q of type %c", hdr.Name, hdr.Typeflag)
		}
		if err := os.Chmod(path, fs.FileMode(hdr.Mode)&fs.ModePerm); err != nil {
			return err
		}
		f.mu.Lock()
		v.owners[name] = [2]int{hdr.Uid, hdr.Gid}
		f.mu.Unlock()
	}
}

func (f *fakeEngine) Download(_ context.Context, id, path string, fn func(io.Reader) error) error {
	v, rel, err := f.locate("Download", id, path)
	if err != nil {
		return err
	}
	root := filepath.Join(v.dir, rel)
	if _, err := os.Lstat(root); err != nil {
		return notFound("path", path)
	}
	f.mu.Lock()
	delay := f.downloadDelay
	f.mu.Unlock()
	pr, pw := io.Pipe()
	go func() {
		time.Sleep(delay) // the daemon reading a big tree, not synchronisation
		_ = pw.CloseWithError(f.writeArchive(pw, v, rel, filepath.Base(path)))
	}()
	err = fn(pr)
	_ = pr.Close()
	return err
}

// writeArchive writes rel of v as the daemon's archive, its members named
// from base.
func (f *fakeEngine) writeArchive(w io.Writer, v *fakeVolume, rel, base string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(filepath.Join(v.dir, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		inVolume, _ := filepath.Rel(v.dir, p)
		within, _ := filepath.Rel(filepath.Join(v.dir, rel), p)
		hdr.Name = filepath.ToSlash(filepath.Join(base, within))
		if d.IsDir() {
			hdr.Name += "/"
		}
		f.mu.Lock()
		owner := v.owners[inVolume]
		f.mu.Unlock()
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = owner[0], owner[1], "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		file, err := os.Open(p)
		if err != nil {
			return err
		}
		defer func() { _ = file.Close() }() // read-only
		_, err = io.Copy(tw, file)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func (f *fakeEngine) StatPath(_ context.Context, id, path string) (daemon.PathStat, error) {
	v, rel, err := f.locate("StatPath", id, path)
	if err != nil {
		return daemon.PathStat{}, err
	}
	fi, err := os.Lstat(filepath.Join(v.dir, rel))
	if err != nil {
		return daemon.PathStat{}, notFound("path", path)
	}
	return daemon.PathStat{Mode: fi.Mode(), Size: fi.Size()}, nil
}

func (f *fakeEngine) Top(_ context.Context, id string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Top", f.nameOf(id)); err != nil {
		return nil, err
	}
	if c := f.find(id); c == nil || !c.state.Running {
		return nil, fmt.Errorf("container %s is not running: %w", id, daemon.ErrConflict)
	}
	return slices.Clone(f.top), nil
}

func (f *fakeEngine) Logs(_ context.Context, id string, out io.Writer) error {
	f.mu.Lock()
	err := f.record("Logs", f.nameOf(id))
	output := f.setupOutput
	f.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, output)
	return err
}

func (f *fakeEngine) Events(ctx context.Context, label string, actions ...string) (<-chan daemon.Event, <-chan error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := make(chan error, 1)
	if err := f.record("Events", label); err != nil {
		errs <- err
		return nil, errs
	}
	s := &fakeSub{ctx: ctx, label: label, actions: actions, ch: make(chan daemon.Event)}
	f.subs = append(f.subs, s)
	return s.ch, errs
}
