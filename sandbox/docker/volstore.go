package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/transcript"
)

// A work volume's size is held in one of two ways, and run_start's
// sandbox object says which (size_limit):
//
//   - "filesystem": the kernel holds it. The volume's tree is a file
//     system of its own: ext4 in a sparse image file under the dirtywork
//     home (<home>/volumes/<volume>.ext4), attached to a loop device and
//     mounted by this process at <home>/volumes/<volume>.mnt, its tree
//     directory given to the daemon's local driver as a bind volume. Its
//     data blocks are the byte cap (and a little), its inodes the entry
//     cap (mkfs -N), so no command, however fast (fallocate), puts more
//     into it. The watchdog reads the file system's own counts (statfs of
//     the mount, every tick) and stops the run as soon as the tree is past
//     a cap; a full file system is such a breach. The file system stays
//     mounted while the volume exists, whatever containers come and go
//     (the daemon's ext4 mount of a `type=ext4` volume would be made and
//     undone for every container and upload, a tenth of a second each),
//     and it outlives this process: a killed run's volume is exported
//     later (after a reboot `runs export` attaches and mounts it again).
//     Whatever removes the volume unmounts the file system, detaches the
//     device and deletes the image (Client.removeVolume,
//     ReleaseVolumeStore).
//   - "measured": the caps are a measurement: the tool server's walks and
//     the measuring sidecar (ws_measurer.go) every second while a command
//     runs. This is what a daemon on another machine (or in a VM, or in
//     another mount namespace), a non-root operator, a system without
//     loop devices or mkfs.ext4, or DIRTYWORK_SIZE_LIMIT=measured get.
//
// In both, the export's caps are hard, checked at each member's header.

// SizeLimitEnv set to "measured" makes the worktree caps a measurement
// even where the kernel could hold them.
const SizeLimitEnv = "DIRTYWORK_SIZE_LIMIT"

// The kinds of size limit (run_start.sandbox.size_limit.kind).
const (
	sizeFilesystem = "filesystem"
	sizeMeasured   = "measured"
)

// storeSuffix ends the name of a volume's image in the store directory,
// storeMountSuffix the name of the directory its file system is mounted
// at.
const (
	storeSuffix      = ".ext4"
	storeMountSuffix = ".mnt"
)

// storeSlack is what the file system holds beyond the byte cap, so that a
// tree the budget allows always fits (the root directory's own blocks are
// no entry's), and a full file system is always a tree past the cap.
const storeSlack = 1 << 20

// errStoreUnavailable wraps why the kernel cannot hold the size here.
var errStoreUnavailable = errors.New("the kernel cannot hold the work volume's size here")

// StoreDir is the directory volume images live in: <home>/volumes, beside
// the runs root.
func StoreDir() (string, error) {
	home, err := transcript.Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "volumes"), nil
}

// storePath is the image of the named volume in dir.
func storePath(dir, volume string) string {
	return filepath.Join(dir, volume+storeSuffix)
}

// sizeLimit is how a workspace's caps hold, for run_start.
type sizeLimit struct {
	kind string
	// reason says why the kernel does not hold them (measured only).
	reason string
	store  *volumeStore
}

// settings is run_start's size_limit object.
func (s sizeLimit) settings() map[string]any {
	if s.store == nil {
		return map[string]any{"kind": sizeMeasured, "reason": s.reason}
	}
	return map[string]any{
		"kind":    sizeFilesystem,
		"bytes":   s.store.bytes,
		"entries": s.store.entries,
		"image":   s.store.image,
		"mount":   s.store.mount,
	}
}

// measuredOnly is why the environment asks for the measured size limit,
// "" when it does not.
func measuredOnly() string {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(SizeLimitEnv)), sizeMeasured) {
		return SizeLimitEnv + "=" + sizeMeasured
	}
	return ""
}

// VolumeStore is a work volume's image in the store directory, and the
// loop devices backed by it.
type VolumeStore struct {
	// Volume is the volume the image is for (its name without the
	// suffix); Image its path, which may be gone while a device still
	// holds it.
	Volume, Image string
	// ImageExists says whether Image is still there; Mounted whether its
	// file system is mounted at its mount point.
	ImageExists, Mounted bool
	// Devices are the loop devices backed by Image (/dev/loopN).
	Devices []string
}

// ReleaseVolumeStore unmounts the file system of the named volume,
// detaches the loop devices backed by its image and deletes the image:
// what removing a kernel-limited work volume leaves to do, and what a run
// killed before it made its volume leaves. Only the volume, gone, may have
// used them. It reports whether there was one; none is fine.
func ReleaseVolumeStore(volume string) (bool, error) {
	if err := checkStoreName(volume); err != nil {
		return false, err
	}
	dir, err := StoreDir()
	if err != nil {
		return false, err
	}
	return releaseStoreFound(storePath(dir, volume))
}

// storeMount is where the file system of image is mounted.
func storeMount(image string) string {
	return strings.TrimSuffix(image, storeSuffix) + storeMountSuffix
}

// releaseVolumeStore is ReleaseVolumeStore for a volume just removed (or
// found gone): an error finding the store directory is none to report.
func releaseVolumeStore(volume string) error {
	if checkStoreName(volume) != nil {
		return nil
	}
	_, err := ReleaseVolumeStore(volume)
	return err
}

// ListVolumeStores lists the images in the store directory and the loop
// devices backed by files there, an image gone included; none on systems
// without loop devices.
func ListVolumeStores() ([]VolumeStore, error) {
	dir, err := StoreDir()
	if err != nil {
		return nil, err
	}
	return listStores(dir)
}

// checkStoreName refuses a volume name that is not one of ours, so no
// image path ever leaves the store directory.
func checkStoreName(volume string) error {
	if !strings.HasPrefix(volume, "dw-") || !slugPattern.MatchString(strings.TrimPrefix(volume, "dw-")) {
		return fmt.Errorf("%q is not a dirtywork volume name", volume)
	}
	return nil
}
