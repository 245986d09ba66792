package jail

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/sandbox/host/jail/cgroup"
	"github.com/dirtywork/dirtywork/sandbox/host/jail/seccomp"
)

// selfExe runs the very binary this process was started from, even if the
// file at its path was replaced (an upgrade during a run).
const selfExe = "/proc/self/exe"

// Host ids of a root operator's jails: each jail draws one uid (and the
// same gid) from this range, which no account of a usual system has (it is
// inside the range systemd sets aside for containers), so the worker owns
// nothing on the host and two jails are two users.
const (
	hostIDBase  = 0x60000000
	hostIDRange = 1 << 20
)

// Start builds a jail for cfg and starts its program as the jail's pid 1.
// ctx bounds the setup only: the jail lives until its program ends or
// Kill. On success the caller must Wait (after Kill, if need be); on
// failure nothing of the jail is left. A layer that cannot be set up is a
// *SetupError naming it, unless cfg.AllowUnconfined leaves it off.
func Start(ctx context.Context, cfg Config) (*Jail, error) {
	j, _, err := start(ctx, cfg, false)
	return j, err
}

// layerOff is one layer left off, in words: "<layer>: <why>".
func layerOff(layer, why string) string { return layer + ": " + why }

// launch is one attempt at starting a jail.
type launch struct {
	cfg  Config
	root bool // the operator is root
	// insideUID and insideGID are the program's ids inside, hostUID and
	// hostGID outside.
	insideUID, insideGID, hostUID, hostGID int
	// idmap: writable binds are idmapped (a root operator's jail).
	idmap bool
	// off are the layers left off, in words.
	off []string
}

// start starts a jail (or, with probe, a setup that reports and exits,
// and only its Info is returned).
func start(ctx context.Context, cfg Config, probe bool) (*Jail, Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, Info{}, fmt.Errorf("jail: %w", err)
	}
	cfg = withDefaults(cfg)
	if err := validate(cfg, probe); err != nil {
		return nil, Info{}, err
	}
	l := &launch{cfg: cfg, root: os.Geteuid() == 0}
	l.insideUID, l.insideGID = os.Getuid(), os.Getgid()
	l.hostUID, l.hostGID = l.insideUID, l.insideGID
	if l.root {
		id, err := hostID()
		if err != nil {
			return nil, Info{}, err
		}
		l.hostUID, l.hostGID, l.idmap = id, id, true
	}
	j, info, err := l.run(ctx, probe)
	var ie *idmapError
	if errors.As(err, &ie) && cfg.AllowUnconfined {
		// Without idmapped mounts a per-run uid would own the files it
		// writes on the host; the jail then maps its root to the host's,
		// capabilities still dropped, as asked.
		l.hostUID, l.hostGID, l.idmap = 0, 0, false
		l.off = append(l.off, layerOff(LayerIDMap, ie.Error()+"; the worker runs as the host's uid 0 (with no capability)"))
		return l.run(ctx, probe)
	}
	return j, info, err
}

// withDefaults fills cfg's zero values.
func withDefaults(cfg Config) Config {
	if cfg.Hostname == "" {
		cfg.Hostname = DefaultHostname
	}
	if cfg.TmpSize == 0 {
		cfg.TmpSize = DefaultTmpSize
	}
	if cfg.PidsLimit == 0 {
		cfg.PidsLimit = DefaultPidsLimit
	}
	if cfg.MemoryBytes == 0 {
		cfg.MemoryBytes = DefaultMemory
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = DefaultCPUs
	}
	return cfg
}

// minCPUQuota is the kernel's least CPU quota, in microseconds.
const minCPUQuota = 1000

// cpuQuota is the quota of cpus CPUs in every default period, 0 for no
// cap.
func cpuQuota(cpus float64) int64 {
	if cpus <= 0 {
		return 0
	}
	return max(minCPUQuota, int64(math.Round(cpus*cgroup.DefaultCPUPeriod)))
}

// validate refuses a config no jail can be built from.
func validate(cfg Config, probe bool) error {
	if !probe && !filepath.IsAbs(cfg.Path) {
		return fmt.Errorf("jail: program path %q is not absolute", cfg.Path)
	}
	if cfg.Dir != "" && !filepath.IsAbs(cfg.Dir) {
		return fmt.Errorf("jail: working directory %q is not absolute", cfg.Dir)
	}
	if cfg.TmpSize < 0 {
		return fmt.Errorf("jail: negative /tmp size %d", cfg.TmpSize)
	}
	if len(cfg.Hostname) > 64 {
		return fmt.Errorf("jail: hostname %q is longer than 64 bytes", cfg.Hostname)
	}
	if math.IsNaN(cfg.CPUs) || math.IsInf(cfg.CPUs, 0) {
		return fmt.Errorf("jail: CPU cap %v is not a number", cfg.CPUs)
	}
	return nil
}

// hostID draws a root operator's jail uid.
func hostID() (int, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(hostIDRange))
	if err != nil {
		return 0, fmt.Errorf("jail: draw a uid: %w", err)
	}
	return hostIDBase + int(n.Int64()), nil
}

// pipes are the program's three standard streams: the child's ends and
// ours.
type pipes struct {
	stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW *os.File
}

func newPipes() (*pipes, error) {
	var p pipes
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("jail: create the stdin pipe: %w", err)
	}
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		p.close()
		return nil, fmt.Errorf("jail: create the stdout pipe: %w", err)
	}
	if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
		p.close()
		return nil, fmt.Errorf("jail: create the stderr pipe: %w", err)
	}
	return &p, nil
}

// chown gives the three pipes to uid and gid (a pipe's ends share one
// inode).
func (p *pipes) chown(uid, gid int) error {
	for _, f := range []*os.File{p.stdinR, p.stdoutW, p.stderrW} {
		if err := f.Chown(uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// closeChild closes the child's ends, which it holds copies of.
func (p *pipes) closeChild() {
	for _, f := range []*os.File{p.stdinR, p.stdoutW, p.stderrW} {
		if f != nil {
			_ = f.Close() // a pipe end: closing it loses nothing
		}
	}
}

func (p *pipes) close() {
	p.closeChild()
	for _, f := range []*os.File{p.stdinW, p.stdoutR, p.stderrR} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// run makes one attempt.
func (l *launch) run(ctx context.Context, probe bool) (_ *Jail, _ Info, err error) {
	cfg := l.cfg
	entries, ro, hidden, err := planRoot(cfg)
	if err != nil {
		return nil, Info{}, fmt.Errorf("jail: %w", err)
	}
	sp := spec{
		Path: cfg.Path, Args: cfg.Args, Env: cfg.Env, Dir: cfg.Dir, Hostname: cfg.Hostname,
		Entries: entries, TmpSize: cfg.TmpSize, NewNet: !cfg.AllowNetwork,
		Seccomp: true, AllowUnconfined: cfg.AllowUnconfined, Probe: probe,
	}
	// The layers off in this attempt: those start already gave up (the
	// idmapping), then what this attempt finds.
	off := append([]string(nil), l.off...)
	if abi := min(kernelLandlockABI(), maxLandlockABI()); abi > 0 {
		sp.LandlockABI = abi
	} else if !cfg.AllowUnconfined && !probe {
		return nil, Info{}, &SetupError{Layer: LayerLandlock, Msg: errNoLandlock.Error() +
			" (fix: a kernel with CONFIG_SECURITY_LANDLOCK and landlock in its lsm= list, or DIRTYWORK_ALLOW_UNCONFINED=1)"}
	} else {
		off = append(off, layerOff(LayerLandlock, errNoLandlock.Error()))
	}
	if !seccomp.Supported() {
		if !cfg.AllowUnconfined && !probe {
			return nil, Info{}, &SetupError{Layer: LayerSeccomp, Msg: "the kernel has no seccomp filters (fix: a kernel with CONFIG_SECCOMP_FILTER, or DIRTYWORK_ALLOW_UNCONFINED=1)"}
		}
		sp.Seccomp = false
		off = append(off, layerOff(LayerSeccomp, "the kernel has no seccomp filters"))
	}

	limits := cgroup.Limits{Pids: int64(max(cfg.PidsLimit, 0)), Memory: max(cfg.MemoryBytes, 0), CPUQuota: cpuQuota(cfg.CPUs)}
	h := cgroup.System()
	h.Sweep(staleGroup)
	group, cgErr := h.Create(groupPrefix+strconv.Itoa(os.Getpid())+"-"+randomSuffix(), limits)
	mechanism := "rlimit"
	cpu := CPULimit{Mechanism: "none"}
	if limits.CPUQuota > 0 {
		cpu = CPULimit{CPUs: cfg.CPUs, Mechanism: "nice"}
	}
	if cgErr == nil {
		mechanism = group.Mechanism()
		defer func() {
			if err != nil {
				_ = group.Remove()
			}
		}()
		if file, why := group.CPU(); file != "" {
			cpu.Mechanism, cpu.QuotaMicros, cpu.PeriodMicros = mechanism, limits.CPUQuota, cgroup.DefaultCPUPeriod
		} else if why != "" {
			cpu.Reason = why
		}
	} else {
		sp.Rlimits = &rlimits{Nproc: limits.Pids, Data: limits.Memory}
		if limits.CPUQuota > 0 {
			cpu.Reason = cgErr.Error()
		}
	}
	if cpu.Mechanism == "nice" {
		sp.Nice = Nice
	}
	sp.Nofile = uint64(NofileLimit(cfg.PidsLimit))
	var cur unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &cur) == nil && cur.Max < sp.Nofile {
		sp.Nofile = cur.Max // the jail cannot raise it
	}

	p, err := newPipes()
	if err != nil {
		return nil, Info{}, err
	}
	if l.hostUID != os.Getuid() {
		// A pipe belongs to whoever made it, mode 0600: the program could
		// use the descriptors it was given but not reopen them by path
		// (echo > /dev/stderr is /proc/self/fd/2). They become its own.
		if err := p.chown(l.hostUID, l.hostGID); err != nil {
			p.close()
			return nil, Info{}, fmt.Errorf("jail: hand the program its pipes: %w", err)
		}
	}
	sock, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		p.close()
		return nil, Info{}, fmt.Errorf("jail: create the control socket: %w", err)
	}
	ctl := os.NewFile(uintptr(sock[0]), "jail-control")
	childCtl := os.NewFile(uintptr(sock[1]), "jail-control-child")
	defer func() { _ = ctl.Close() }() // the program's end closed at exec; ours has done its work

	cmd := exec.Command(selfExe, setupArg)
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.stdinR, p.stdoutW, p.stderrW
	cmd.ExtraFiles = []*os.File{childCtl} // fd 3
	cmd.SysProcAttr = l.sysProcAttr()
	err = cmd.Start()
	_ = childCtl.Close() // the child has its copy
	p.closeChild()
	if err != nil {
		p.close()
		return nil, Info{}, &SetupError{Layer: LayerUserNS, Msg: fmt.Sprintf("start the jail's namespaces: %v "+
			"(fix: allow user namespaces, e.g. sysctl kernel.unprivileged_userns_clone=1 or "+
			"kernel.apparmor_restrict_unprivileged_userns=0, or run where they are not blocked)", err)}
	}
	fail := func(e error) (*Jail, Info, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		p.close()
		return nil, Info{}, e
	}
	if group != nil {
		if err := group.Add(cmd.Process.Pid); err != nil {
			return fail(&SetupError{Layer: LayerPids, Msg: err.Error()})
		}
	}
	fds, err := l.openBinds(cmd.Process.Pid, sp.Entries)
	if err != nil {
		return fail(err)
	}
	err = sendSpec(sock[0], sp, fds)
	for _, fd := range fds {
		_ = unix.Close(fd) // the child has its own copies now
	}
	if err != nil {
		return fail(&SetupError{Layer: LayerRoot, Msg: err.Error()})
	}
	rep, err := awaitReport(ctx, ctl, cmd)
	if err != nil {
		return fail(err)
	}
	info := l.info(rep, ro, mechanism, cgErr, off)
	info.Root.Hidden = hidden
	info.Limits.CPU = cpu
	info.Limits.Nofile = Limit{Max: int64(sp.Nofile), Mechanism: "rlimit"}
	info.Limits.Ptys = Limit{Max: MaxPtys, Mechanism: "devpts"}
	if probe {
		_ = cmd.Wait()
		p.close()
		if group != nil {
			_ = group.Remove()
		}
		return nil, info, nil
	}
	j := &Jail{Stdin: p.stdinW, Stdout: p.stdoutR, Stderr: p.stderrR, cmd: cmd, info: info}
	if group != nil {
		j.release = group.Remove
	}
	return j, info, nil
}

// sysProcAttr are the setup child's namespaces and ids.
func (l *launch) sysProcAttr() *syscall.SysProcAttr {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if !l.cfg.AllowNetwork {
		flags |= unix.CLONE_NEWNET
	}
	attr := &syscall.SysProcAttr{
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: l.insideUID, HostID: l.hostUID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: l.insideGID, HostID: l.hostGID, Size: 1}},
		// A new session and SIGKILL at our death: the jail never outlives
		// dirtywork.
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
	}
	if l.insideUID != 0 {
		// A non-root uid loses its capabilities at execve; the setup child
		// keeps, in its own user namespace only, those it builds the jail
		// with, and drops them all before the program runs.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN}
	}
	if l.root {
		// The child starts as the host's root in a namespace that does not
		// map it; it becomes the mapped uid before anything of ours runs,
		// and drops root's supplementary groups (gid 0 among them).
		attr.GidMappingsEnableSetgroups = true
		attr.Credential = &syscall.Credential{Uid: uint32(l.insideUID), Gid: uint32(l.insideGID), Groups: []uint32{}}
	}
	return attr
}

// openBinds makes the binds a root operator's parent must make: every one
// (the child, an unprivileged uid on the host, could not reach sources in
// root's home), configured mounts and read-only paths idmapped through the
// child's user namespace.
// A non-root operator's child makes its own, and nil is returned. Each
// bind entry's FD is set to its index in the result.
func (l *launch) openBinds(pid int, entries []entry) (fds []int, err error) {
	if !l.root {
		return nil, nil
	}
	userns := -1
	defer func() {
		if userns >= 0 {
			_ = unix.Close(userns) // only named the namespace
		}
		if err != nil {
			for _, fd := range fds {
				_ = unix.Close(fd)
			}
		}
	}()
	if l.idmap {
		userns, err = unix.Open(fmt.Sprintf("/proc/%d/ns/user", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &SetupError{Layer: LayerIDMap, Msg: fmt.Sprintf("open the jail's user namespace: %v", err)}
		}
	}
	for i, e := range entries {
		if e.Kind != entryBind {
			continue
		}
		ns := -1
		if e.IDMap {
			ns = userns
		}
		fd, err := parentBind(e.Source, e.ReadOnly, e.Recursive, false, ns)
		var ie *idmapError
		if errors.As(err, &ie) && e.ReadOnly {
			// Read-only, its files can only be read: unmapped, they show as
			// nobody's, which changes what the program sees of their
			// owner and nothing of what it may do.
			fd, err = openBind(e.Source, e.ReadOnly, e.Recursive, false, -1)
		}
		if err != nil {
			if errors.As(err, &ie) {
				return fds, ie
			}
			return fds, &SetupError{Layer: LayerRoot, Msg: err.Error()}
		}
		entries[i].FD = len(fds)
		fds = append(fds, fd)
	}
	return fds, nil
}

// parentBind is openBind in the parent; tests stand in a file system that
// cannot be idmapped.
var parentBind = openBind

// sendSpec sends the spec, with the descriptors, over the control socket.
func sendSpec(sock int, sp spec, fds []int) error {
	data, err := json.Marshal(sp)
	if err != nil {
		return fmt.Errorf("encode the jail's spec: %w", err)
	}
	msg := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(msg, uint32(len(data)))
	copy(msg[4:], data)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	// The descriptors ride on the first bytes; the rest follows as a
	// stream.
	first := min(len(msg), 32<<10)
	if err := unix.Sendmsg(sock, msg[:first], oob, nil, 0); err != nil {
		return fmt.Errorf("send the jail's spec: %w", err)
	}
	for rest := msg[first:]; len(rest) > 0; {
		n, err := unix.Write(sock, rest)
		if err != nil {
			return fmt.Errorf("send the jail's spec: %w", err)
		}
		rest = rest[n:]
	}
	return nil
}

// awaitReport reads the child's reports until the control socket closes:
// at the program's execve (success), or after a failure or a probe. ctx
// ending kills the child.
func awaitReport(ctx context.Context, ctl *os.File, cmd *exec.Cmd) (*report, error) {
	type result struct {
		rep *report
		err error
	}
	done := make(chan result, 1)
	go func() {
		var last *report
		sc := bufio.NewScanner(ctl)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var r report
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				done <- result{err: &SetupError{Layer: LayerRoot, Msg: "unreadable report from the jail's setup: " + sc.Text()}}
				return
			}
			if r.Error != "" {
				done <- result{err: &SetupError{Layer: r.Layer, Msg: r.Error}}
				return
			}
			last = &r
		}
		if last == nil {
			done <- result{err: &SetupError{Layer: LayerRoot, Msg: fmt.Sprintf(
				"the jail's setup ended without a word (%v); does the binary call jail.MaybeRun first in main?", sc.Err())}}
			return
		}
		done <- result{rep: last}
	}()
	select {
	case r := <-done:
		return r.rep, r.err
	case <-ctx.Done():
		_ = cmd.Process.Kill() // the reader then sees end of file
		<-done
		return nil, fmt.Errorf("jail setup: %w", ctx.Err())
	}
}

// groupPrefix starts the name of a jail's cgroup, followed by the pid of
// the process that made it.
const groupPrefix = "jail-"

// staleGroup reports whether a cgroup of that name was made by a process
// that is gone: a crashed run's, which could not remove it.
func staleGroup(name string) bool {
	rest, ok := strings.CutPrefix(name, groupPrefix)
	if !ok {
		return false
	}
	pidText, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// randomSuffix is a short random name part.
func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on Linux
	return fmt.Sprintf("%x", b)
}

// info describes a started jail.
func (l *launch) info(rep *report, ro []string, mechanism string, cgErr error, off []string) Info {
	cfg := l.cfg
	ns := []string{"user", "mnt", "pid", "ipc", "uts", "cgroup"}
	network := "host"
	if !cfg.AllowNetwork {
		ns = append(ns, "net")
		network = "none"
	}
	var mounts []string
	for _, m := range cfg.Mounts {
		t := filepath.Clean(m.Target)
		if m.ReadOnly {
			t += ":ro"
		}
		mounts = append(mounts, t)
	}
	limit := func(n int64) Limit {
		if n <= 0 {
			return Limit{Mechanism: "none"}
		}
		return Limit{Max: n, Mechanism: mechanism}
	}
	off = append(off, rep.Off...)
	info := Info{
		Kind:       "jail",
		Namespaces: ns,
		UserNS: UserNSInfo{
			Enabled:        true,
			UID:            IDMap{Inside: l.insideUID, Host: l.hostUID},
			GID:            IDMap{Inside: l.insideGID, Host: l.hostGID},
			IDMappedMounts: l.idmap,
		},
		Root: RootInfo{
			Kind: "pivot_root:tmpfs", ReadOnly: ro, Mounts: mounts, TmpBytes: cfg.TmpSize,
			Dev: "minimal", Proc: "fresh", Sys: "absent",
		},
		Network:      NetworkInfo{Mode: network},
		Seccomp:      SeccompInfo{Enabled: rep.Seccomp},
		Landlock:     LandlockInfo{Enabled: rep.LandlockABI > 0, ABI: rep.LandlockABI, Scopes: rep.LandlockScopes},
		Capabilities: "none",
		NoNewPrivs:   true,
		Limits:       LimitsInfo{Pids: limit(int64(cfg.PidsLimit)), Memory: limit(cfg.MemoryBytes)},
		Off:          off,
	}
	if cgErr != nil {
		info.Limits.Reason = cgErr.Error()
	}
	if rep.Seccomp {
		info.Seccomp.Profile = seccomp.ProfileName
	}
	if !info.Landlock.Enabled {
		info.Landlock.ABI = kernelLandlockABI()
	}
	return info
}

// Probe tries every layer out on this system, by building a jail that
// runs nothing, and reports each: for preflight (Report.Err is a refusal,
// exit 2, unless DIRTYWORK_ALLOW_UNCONFINED=1 and no essential layer is
// missing) and for `dirtywork doctor`. Idmapped mounts depend on the file
// system: the probe tries them on a temporary directory and on each of
// dirs (the repository, say), which it binds into the jail that runs
// nothing; nothing is written there.
func Probe(ctx context.Context, dirs ...string) Report {
	return probeLayers(ctx, dirs)
}
