package jail

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// controlFD is the setup child's end of the control socket.
const controlFD = 3

// maxSpec bounds the spec the child reads.
const maxSpec = 16 << 20

// MaybeRun turns this process into the jail's setup child when it was
// started as one (first argument "__jail"), and then never returns: it
// builds the jail and replaces itself with the program, or exits after
// reporting why it could not. Otherwise it returns at once. Call it first
// thing in main, and in TestMain of test binaries that start jails.
func MaybeRun() {
	if len(os.Args) < 2 || os.Args[1] != setupArg {
		return
	}
	// Straight to exit_group: the child has nothing to flush, and the
	// race detector's exit hook would hold every probe for a second.
	syscall.Exit(runChild())
}

// runChild is the setup child: it returns only an exit status for a
// setup that failed (reported on the control socket) or a probe.
func runChild() int {
	// Capabilities, no_new_privs, Landlock and seccomp belong to the
	// thread that sets them; the program inherits them only if that same
	// thread calls execve.
	runtime.LockOSThread()
	syscall.CloseOnExec(controlFD)
	ctl := os.NewFile(controlFD, "control")
	send := func(r report) {
		data, _ := json.Marshal(r)
		_, _ = ctl.Write(append(data, '\n')) // a parent that went away cannot be told
	}
	sp, fds, err := receiveSpec(ctl)
	if err != nil {
		send(report{Error: err.Error(), Layer: LayerRoot})
		return exitSetup
	}
	s := &setup{spec: sp, fds: fds}
	rep, err := s.run()
	if err != nil {
		var le *layerError
		layer := LayerRoot
		if errors.As(err, &le) {
			layer = le.layer
		}
		send(report{Error: err.Error(), Layer: layer})
		return exitSetup
	}
	if sp.Probe {
		rep.Ready = true
		send(rep)
		return 0
	}
	send(rep)
	args := sp.Args
	if len(args) == 0 {
		args = []string{sp.Path}
	}
	env := sp.Env
	if env == nil {
		env = []string{}
	}
	err = syscall.Exec(sp.Path, args, env)
	send(report{Error: fmt.Sprintf("execute %s: %v", sp.Path, err), Layer: "exec"})
	return exitSetup
}

// receiveSpec reads the spec (a 4-byte length, then JSON) and the mount
// descriptors that come with its first bytes from the control socket.
func receiveSpec(ctl *os.File) (spec, []int, error) {
	fd := int(ctl.Fd())
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*maxFDs))
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return spec{}, nil, fmt.Errorf("read the jail's spec: %w", err)
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return spec{}, nil, fmt.Errorf("read the jail's mounts: %w", err)
		}
		for _, m := range msgs {
			got, err := unix.ParseUnixRights(&m)
			if err != nil {
				return spec{}, nil, fmt.Errorf("read the jail's mounts: %w", err)
			}
			fds = append(fds, got...)
		}
	}
	data := buf[:n]
	if len(data) < 4 {
		return spec{}, nil, errors.New("read the jail's spec: short message")
	}
	size := int(binary.BigEndian.Uint32(data))
	if size > maxSpec {
		return spec{}, nil, fmt.Errorf("read the jail's spec: %d bytes is too large", size)
	}
	body := append([]byte(nil), data[4:]...)
	if len(body) < size {
		rest := make([]byte, size-len(body))
		if _, err := io.ReadFull(ctl, rest); err != nil {
			return spec{}, nil, fmt.Errorf("read the jail's spec: %w", err)
		}
		body = append(body, rest...)
	}
	var sp spec
	dec := json.NewDecoder(bytes.NewReader(body[:size]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		return spec{}, nil, fmt.Errorf("decode the jail's spec: %w", err)
	}
	return sp, fds, nil
}

// layerError is a setup failure of one layer.
type layerError struct {
	layer string
	err   error
}

func (e *layerError) Error() string { return e.err.Error() }
func (e *layerError) Unwrap() error { return e.err }

func inLayer(layer string, err error) error {
	if err == nil {
		return nil
	}
	return &layerError{layer: layer, err: err}
}

// setup builds the jail in the child.
type setup struct {
	spec spec
	fds  []int
	// root is where the root tmpfs is mounted until pivot_root.
	root string
	// devs are the devices of the jail's own tmpfs mounts, where mount
	// points may be created.
	devs map[uint64]bool
	// writable are the jail paths of writable mounts, for Landlock.
	writableDirs, writableFiles []string
}

// Names of the devices bound into /dev.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// The tmpfs mounts' options.
const (
	rootTmpfs = "size=4m,nr_inodes=8192,mode=0755"
	devTmpfs  = "size=64k,nr_inodes=256,mode=0755"
	shmTmpfs  = "size=64m,mode=1777"
	maskTmpfs = "size=4k,nr_inodes=16,mode=0755"
	fileTmpfs = "size=64k,nr_inodes=16,mode=0755"
)

// run builds the jail, drops every privilege and returns what it put in
// place. The program is executed by the caller.
func (s *setup) run() (report, error) {
	sp := s.spec
	// Nothing done here may propagate back to the host's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return report{}, inLayer(LayerRoot, fmt.Errorf("make the mounts private: %w", err))
	}
	// Binds the parent did not make (a non-root operator's) are made now,
	// before anything covers their sources.
	for i, e := range sp.Entries {
		if e.Kind != entryBind || e.FD >= 0 {
			continue
		}
		fd, err := openBind(e.Source, e.ReadOnly, e.Recursive, false, -1)
		if err != nil {
			return report{}, inLayer(LayerRoot, err)
		}
		s.fds = append(s.fds, fd)
		sp.Entries[i].FD = len(s.fds) - 1
	}
	devFDs := make(map[string]int, len(devices))
	for _, d := range devices {
		src := "/dev/" + d
		if _, err := os.Stat(src); err != nil {
			continue // a host without /dev/tty, say
		}
		fd, err := openBind(src, false, false, true, -1)
		if err != nil {
			return report{}, inLayer(LayerRoot, err)
		}
		devFDs[d] = fd
	}
	if err := s.mountRoot(); err != nil {
		return report{}, inLayer(LayerRoot, err)
	}
	if err := s.buildRoot(devFDs); err != nil {
		return report{}, inLayer(LayerRoot, err)
	}
	if err := unix.Sethostname([]byte(sp.Hostname)); err != nil {
		return report{}, inLayer(LayerRoot, fmt.Errorf("set the hostname: %w", err))
	}
	if sp.NewNet {
		if err := loopbackUp(); err != nil {
			return report{}, inLayer(LayerNetwork, err)
		}
	}
	if err := s.pivot(); err != nil {
		return report{}, inLayer(LayerRoot, err)
	}
	// The cgroup namespace is made now that the parent has placed this
	// process in the jail's cgroup: that cgroup is the jail's root.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return report{}, inLayer(LayerUserNS, fmt.Errorf("make the cgroup namespace: %w", err))
	}
	dir := sp.Dir
	if dir == "" {
		dir = "/"
	}
	if err := unix.Chdir(dir); err != nil {
		return report{}, inLayer(LayerRoot, fmt.Errorf("enter the working directory %s: %w", dir, err))
	}
	if sp.Rlimits != nil {
		if err := setRlimits(*sp.Rlimits); err != nil {
			return report{}, inLayer(LayerPids, err)
		}
	}
	// The host's open files table is shared by everyone: RLIMIT_NOFILE
	// times the pids limit bounds the jail's share of it.
	if sp.Nofile > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: sp.Nofile, Max: sp.Nofile}); err != nil {
			return report{}, inLayer(LayerRoot, fmt.Errorf("set RLIMIT_NOFILE: %w", err))
		}
	}
	if sp.Nice > 0 {
		// No cpu controller: the jail yields to the host's other work. Its
		// niceness belongs to this thread, which executes the program;
		// RLIMIT_NICE 0 keeps any process of the jail from lowering it.
		if err := unix.Setpriority(unix.PRIO_PROCESS, 0, sp.Nice); err != nil {
			return report{}, inLayer(LayerCPU, fmt.Errorf("set the niceness: %w", err))
		}
		if err := unix.Setrlimit(unix.RLIMIT_NICE, &unix.Rlimit{}); err != nil {
			return report{}, inLayer(LayerCPU, fmt.Errorf("set RLIMIT_NICE: %w", err))
		}
	}
	// No core files: a crashing command would drop one into the worktree
	// (up to its size), and nothing in the jail can read it usefully.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return report{}, inLayer(LayerRoot, fmt.Errorf("set RLIMIT_CORE: %w", err))
	}
	return s.lockDown()
}

// mountRoot mounts the jail's root tmpfs over a directory of this private
// mount namespace (nothing of the host is affected; every source is open
// already).
func (s *setup) mountRoot() error {
	for _, dir := range []string{"/tmp", "/mnt", "/dev"} {
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			s.root = dir
			break
		}
	}
	if s.root == "" {
		return errors.New("no directory to mount the jail's root on")
	}
	if err := unix.Mount("tmpfs", s.root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, rootTmpfs); err != nil {
		return fmt.Errorf("mount the root tmpfs: %w", err)
	}
	s.devs = map[uint64]bool{}
	return s.ours(s.root)
}

// ours records the device of the tmpfs mounted at path as the jail's own.
func (s *setup) ours(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return err
	}
	s.devs[st.Dev] = true
	return nil
}

// at is the current path of jail path p.
func (s *setup) at(p string) string { return filepath.Join(s.root, p) }

// mkdirTmpfs mounts a tmpfs with options opts at jail path p.
func (s *setup) mkdirTmpfs(p string, flags uintptr, opts string) error {
	if err := mountpoint(s.root, s.isOurs, p, true); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", s.at(p), "tmpfs", flags, opts); err != nil {
		return fmt.Errorf("mount a tmpfs at %s: %w", p, err)
	}
	return s.ours(s.at(p))
}

func (s *setup) isOurs(dev uint64) bool { return s.devs[dev] }

// buildRoot fills the root tmpfs.
func (s *setup) buildRoot(devFDs map[string]int) error {
	sp := s.spec
	// The jail's own file systems come first, so configured mounts may
	// go beneath them.
	if err := s.mkdirTmpfs("/tmp", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=1777", sp.TmpSize)); err != nil {
		return err
	}
	s.writableDirs = append(s.writableDirs, "/tmp")
	if err := s.buildDev(devFDs); err != nil {
		return err
	}
	if err := s.buildProc(); err != nil {
		return err
	}
	if err := os.Mkdir(s.at("/sys"), 0o555); err != nil {
		return fmt.Errorf("create /sys: %w", err)
	}
	for _, e := range sp.Entries {
		if err := s.apply(e); err != nil {
			return err
		}
	}
	for _, fd := range s.fds {
		_ = unix.Close(fd) // attached or unused detached mounts: nothing to lose
	}
	return s.writeIdentity()
}

// apply performs one entry.
func (s *setup) apply(e entry) error {
	switch e.Kind {
	case entrySymlink:
		if parent := filepath.Dir(e.Target); parent != "/" {
			if err := mountpoint(s.root, s.isOurs, parent, true); err != nil {
				return err
			}
		}
		if err := os.Symlink(e.Link, s.at(e.Target)); err != nil {
			return fmt.Errorf("create the symlink %s: %w", e.Target, err)
		}
	case entryBind:
		if e.FD < 0 || e.FD >= len(s.fds) {
			return fmt.Errorf("bind at %s: no mount was passed for it", e.Target)
		}
		if err := mountpoint(s.root, s.isOurs, e.Target, e.Dir); err != nil {
			return err
		}
		if err := attach(s.fds[e.FD], s.at(e.Target)); err != nil {
			return err
		}
		if !e.ReadOnly {
			if e.Dir {
				s.writableDirs = append(s.writableDirs, e.Target)
			} else {
				s.writableFiles = append(s.writableFiles, e.Target)
			}
		}
	case entryMask:
		return s.mask(e.Target, e.Dir)
	default:
		return fmt.Errorf("unknown entry kind %q", e.Kind)
	}
	return nil
}

// mask covers jail path p: a directory with an empty read-only tmpfs, a
// file with a nodev bind of /dev/null, which cannot even be opened.
func (s *setup) mask(p string, dir bool) error {
	target := s.at(p)
	if _, err := os.Lstat(target); err != nil {
		return nil // not there in the jail: nothing to hide
	}
	if dir {
		if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, maskTmpfs); err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
		return nil
	}
	fd, err := openBind(s.at("/dev/null"), true, false, false, -1)
	if err != nil {
		return fmt.Errorf("mask %s: %w", p, err)
	}
	defer func() { _ = unix.Close(fd) }() // attached or failed: nothing to lose
	if err := attach(fd, target); err != nil {
		return fmt.Errorf("mask %s: %w", p, err)
	}
	return nil
}

// buildDev makes the minimal /dev.
func (s *setup) buildDev(devFDs map[string]int) error {
	if err := s.mkdirTmpfs("/dev", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, devTmpfs); err != nil {
		return err
	}
	for _, d := range devices {
		fd, ok := devFDs[d]
		if !ok {
			continue
		}
		p := "/dev/" + d
		if err := mountpoint(s.root, s.isOurs, p, false); err != nil {
			return err
		}
		if err := attach(fd, s.at(p)); err != nil {
			return err
		}
		_ = unix.Close(fd) // attached
	}
	if err := mountpoint(s.root, s.isOurs, "/dev/pts", true); err != nil {
		return err
	}
	// max= bounds this instance's share of the host's pty table.
	if err := unix.Mount("devpts", s.at("/dev/pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,max=%d", MaxPtys)); err != nil {
		return fmt.Errorf("mount a new devpts: %w", err)
	}
	if err := s.mkdirTmpfs("/dev/shm", unix.MS_NOSUID|unix.MS_NODEV, shmTmpfs); err != nil {
		return err
	}
	s.writableDirs = append(s.writableDirs, "/dev/shm")
	for name, link := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(link, s.at("/dev/"+name)); err != nil {
			return fmt.Errorf("create /dev/%s: %w", name, err)
		}
	}
	return nil
}

// procMasked are /proc entries covered, as a container's runtime does;
// procReadOnly are made read-only.
var (
	procMasked   = []string{"acpi", "asound", "kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug", "scsi", "sysrq-trigger"}
	procReadOnly = []string{"bus", "fs", "irq", "sys"}
)

// buildProc mounts a fresh /proc, which shows only the jail's processes.
func (s *setup) buildProc() error {
	if err := mountpoint(s.root, s.isOurs, "/proc", true); err != nil {
		return err
	}
	if err := unix.Mount("proc", s.at("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount a fresh /proc (a /proc partly covered, as in some containers, refuses it): %w", err)
	}
	for _, name := range procReadOnly {
		p := s.at("/proc/" + name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		fd, err := openBind(p, true, true, false, -1)
		if err != nil {
			return err
		}
		err = attach(fd, p)
		_ = unix.Close(fd)
		if err != nil {
			return err
		}
	}
	for _, name := range procMasked {
		fi, err := os.Lstat(s.at("/proc/" + name))
		if err != nil {
			continue
		}
		if err := s.mask("/proc/"+name, fi.IsDir()); err != nil {
			return err
		}
	}
	return nil
}

// writeIdentity gives the jail its own /etc/hostname and, without the
// host's network, its own /etc/hosts, bound over the host's from a small
// tmpfs that is never attached in the jail.
func (s *setup) writeIdentity() error {
	files := map[string]string{"/etc/hostname": s.spec.Hostname + "\n"}
	if s.spec.NewNet {
		files["/etc/hosts"] = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + s.spec.Hostname + "\n"
	}
	stage := s.at("/.identity")
	if err := os.Mkdir(stage, 0o755); err != nil {
		return fmt.Errorf("create the identity files: %w", err)
	}
	if err := unix.Mount("tmpfs", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, fileTmpfs); err != nil {
		return fmt.Errorf("create the identity files: %w", err)
	}
	for target, content := range files {
		if fi, err := os.Lstat(s.at(target)); err != nil || !fi.Mode().IsRegular() {
			continue // no such file in the host's /etc (or not a plain one): leave it
		}
		src := filepath.Join(stage, filepath.Base(target))
		if err := writeNew(src, content, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", target, err)
		}
		fd, err := openBind(src, true, false, false, -1)
		if err != nil {
			return err
		}
		err = attach(fd, s.at(target))
		_ = unix.Close(fd)
		if err != nil {
			return err
		}
	}
	if err := unix.Unmount(stage, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the identity files: %w", err)
	}
	return os.Remove(stage)
}

// pivot makes the root tmpfs the root, detaches the host's, and makes the
// root and /dev read-only.
func (s *setup) pivot() error {
	if err := unix.Chdir(s.root); err != nil {
		return fmt.Errorf("enter the new root: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on the new one; detaching
	// it leaves the new root alone, with no directory for the old.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("enter the new root: %w", err)
	}
	for dir, flags := range map[string]uintptr{
		"/":    unix.MS_NOSUID | unix.MS_NODEV,
		"/dev": unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC,
	} {
		if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", dir, err)
		}
	}
	return nil
}

// loopbackUp brings up lo in the jail's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	defer func() { _ = unix.Close(fd) }() // a socket only used for ioctls
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// setRlimits sets the fallback limits on this process, which the program
// and its children inherit.
func setRlimits(r rlimits) error {
	for _, l := range []struct {
		res  int
		name string
		v    int64
	}{{unix.RLIMIT_NPROC, "RLIMIT_NPROC", r.Nproc}, {unix.RLIMIT_DATA, "RLIMIT_DATA", r.Data}} {
		if l.v <= 0 {
			continue
		}
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: uint64(l.v), Max: uint64(l.v)}); err != nil {
			return fmt.Errorf("set %s: %w", l.name, err)
		}
	}
	return nil
}
