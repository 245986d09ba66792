package volstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/transcript"
)

// fsBlock is the file system's block size: the size of the docker data
// root's blocks on most systems, so a tree costs what it did.
const fsBlock = 4096

// inodeSize is the size of one inode in the file system (mke2fs -I).
const inodeSize = 256

// Available says why the kernel cannot hold the size of a volume of d
// (wrapping ErrUnavailable), or nil when it can, for a run with a byte
// cap (limits): the daemon runs on this machine, reached through a unix socket, in
// this process's mount namespace (so it sees the file system this process
// mounts), this process is root, and the loop devices and mkfs.ext4
// (e2fsprogs) are there.
func Available(ctx context.Context, d Daemon, limits bool) error {
	unavailable := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, args...))
	}
	if why := measuredOnly(); why != "" {
		return unavailable("%s is set", why)
	}
	if !limits {
		return unavailable("the run has no byte cap to hold")
	}
	if !d.Local() {
		return unavailable("the docker daemon %s is not reached through a local socket", d.Host())
	}
	if os.Geteuid() != 0 {
		return unavailable("attaching a loop device and mounting need root")
	}
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return unavailable("no loop devices: %v", err)
	}
	_ = ctl.Close() // opened only to see it can be
	if _, err := findTool("mkfs.ext4"); err != nil {
		return unavailable("mkfs.ext4 is not installed (e2fsprogs)")
	}
	root, err := d.DockerRoot(ctx)
	if err != nil {
		return unavailable("%v", err)
	}
	if err := sameMounts(root); err != nil {
		return unavailable("%v", err)
	}
	return nil
}

// daemonPidFiles are where dockerd writes its pid by default.
var daemonPidFiles = []string{"/var/run/docker.pid", "/run/docker.pid"}

// sameMounts refuses unless the daemon whose data root is root runs here,
// in this process's mount namespace: a daemon in a VM, in another
// container, or in a private mount namespace would not see the file
// system this process mounts.
func sameMounts(root string) error {
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return fmt.Errorf("the docker daemon's data root %s is not on this machine", root)
	}
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	for _, f := range daemonPidFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid := strings.TrimSpace(string(b))
		ns, err := os.Readlink("/proc/" + pid + "/ns/mnt")
		switch {
		case err != nil:
			return fmt.Errorf("the docker daemon (pid %s in %s) cannot be looked at: %w", pid, f, err)
		case ns != self:
			return fmt.Errorf("the docker daemon (pid %s) runs in another mount namespace", pid)
		}
		return nil
	}
	return fmt.Errorf("no pid file of the docker daemon (%s) says where it runs", strings.Join(daemonPidFiles, ", "))
}

// findTool finds an e2fsprogs program on PATH or where Debian puts it.
func findTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// storeTree is Store.Tree of the file system mounted at mount.
func storeTree(mount string) string { return filepath.Join(mount, "tree") }

// Create makes the file system of the named volume in dir (made a
// private directory of this user first), sized for maxBytes of data and
// maxEntries entries (0: the default inode ratio), attaches it to a loop
// device and mounts it, with the tree directory made and owned by uid and
// gid (the worker). An image an earlier attempt left under the name is
// released first. On failure nothing of it is left.
func Create(ctx context.Context, dir, volume string, maxBytes, maxEntries int64, uid, gid int) (_ *Store, err error) {
	if err := checkStoreName(volume); err != nil {
		return nil, err
	}
	if err := transcript.EnsureDir(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	if err := transcript.EnsureDir(dir); err != nil {
		return nil, err
	}
	image := storePath(dir, volume)
	if err := releaseStore(image); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = releaseStore(image)
		}
	}()
	if err := makeFileSystem(ctx, image, maxBytes, maxEntries); err != nil {
		return nil, err
	}
	s := &Store{Image: image, Mount: storeMount(image)}
	if s.Device, s.rdev, err = attachLoop(image); err != nil {
		return nil, err
	}
	if err := s.mountFS(); err != nil {
		return nil, err
	}
	tree := storeTree(s.Mount)
	if err := os.Mkdir(tree, 0o755); err != nil {
		return nil, fmt.Errorf("make the tree of %s: %w", image, err)
	}
	if err := os.Chown(tree, uid, gid); err != nil {
		return nil, fmt.Errorf("hand the tree of %s to the worker: %w", image, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(s.Mount, &fs); err != nil {
		return nil, fmt.Errorf("measure %s: %w", image, err)
	}
	s.Bytes, s.Entries = int64(fs.Bavail)*fs.Bsize, int64(fs.Ffree)
	s.usedBlocks, s.usedInodes = fs.Blocks-fs.Bfree, fs.Files-fs.Ffree
	return s, nil
}

// mountFS mounts the store's loop device at its mount point (made 0700 if
// need be): no devices, no set-id programs, and no zeroing of inode
// tables in the background (the image was all zeros).
func (s *Store) mountFS() error {
	if err := os.Mkdir(s.Mount, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make %s: %w", s.Mount, err)
	}
	if err := unix.Mount(s.Device, s.Mount, "ext4", unix.MS_NODEV|unix.MS_NOSUID, "noinit_itable"); err != nil {
		return fmt.Errorf("mount %s at %s: %w", s.Device, s.Mount, err)
	}
	return nil
}

// superblock is what an ext4 superblock says of the file system's size.
type superblock struct {
	blocks, freeBlocks     uint64
	inodes, freeInodes     uint32
	firstIno, logBlockSize uint32
}

// resvBlocks are the blocks ext4 keeps back from every user for its own
// metadata (ext4_calculate_resv_clusters: 2 %, at most 4096 clusters).
func (s superblock) resvBlocks() uint64 { return min(s.blocks/50, 4096) }

// available are the blocks free to the worker.
func (s superblock) available() uint64 {
	if r := s.resvBlocks(); s.freeBlocks > r {
		return s.freeBlocks - r
	}
	return 0
}

// readSuperblock reads the superblock of the ext4 image at path.
func readSuperblock(path string) (superblock, error) {
	f, err := os.Open(path)
	if err != nil {
		return superblock{}, err
	}
	defer func() { _ = f.Close() }() // read-only
	b := make([]byte, 1024)
	if _, err := f.ReadAt(b, 1024); err != nil {
		return superblock{}, fmt.Errorf("read the superblock of %s: %w", path, err)
	}
	le := binary.LittleEndian
	if le.Uint16(b[0x38:]) != 0xEF53 {
		return superblock{}, fmt.Errorf("%s holds no ext4 file system", path)
	}
	s := superblock{
		inodes: le.Uint32(b[0x0:]), blocks: uint64(le.Uint32(b[0x4:])), freeBlocks: uint64(le.Uint32(b[0xC:])),
		freeInodes: le.Uint32(b[0x10:]), logBlockSize: le.Uint32(b[0x18:]), firstIno: le.Uint32(b[0x54:]),
	}
	if le.Uint32(b[0x60:])&0x80 != 0 { // INCOMPAT_64BIT
		s.blocks |= uint64(le.Uint32(b[0x150:])) << 32
		s.freeBlocks |= uint64(le.Uint32(b[0x158:])) << 32
	}
	return s, nil
}

// journalBlocks is the journal mke2fs gives a file system of blocks
// (ext2fs_default_journal_size).
func journalBlocks(blocks uint64) uint64 {
	switch {
	case blocks < 2048:
		return 0
	case blocks < 32768:
		return 1024
	case blocks < 256*1024:
		return 4096
	case blocks < 512*1024:
		return 8192
	case blocks < 4096*1024:
		return 16384
	case blocks < 8192*1024:
		return 32768
	case blocks < 16384*1024:
		return 65536
	case blocks < 32768*1024:
		return 131072
	}
	return 262144
}

// imageBlocks estimates the blocks of a file system whose free blocks,
// less ext4's reserve, are data, with inodes inodes in groups of
// perGroup blocks.
func imageBlocks(data, inodes, perGroup uint64) uint64 {
	b := data + inodes*inodeSize/fsBlock
	for range 4 {
		groups := (b + perGroup - 1) / perGroup
		perGroupInodes := (inodes + groups - 1) / groups
		itable := groups * ((perGroupInodes*inodeSize + fsBlock - 1) / fsBlock)
		gdt := (groups*64 + fsBlock - 1) / fsBlock
		b = data + itable + journalBlocks(b) + 2*groups + gdt + 1 + min(b/50, 4096) + 16
	}
	return b
}

// fsOwnBlocks are the blocks of lost+found (mke2fs gives it 4) and of the
// tree's own directory.
const fsOwnBlocks = 5

// makeFileSystem makes image a sparse file holding an ext4 file system
// whose blocks free to the worker hold maxBytes and a little more
// (Slack), with inodes for maxEntries entries and its own (mke2fs
// -N; none given: the default ratio).
func makeFileSystem(ctx context.Context, image string, maxBytes, maxEntries int64) error {
	_, err := makeFS(ctx, image, maxBytes, maxEntries)
	return err
}

// makeFS is makeFileSystem, saying what the superblock says.
func makeFS(ctx context.Context, image string, maxBytes, maxEntries int64) (superblock, error) {
	mkfs, err := findTool("mkfs.ext4")
	if err != nil {
		return superblock{}, err
	}
	// The tree's data, and the blocks of lost+found and the tree's own
	// directory.
	data := uint64((maxBytes+Slack+fsBlock-1)/fsBlock) + fsOwnBlocks
	var inodes uint64
	if maxEntries > 0 {
		// The tree's entries, one more (a full file system is past the
		// cap), and the file system's own: inodes 1 to 10 (the root's
		// among them), lost+found and the tree directory.
		inodes = uint64(maxEntries) + 1 + 10 + 2
	}
	perGroup := uint64(8 * fsBlock) // mke2fs's default and most
	blocks := imageBlocks(data, inodes, perGroup)
	// The image is a new sparse file, all zeros: nothing needs zeroing,
	// now or later (without this the kernel would write every inode
	// table in the background). e2fsprogs before 1.47 says so in two
	// options, and the mount in a third (storeMountOptions).
	prezeroed := "assume_storage_prezeroed=1"
	for attempt := 0; ; attempt++ {
		if err := os.Remove(image); err != nil && !errors.Is(err, os.ErrNotExist) {
			return superblock{}, err
		}
		f, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return superblock{}, fmt.Errorf("create %s: %w", image, err)
		}
		err = f.Truncate(int64(blocks) * fsBlock)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return superblock{}, fmt.Errorf("size %s: %w", image, err)
		}
		args := []string{
			"-q", "-F", "-t", "ext4", "-b", strconv.Itoa(fsBlock), "-I", strconv.Itoa(inodeSize), "-m", "0",
			"-O", "^resize_inode", "-E", "nodiscard," + prezeroed,
		}
		if inodes > 0 {
			args = append(args, "-N", strconv.FormatUint(inodes, 10))
		}
		if perGroup != 8*fsBlock {
			args = append(args, "-g", strconv.FormatUint(perGroup, 10))
		}
		out, err := runTool(ctx, mkfs, append(args, image)...)
		switch {
		case err != nil && strings.Contains(out, "assume_storage_prezeroed") && prezeroed != lazyInit:
			prezeroed = lazyInit
			continue
		case err != nil && strings.Contains(strings.ToLower(out), "inode") && perGroup > 1024 && inodes > 0:
			// Inodes that fit no group of this size (many entries for
			// few bytes) need smaller groups, so there are more of them.
			perGroup /= 2
			blocks = imageBlocks(data, inodes, perGroup)
			continue
		case err != nil:
			return superblock{}, fmt.Errorf("mkfs.ext4 %s: %w: %s", image, err, out)
		}
		sb, err := readSuperblock(image)
		if err != nil {
			return superblock{}, err
		}
		if short := data - min(data, sb.available()); short > 0 && attempt < 3 {
			blocks += short + 16
			continue
		}
		if sb.available() < data || (inodes > 0 && uint64(sb.freeInodes) < inodes-11) {
			return superblock{}, fmt.Errorf("mkfs.ext4 made %s too small: %d blocks and %d inodes free, want %d and %d",
				image, sb.available(), sb.freeInodes, data, inodes-11)
		}
		return sb, nil
	}
}

// lazyInit is how e2fsprogs before 1.47 is told not to zero the image.
const lazyInit = "lazy_itable_init=1,lazy_journal_init=1"

// toolTimeout bounds one e2fsprogs run.
const toolTimeout = 10 * time.Second

// runTool runs an e2fsprogs program with a deadline and a neutral
// environment and returns what it said (its first 500 bytes).
func runTool(ctx context.Context, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	said := out.String()
	if len(said) > 500 {
		said = said[:500] + "…"
	}
	return strings.TrimSpace(said), err
}

// attachLoop attaches image to a free loop device, read-write, without
// autoclear: the device outlives this process and every mount, until the
// volume is removed. It returns the device and its number.
func attachLoop(image string) (string, uint64, error) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0, fmt.Errorf("attach %s to a loop device: %w", image, err)
	}
	defer func() { _ = ctl.Close() }() // a control device
	img, err := os.OpenFile(image, os.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0, fmt.Errorf("attach %s to a loop device: %w", image, err)
	}
	defer func() { _ = img.Close() }() // the device holds its own reference
	for range 16 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", 0, fmt.Errorf("find a free loop device: %w", err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		err = configureLoop(dev, img, image)
		if errors.Is(err, unix.EBUSY) {
			continue // another process took it meanwhile
		}
		if err != nil {
			return "", 0, fmt.Errorf("attach %s to %s: %w", image, dev, err)
		}
		var st unix.Stat_t
		if err := unix.Stat(dev, &st); err != nil {
			_ = detachLoop(dev)
			return "", 0, err
		}
		return dev, st.Rdev, nil
	}
	return "", 0, fmt.Errorf("attach %s to a loop device: every free device was taken meanwhile", image)
}

// configureLoop backs the loop device dev with img.
func configureLoop(dev string, img *os.File, name string) error {
	lf, err := os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = lf.Close() }() // the attachment outlives it
	var info unix.LoopInfo64
	copy(info.File_name[:len(info.File_name)-1], name)
	cfg := unix.LoopConfig{Fd: uint32(img.Fd()), Info: info}
	err = unix.IoctlLoopConfigure(int(lf.Fd()), &cfg)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
		return err
	}
	// Kernels before 5.8: in two steps.
	if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_SET_FD, int(img.Fd())); err != nil {
		return err
	}
	if err := unix.IoctlLoopSetStatus64(int(lf.Fd()), &info); err != nil {
		_ = unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0)
		return err
	}
	return nil
}

// detachLoop detaches the loop device dev; one that is no longer attached
// is detached. The kernel detaches a device still in use (mounted) once
// its last user lets go.
func detachLoop(dev string) error {
	lf, err := os.OpenFile(dev, os.O_RDWR|unix.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	defer func() { _ = lf.Close() }() // a device
	if err := unix.IoctlSetInt(int(lf.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	return nil
}

// loopBackings maps each attached loop device to its backing file, as
// the kernel shows it (" (deleted)" appended when the file is gone).
func loopBackings() map[string]string {
	out := map[string]string{}
	dirs, _ := filepath.Glob("/sys/block/loop*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue // not attached
		}
		out["/dev/"+filepath.Base(d)] = strings.TrimSuffix(string(b), "\n")
	}
	return out
}

// deletedSuffix is what the kernel appends to a backing file that is
// gone.
const deletedSuffix = " (deleted)"

// mounted reports whether a file system is mounted at dir: it is on
// another device than its parent.
func mounted(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Lstat(dir, &st) != nil || unix.Lstat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Dev != parent.Dev
}

// releaseStore unmounts the file system of image, detaches every loop
// device backed by it and deletes it and its mount point. Nothing there is
// fine. Nothing is removed from a file system still mounted.
func releaseStore(image string) error {
	_, err := releaseStoreFound(image)
	return err
}

// releaseStoreFound is releaseStore, reporting whether there was
// anything of it: the image, its mount point, or a loop device backed by
// it (an image deleted while attached included).
func releaseStoreFound(image string) (bool, error) {
	mount := storeMount(image)
	_, imgErr := os.Lstat(image)
	_, mntErr := os.Lstat(mount)
	var devs []string
	for dev, backing := range loopBackings() {
		if backing == image || backing == image+deletedSuffix {
			devs = append(devs, dev)
		}
	}
	if errors.Is(imgErr, os.ErrNotExist) && errors.Is(mntErr, os.ErrNotExist) && len(devs) == 0 {
		return false, nil
	}
	return true, release(image, mount, devs)
}

// release unmounts mount, detaches devs and deletes image and mount.
func release(image, mount string, devs []string) error {
	if mounted(mount) {
		err := unix.Unmount(mount, 0)
		if errors.Is(err, unix.EBUSY) {
			// Something still uses it: it goes once that lets go.
			err = unix.Unmount(mount, unix.MNT_DETACH)
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", mount, err)
		}
	}
	var errs []error
	for _, dev := range devs {
		if err := detachLoop(dev); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // the image stays for the next try
	}
	if err := os.Remove(image); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", image, err)
	}
	if err := os.Remove(mount); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", mount, err)
	}
	return nil
}

// listStores lists the images and mount points in dir and the loop
// devices backed by files there.
func listStores(dir string) ([]Listed, error) {
	byImage := map[string]*Listed{}
	var order []string
	add := func(image string) *Listed {
		s := byImage[image]
		if s == nil {
			s = &Listed{Volume: strings.TrimSuffix(filepath.Base(image), storeSuffix), Image: image}
			byImage[image] = s
			order = append(order, image)
		}
		return s
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasSuffix(name, storeSuffix) && e.Type().IsRegular():
			add(filepath.Join(dir, name)).ImageExists = true
		case strings.HasSuffix(name, storeMountSuffix) && e.IsDir():
			s := add(filepath.Join(dir, strings.TrimSuffix(name, storeMountSuffix)+storeSuffix))
			s.Mounted = mounted(filepath.Join(dir, name))
		}
	}
	for dev, backing := range loopBackings() {
		image := strings.TrimSuffix(backing, deletedSuffix)
		if filepath.Dir(image) == dir && strings.HasSuffix(image, storeSuffix) {
			s := add(image)
			s.Devices = append(s.Devices, dev)
		}
	}
	out := make([]Listed, 0, len(order))
	for _, image := range order {
		out = append(out, *byImage[image])
	}
	return out, nil
}

// Usage is what the file system holds of the tree now, by its own counts
// (statfs of this process's mount), and false when it is not mounted
// there. What the file system itself used when it was made (its root,
// lost+found, the tree's directory, the reserved inodes) is not the
// tree's.
func (s *Store) Usage() (bytes, entries int64, ok bool) {
	var st unix.Stat_t
	if err := unix.Stat(s.Mount, &st); err != nil || st.Dev != s.rdev {
		return 0, 0, false
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(s.Mount, &fs); err != nil {
		return 0, 0, false
	}
	blocks := int64(fs.Blocks-fs.Bfree) - int64(s.usedBlocks)
	inodes := int64(fs.Files-fs.Ffree) - int64(s.usedInodes)
	return max(blocks, 0) * fs.Bsize, max(inodes, 0), true
}

// ensureMounted makes sure the file system of image is mounted where
// its volume finds it: attached to a loop device (the one backed by it,
// else a new one) and mounted. After a reboot neither is.
func ensureMounted(image string) error {
	mount := storeMount(image)
	if mounted(mount) {
		return nil
	}
	if _, err := os.Lstat(image); err != nil {
		return fmt.Errorf("the work volume's file system image: %w", err)
	}
	s := &Store{Image: image, Mount: mount}
	for dev, backing := range loopBackings() {
		if backing == image {
			s.Device = dev
		}
	}
	if s.Device == "" {
		var err error
		if s.Device, _, err = attachLoop(image); err != nil {
			return err
		}
	}
	return s.mountFS()
}
