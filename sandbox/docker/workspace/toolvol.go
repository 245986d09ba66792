package workspace

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// The tool server lives in a volume shared by every run of the same build
// (the toolbox volume): made once, by the first run that needs it, and
// mounted read-only by every container since. Each run uploads only its
// base pack, into its own tools volume.
//
// The volume is named by the build's content hash (toolboxKey) and carries
// the whole hash as its dirtywork.toolbox label. It is filled through a
// fill container that is created, never started, and mounts it writable:
// the fill container's name is the same for every run of the build, so the
// daemon lets exactly one run create it, and that run alone writes into the
// volume. It uploads the binary (root's, mode 0555) and, once that upload
// succeeded, the marker (root's, 0444, holding the hash); a volume without
// the marker is never used, and a filler that finds the marker writes
// nothing. Every container that mounts the volume is checked before it
// starts (checkToolbox): the volume's label, the marker's content and
// ownership, and the binary's size and mode. A volume that fails the check
// (removed and made again empty by a container's create, or never finished)
// is filled again and the container made anew.
const (
	// labelToolbox is the toolbox volume's label, and its fill
	// container's: the build's whole hash.
	labelToolbox = "dirtywork.toolbox"
	// labelFillHost and labelFillPID say which process holds a fill
	// container, so that one left by a process that died is known.
	labelFillHost = "dirtywork.toolbox.host"
	labelFillPID  = "dirtywork.toolbox.pid"
	// toolboxVolumePrefix starts every toolbox volume's name.
	toolboxVolumePrefix = "dw-toolbox-"
	// toolboxMarker is the marker's name in the volume.
	toolboxMarker = "complete"
	// toolboxKeyDomain starts what the key hashes: a volume of another
	// layout is another volume.
	toolboxKeyDomain = "dirtywork toolbox volume 1\n"
	// fillTimeout bounds one fill; a fill container older than
	// fillStale, or whose process is gone, was left by a fill that
	// ended without removing it.
	fillTimeout = 2 * time.Minute
	fillStale   = fillTimeout + time.Minute
	// fillPoll is how often a run waiting for another's fill looks.
	fillPoll = 50 * time.Millisecond
	// toolboxKeep is how long a toolbox volume of another build stays
	// after it was made: runs of that build may still start.
	toolboxKeep = time.Hour
)

// toolboxVolume is the toolbox volume of one tool server build.
type toolboxVolume struct {
	key  string // hex SHA-256 of toolboxKeyDomain and the binary
	name string // dw-toolbox-<key's first 32 digits>
	size int64  // the binary's length
}

// toolboxVolumeOf names the toolbox volume of tb's build, hashing it.
func toolboxVolumeOf(tb Toolbox) (toolboxVolume, error) {
	var before string
	if tb.Path != "" {
		if key, size, ok := rememberedKey(tb.Path); ok {
			return toolboxVolume{key: key, name: toolboxVolumePrefix + key[:32], size: size}, nil
		}
		before, _ = statLine(tb.Path)
	}
	h := sha256.New()
	_, _ = io.WriteString(h, toolboxKeyDomain)
	var size int64
	if tb.Path != "" {
		f, err := os.Open(tb.Path)
		if err != nil {
			return toolboxVolume{}, fmt.Errorf("read the tool server %s: %w", tb.Path, err)
		}
		size, err = io.Copy(h, f)
		_ = f.Close() // read-only
		if err != nil {
			return toolboxVolume{}, fmt.Errorf("read the tool server %s: %w", tb.Path, err)
		}
	} else {
		_, _ = h.Write(tb.Data)
		size = int64(len(tb.Data))
	}
	key := hex.EncodeToString(h.Sum(nil))
	if before != "" {
		rememberKey(tb.Path, key, before) // unless it changed as it was read
	}
	return toolboxVolume{key: key, name: toolboxVolumePrefix + key[:32], size: size}, nil
}

// ToolboxVolumeName is the name of the toolbox volume the runs of the
// dirtywork build at binary share (what a cleanup of that build removes).
func ToolboxVolumeName(binary string) (string, error) {
	v, err := toolboxVolumeOf(Toolbox{Path: binary})
	return v.name, err
}

// fillName is the fill container's name.
func (v toolboxVolume) fillName() string { return v.name + "-fill" }

// mount is the toolbox volume's mount: read-only, and never filled from
// the image (an empty volume stays empty, and fails the check).
func (v toolboxVolume) mount() daemon.Mount {
	return daemon.Mount{Volume: v.name, Target: toolboxDir, ReadOnly: true, NoCopy: true}
}

// errToolboxUnfit is a toolbox volume that fails the check.
var errToolboxUnfit = errors.New("the tool server volume is not as made")

// ensureToolbox makes sure the toolbox volume exists with its label,
// filling it when it does not; whether it holds the tool server is checked
// by each container that mounts it (checkToolbox).
func (w *Workspace) ensureToolbox(ctx context.Context) error {
	labels, err := volumeLabels(ctx, w.eng, w.names.Toolbox.name)
	switch {
	case err == nil && labels[labelToolbox] == w.names.Toolbox.key:
		return nil
	case err != nil && !errors.Is(err, daemon.ErrNotFound):
		return err
	}
	return w.fillToolbox(ctx)
}

// createWorkerContainer creates a container that mounts the toolbox
// volume and checks the volume through it; a volume that fails the check
// is filled again and the container made anew, once.
func (w *Workspace) createWorkerContainer(ctx context.Context, name string, spec daemon.ContainerSpec) (string, error) {
	for attempt := 0; ; attempt++ {
		id, err := w.eng.CreateContainer(ctx, name, spec)
		if err != nil {
			return "", err
		}
		err = w.checkToolbox(ctx, id)
		if err == nil {
			return id, nil
		}
		rctx, cancel := cleanupContext()
		rerr := w.eng.RemoveContainer(rctx, id)
		cancel()
		if !errors.Is(err, errToolboxUnfit) || attempt > 0 || rerr != nil {
			return "", err
		}
		if err := w.fillToolbox(ctx); err != nil {
			return "", err
		}
	}
}

// checkToolbox checks the toolbox volume through the created container
// id that mounts it (see the package's toolbox comment). A volume that is
// not as made is errToolboxUnfit.
func (w *Workspace) checkToolbox(ctx context.Context, id string) error {
	if w.store != nil {
		// The daemon's volumes are on this machine, in this mount
		// namespace, readable by this process (volumeStore's
		// conditions): the volume is read where it is. What fails
		// there (a daemon that maps ids, a driver of another kind) is
		// asked of the daemon, as for any other.
		if w.checkToolboxHere(ctx) == nil {
			return nil
		}
	}
	errs := make(chan error, 3)
	go func() {
		labels, err := volumeLabels(ctx, w.eng, w.names.Toolbox.name)
		if errors.Is(err, daemon.ErrNotFound) {
			err = fmt.Errorf("%w: volume %s is gone", errToolboxUnfit, w.names.Toolbox.name)
		}
		if err == nil && labels[labelToolbox] != w.names.Toolbox.key {
			err = fmt.Errorf("%w: volume %s is labelled %s=%q", errToolboxUnfit, w.names.Toolbox.name, labelToolbox, labels[labelToolbox])
		}
		errs <- err
	}()
	go func() { errs <- w.checkToolboxMarker(ctx, id) }()
	go func() { errs <- w.checkToolboxBinary(ctx, id) }()
	// An error of the daemon's goes before a volume that is unfit: only
	// the latter is filled again.
	var err error
	for range 3 {
		e := <-errs
		if e != nil && (err == nil || (errors.Is(err, errToolboxUnfit) && !errors.Is(e, errToolboxUnfit))) {
			err = e
		}
	}
	return err
}

// checkToolboxHere is checkToolbox for a volume this process can read at
// its mount point: the same checks, as the daemon's archives would show
// the files, without mounting the container.
func (w *Workspace) checkToolboxHere(ctx context.Context) error {
	v := w.names.Toolbox
	vol, err := w.eng.InspectVolume(ctx, v.name)
	switch {
	case errors.Is(err, daemon.ErrNotFound):
		return fmt.Errorf("%w: volume %s is gone", errToolboxUnfit, v.name)
	case err != nil:
		return err
	case vol.Labels[labelToolbox] != v.key:
		return fmt.Errorf("%w: volume %s is labelled %s=%q", errToolboxUnfit, v.name, labelToolbox, vol.Labels[labelToolbox])
	case vol.Driver != "local" || vol.Mountpoint == "":
		return fmt.Errorf("%w: volume %s has driver %q at %q", errToolboxUnfit, v.name, vol.Driver, vol.Mountpoint)
	}
	root, err := os.OpenRoot(vol.Mountpoint)
	if err != nil {
		return fmt.Errorf("%w: volume %s: %w", errToolboxUnfit, v.name, err)
	}
	defer func() { _ = root.Close() }() // read-only
	f, err := root.OpenFile(toolboxMarker, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("%w: volume %s holds no marker", errToolboxUnfit, v.name)
	}
	got, rerr := io.ReadAll(io.LimitReader(f, 1024))
	fi, serr := f.Stat()
	_ = f.Close() // read-only
	if rerr != nil || serr != nil || !rootOwned(fi, 0o444) || string(got) != v.key+"\n" {
		return fmt.Errorf("%w: the marker in volume %s is not the one its fill wrote", errToolboxUnfit, v.name)
	}
	fi, err = root.Lstat("dirtywork")
	if err != nil || !rootOwned(fi, 0o555) || fi.Size() != v.size {
		return fmt.Errorf("%w: the tool server in volume %s is not the one its fill wrote", errToolboxUnfit, v.name)
	}
	return nil
}

// rootOwned reports whether fi is a regular file of root's with mode perm.
func rootOwned(fi os.FileInfo, perm os.FileMode) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && fi.Mode().Perm() == perm && fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) == 0 &&
		st.Uid == 0 && st.Gid == 0
}

// checkToolboxMarker checks the marker: root's regular file, mode 0444,
// holding the key. One that is not there is errToolboxUnfit.
func (w *Workspace) checkToolboxMarker(ctx context.Context, id string) error {
	var got []byte
	var hdr *tar.Header
	err := w.eng.Download(ctx, id, toolboxDir+"/"+toolboxMarker, func(r io.Reader) error {
		tr := tar.NewReader(r)
		var err error
		if hdr, err = tr.Next(); err != nil {
			return fmt.Errorf("read the marker's archive: %w", err)
		}
		got, err = io.ReadAll(io.LimitReader(tr, 1024))
		return err
	})
	switch {
	case errors.Is(err, daemon.ErrNotFound):
		return fmt.Errorf("%w: volume %s holds no marker", errToolboxUnfit, w.names.Toolbox.name)
	case err != nil:
		return err
	case hdr.Typeflag != tar.TypeReg || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Mode&0o7777 != 0o444 || string(got) != w.names.Toolbox.key+"\n":
		return fmt.Errorf("%w: the marker in volume %s is not the one its fill wrote", errToolboxUnfit, w.names.Toolbox.name)
	}
	return nil
}

// checkToolboxBinary checks the tool server's size and mode.
func (w *Workspace) checkToolboxBinary(ctx context.Context, id string) error {
	st, err := w.eng.StatPath(ctx, id, toolboxPath)
	switch {
	case errors.Is(err, daemon.ErrNotFound):
		return fmt.Errorf("%w: volume %s holds no tool server", errToolboxUnfit, w.names.Toolbox.name)
	case err != nil:
		return err
	case !st.Mode.IsRegular() || st.Mode.Perm() != 0o555 || st.Size != w.names.Toolbox.size:
		return fmt.Errorf("%w: the tool server in volume %s is %v, %d bytes; want 0555, %d bytes",
			errToolboxUnfit, w.names.Toolbox.name, st.Mode, st.Size, w.names.Toolbox.size)
	}
	return nil
}

// fillToolbox fills the toolbox volume, made first when need be, unless
// it is whole already: through the fill container, which only one run can
// have at a time. A run that finds another's waits until it is gone (one
// left by a fill that ended without removing it is removed), then takes
// it itself.
func (w *Workspace) fillToolbox(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, fillTimeout)
	defer cancel()
	poll := time.NewTicker(fillPoll)
	defer poll.Stop()
	for {
		if err := createToolboxVolume(ctx, w.eng, w.names.Toolbox); err != nil {
			return err
		}
		id, err := w.eng.CreateContainer(ctx, w.names.Toolbox.fillName(), fillSpec(w.names.Toolbox, w.imageID))
		if err == nil {
			err = w.fillThrough(ctx, id)
			rctx, rcancel := cleanupContext()
			if rerr := w.eng.RemoveContainer(rctx, id); err == nil {
				err = rerr
			}
			rcancel()
			return err
		}
		if !errors.Is(err, daemon.ErrConflict) {
			return err
		}
		// Another run fills it: wait until its fill container is gone.
		for {
			gone, err := fillGone(ctx, w.eng, w.names.Toolbox.fillName())
			if err != nil {
				return err
			}
			if gone {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("wait for the fill of %s: %w", w.names.Toolbox.name, ctx.Err())
			case <-poll.C:
			}
		}
		// Then take it: a fill that ended finds the marker and writes
		// nothing, one that was abandoned is done over.
	}
}

// fillThrough writes the tool server and then the marker into the
// toolbox volume through the fill container id, unless the marker is
// there: a volume once whole is never written again.
func (w *Workspace) fillThrough(ctx context.Context, id string) error {
	err := w.checkToolboxMarker(ctx, id)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errToolboxUnfit) {
		return err
	}
	if _, serr := w.eng.StatPath(ctx, id, toolboxDir+"/"+toolboxMarker); !errors.Is(serr, daemon.ErrNotFound) {
		// A marker that is there but wrong is no fill's: never
		// written over.
		return err
	}
	tb := w.toolbox
	if tb.Path == "" && len(tb.Data) == 0 {
		if tb, err = w.cfg.Toolbox(w.arch); err != nil {
			return fmt.Errorf("tool server for image %s: %w", w.cfg.Image, err)
		}
	}
	data := tb.Data
	if tb.Path != "" {
		if data, err = os.ReadFile(tb.Path); err != nil {
			return fmt.Errorf("read the tool server %s: %w", tb.Path, err)
		}
	}
	// What is uploaded is what the volume is named by.
	if got, err := toolboxVolumeOf(Toolbox{Data: data}); err != nil || got.key != w.names.Toolbox.key {
		return fmt.Errorf("the tool server %s changed since the run started", tb.describe())
	}
	if err := w.uploadEntries(ctx, id, toolboxDir, toolboxEntries(data)); err != nil {
		return err
	}
	return w.uploadEntries(ctx, id, toolboxDir, markerEntries(w.names.Toolbox.key))
}

// toolboxEntries are the toolbox volume's content but its marker: the
// tool server, a root-owned read-only executable, in a root-owned
// directory.
func toolboxEntries(data []byte) []uploadEntry {
	return []uploadEntry{{Name: "/", Mode: 0o755}, {Name: "dirtywork", Data: data, Mode: 0o555}}
}

// markerEntries are the marker that says the toolbox volume of key is
// whole.
func markerEntries(key string) []uploadEntry {
	return []uploadEntry{{Name: toolboxMarker, Data: []byte(key + "\n"), Mode: 0o444}}
}

// fillSpec is the fill container: created, never started; the toolbox
// volume mounted writable, and only there.
func fillSpec(v toolboxVolume, imageID string) daemon.ContainerSpec {
	host, _ := os.Hostname()
	m := v.mount()
	m.ReadOnly = false
	return daemon.ContainerSpec{
		Image: imageID, Entrypoint: []string{"/bin/true"}, User: userSpec(),
		Env: []string{"PATH=" + pathEnvValue},
		Labels: map[string]string{
			labelToolbox: v.key, labelFillHost: host, labelFillPID: strconv.Itoa(os.Getpid()),
		},
		Network: "none", ReadOnlyRoot: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Init: false, Memory: measurerMemory, PidsLimit: 1,
		Mounts: []daemon.Mount{m},
	}
}

// createToolboxVolume makes the toolbox volume v with its label. A
// volume of that name without it (made empty by a container's create, or
// not ours) is removed first, unless in use.
func createToolboxVolume(ctx context.Context, eng daemon.Engine, v toolboxVolume) error {
	for attempt := 0; ; attempt++ {
		labels, err := volumeLabels(ctx, eng, v.name)
		switch {
		case err == nil && labels[labelToolbox] == v.key:
			return nil
		case err == nil && attempt == 0:
			if err := eng.RemoveVolume(ctx, v.name, false); err != nil {
				return fmt.Errorf("volume %s is not the tool server's and cannot be replaced: %w", v.name, err)
			}
		case err == nil:
			return fmt.Errorf("volume %s is not the tool server's (label %s)", v.name, labelToolbox)
		case !errors.Is(err, daemon.ErrNotFound):
			return err
		}
		if err := eng.CreateVolume(ctx, v.name, map[string]string{labelToolbox: v.key}); err != nil {
			return err
		}
	}
}

// fillGone reports whether the named fill container is gone; one left by
// a fill that ended without removing it is removed.
func fillGone(ctx context.Context, eng daemon.Engine, name string) (bool, error) {
	info, err := eng.InspectContainer(ctx, name)
	if errors.Is(err, daemon.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if info.Labels == nil || !fillAbandoned(info.Created, info.Labels) {
		return false, nil
	}
	return true, eng.RemoveContainer(ctx, info.ID)
}

// fillAbandoned reports whether a fill container was left by a fill that
// no longer runs: its process, on this host, is gone, or it is older than
// any fill lasts (created, when known).
func fillAbandoned(created time.Time, labels map[string]string) bool {
	if !created.IsZero() && time.Since(created) > fillStale {
		return true
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(labels[labelFillPID])
	if err != nil || pid <= 0 || labels[labelFillHost] != host {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// reapToolboxes removes what fills and other builds left: fill containers
// whose fill no longer runs, and toolbox volumes of other builds made
// more than toolboxKeep ago that no container uses (the daemon refuses to
// remove a volume in use). A run that needs a volume removed meanwhile
// fills it again.
func reapToolboxes(ctx context.Context, eng daemon.Engine, keep string) {
	if list, err := eng.ListContainers(ctx, labelToolbox); err == nil {
		for _, ct := range list {
			if fillAbandoned(ct.Created, ct.Labels) {
				_ = eng.RemoveContainer(ctx, ct.ID)
			}
		}
	}
	vols, err := eng.ListVolumes(ctx, labelToolbox)
	if err != nil {
		return
	}
	for _, v := range vols {
		if v.Labels[labelToolbox] == keep || !strings.HasPrefix(v.Name, toolboxVolumePrefix) {
			continue
		}
		if v.Created.IsZero() || time.Since(v.Created) < toolboxKeep {
			continue
		}
		_ = eng.RemoveVolume(ctx, v.Name, false)
	}
}
