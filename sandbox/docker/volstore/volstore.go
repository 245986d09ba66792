// Package volstore makes the file system a docker run's work volume lives
// in when the kernel holds its size, and finds and removes what is left of
// those.
//
// A work volume's size is held in one of two ways, and run_start's
// sandbox object says which (size_limit):
//
//   - "filesystem": the kernel holds it. The volume's tree is a file
//     system of its own: ext4 in a sparse image file under the dirtywork
//     home (<home>/volumes/<volume>.ext4), attached to a loop device and
//     mounted by this process at <home>/volumes/<volume>.mnt, its tree
//     directory given to the daemon's local driver as a bind volume
//     (Store.Tree). Its data blocks are the byte cap (and a little), its
//     inodes the entry cap (mkfs -N), so no command, however fast
//     (fallocate), puts more into it. The watchdog reads the file
//     system's own counts (Store.Usage, every tick) and stops the run as
//     soon as the tree is past a cap; a full file system is such a breach.
//     The file system stays mounted while the volume exists, whatever
//     containers come and go (the daemon's ext4 mount of a `type=ext4`
//     volume would be made and undone for every container and upload, a
//     tenth of a second each), and it outlives this process: a killed
//     run's volume is exported later (after a reboot `runs export`
//     attaches and mounts it again: Ensure). Whatever removes the volume
//     unmounts the file system, detaches the device and deletes the image
//     (Release).
//   - "measured": the caps are a measurement: the tool server's walks and
//     the workspace's measuring sidecar every second while a command
//     runs. This is what a daemon on another machine (or in a VM, or in
//     another mount namespace), a non-root operator, a system without
//     loop devices or mkfs.ext4, or DIRTYWORK_SIZE_LIMIT=measured get
//     (Available says why).
//
// In both, the export's caps are hard, checked at each member's header.
package volstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/transcript"
)

// SizeLimitEnv set to "measured" makes the worktree caps a measurement
// even where the kernel could hold them.
const SizeLimitEnv = "DIRTYWORK_SIZE_LIMIT"

// measured is SizeLimitEnv's one value.
const measured = "measured"

// Daemon is what Available asks of the Docker daemon: where it is reached,
// and where it keeps its data (daemon.Engine has both).
type Daemon interface {
	Host() string
	Local() bool
	DockerRoot(ctx context.Context) (string, error)
}

// Store is the file system a work volume lives in when the kernel holds
// its size.
type Store struct {
	// Image is the file system's image (<dir>/<volume>.ext4); Device the
	// loop device it is attached to (/dev/loopN).
	Image, Device string
	// Mount is where this process mounted the file system
	// (<dir>/<volume>.mnt); the volume is its tree directory (Tree).
	Mount string
	// Bytes and Entries are what the file system holds for the tree: the
	// blocks and inodes free to the worker when it was made.
	Bytes, Entries int64
	// rdev is the loop device's number: its mount has it as st_dev.
	rdev uint64
	// usedBlocks and usedInodes are what the file system itself used
	// then (its root, lost+found, the tree directory, reserved inodes).
	usedBlocks, usedInodes uint64
}

// Tree is the directory the volume is: the worker's tree, owned by the
// worker. The file system's root holds it and lost+found, which the
// worker therefore never sees. When the file system is not mounted the
// directory is not there, so a volume whose mount is gone (after a
// reboot) fails to mount rather than showing an empty tree.
func (s *Store) Tree() string { return storeTree(s.Mount) }

// storeSuffix ends the name of a volume's image in the store directory,
// storeMountSuffix the name of the directory its file system is mounted
// at.
const (
	storeSuffix      = ".ext4"
	storeMountSuffix = ".mnt"
)

// Slack is what the file system holds beyond the byte cap, so that a
// tree the budget allows always fits (the root directory's own blocks are
// no entry's), and a full file system is always a tree past the cap.
const Slack = 1 << 20

// ErrUnavailable wraps why the kernel cannot hold the size here.
var ErrUnavailable = errors.New("the kernel cannot hold the work volume's size here")

// Dir is the directory volume images live in: <home>/volumes, beside
// the runs root.
func Dir() (string, error) {
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

// measuredOnly is why the environment asks for the measured size limit,
// "" when it does not.
func measuredOnly() string {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(SizeLimitEnv)), measured) {
		return SizeLimitEnv + "=" + measured
	}
	return ""
}

// Listed is a work volume's image in the store directory, and the
// loop devices backed by it.
type Listed struct {
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

// Release unmounts the file system of the named volume, detaches the
// loop devices backed by its image and deletes the image:
// what removing a kernel-limited work volume leaves to do, and what a run
// killed before it made its volume leaves. Only the volume, gone, may have
// used them. It reports whether there was one; none is fine.
func Release(volume string) (bool, error) {
	if err := checkStoreName(volume); err != nil {
		return false, err
	}
	dir, err := Dir()
	if err != nil {
		return false, err
	}
	return releaseStoreFound(storePath(dir, volume))
}

// storeMount is where the file system of image is mounted.
func storeMount(image string) string {
	return strings.TrimSuffix(image, storeSuffix) + storeMountSuffix
}

// ReleaseGone is Release for a volume just removed (or found gone), whose
// name may not be one of ours: such a name has no file system to
// release.
func ReleaseGone(volume string) error {
	if checkStoreName(volume) != nil {
		return nil
	}
	_, err := Release(volume)
	return err
}

// List lists the images in the store directory and the loop devices
// backed by files there, an image gone included; none on systems without
// loop devices.
func List() ([]Listed, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	return listStores(dir)
}

// checkStoreName refuses a volume name that is not one of ours, so no
// image path ever leaves the store directory.
func checkStoreName(volume string) error {
	if !strings.HasPrefix(volume, "dw-") || daemon.CheckSlug(strings.TrimPrefix(volume, "dw-")) != nil {
		return fmt.Errorf("%q is not a dirtywork volume name", volume)
	}
	return nil
}

// Ensure makes the file system of the named work volume mountable again,
// when it has one: mounted where the volume binds it. That mount and the
// loop device do not survive a reboot; until they are back the volume's
// tree directory is not there, and the volume fails to mount rather than
// showing an empty tree. A measured volume has nothing to ensure.
func Ensure(volume string) error {
	dir, err := Dir()
	if err != nil {
		return nil //nolint:nilerr // no store directory: a measured volume
	}
	image := storePath(dir, volume)
	if _, err := os.Lstat(image); err != nil {
		return nil //nolint:nilerr // no image: a measured volume
	}
	if err := ensureMounted(image); err != nil {
		return fmt.Errorf("volume %s: %w", volume, err)
	}
	return nil
}
