//go:build linux

package seccomp

import (
	"fmt"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// ProfileName names this filter in run_start.sandbox. It changes whenever
// what the filter refuses changes.
const ProfileName = "dirtywork-jail-2"

// maxReviewed is the highest system call number this profile was reviewed
// against (rseq_slice_yield on x86-64 and arm64, Linux 6.18); higher ones
// get ENOSYS.
const maxReviewed = 471

// refused are the calls refused with EPERM, whatever their arguments.
var refused = []string{
	// Mounts and namespaces: the jail's setup is done.
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
	"fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
	"unshare", "setns", "chroot",
	// Kernel attack surface.
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"open_by_handle_at", "fanotify_init",
	// The host's state.
	"sethostname", "setdomainname",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "syslog",
	// Obsolete or hardware calls.
	"uselib", "nfsservctl", "sysfs", "ustat", "_sysctl", "lookup_dcookie", "vhangup",
	// x86 only: I/O ports.
	"iopl", "ioperm",
}

// namespaceFlags are clone's flags that make a new namespace.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// allowedFamilies are the socket families a worker may use.
var allowedFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// refusedIoctls are terminal requests refused with EPERM.
var refusedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD}

// deviceBit: S_IFCHR is 0020000 and S_IFBLK 0060000; bit 13 is set in
// both and in no other file type mknod accepts (S_IFIFO, S_IFSOCK,
// S_IFREG).
const deviceBit = 0o020000

// setIDBits are S_ISUID and S_ISGID. A mode holding either is refused
// wherever a call takes one: the worktree and the worker's git dir are
// writable binds idmapped to the operator, so a setuid file made there
// would be the operator's (root's) on the host, where no nosuid holds.
const setIDBits = 0o6000

// createFlags are the open flags under which open and openat use their
// mode: O_CREAT, and O_TMPFILE's own bit (__O_TMPFILE: an unnamed file,
// linked into the tree later with linkat). Both are the generic values,
// the same on x86-64 and arm64.
const createFlags = unix.O_CREAT | 0o20000000

// Return values.
var (
	retAllow = uint32(unix.SECCOMP_RET_ALLOW)
	retEPERM = errnoRet(unix.EPERM)
	retNOSYS = errnoRet(unix.ENOSYS)
	retNOAF  = errnoRet(unix.EAFNOSUPPORT)
	retKill  = uint32(unix.SECCOMP_RET_KILL_PROCESS)
)

func errnoRet(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

// cond tests the low 32 bits of an argument: with set, any bit of mask is
// set; without, none is.
type cond struct {
	arg  int
	mask uint32
	set  bool
}

// allOf is a conjunction of conditions; an empty one always holds.
type allOf []cond

// rule gives calls to syscall name the return ret when any of when holds
// (always, when when is empty).
type rule struct {
	name string
	when []allOf
	ret  uint32
}

// low32Equal holds when the low 32 bits of arg equal v: every bit of v is
// set and none of the others.
func low32Equal(arg int, v uint32) allOf {
	var c allOf
	for bit := range 32 {
		if m := uint32(1) << bit; v&m != 0 {
			c = append(c, cond{arg: arg, mask: m, set: true})
		}
	}
	return append(c, cond{arg: arg, mask: ^v, set: false})
}

// and joins conjunctions.
func and(cs ...allOf) allOf {
	var out allOf
	for _, c := range cs {
		out = append(out, c...)
	}
	return out
}

// bits holds when any bit of mask is set in arg.
func bits(arg int, mask uint32) allOf { return allOf{{arg: arg, mask: mask, set: true}} }

// rules is the profile, tried in order: the first rule whose call and
// condition match decides; a call no rule matches is allowed.
func rules() []rule {
	var rs []rule
	for _, n := range refused {
		rs = append(rs, rule{name: n, ret: retEPERM})
	}
	rs = append(rs,
		rule{name: "clone3", ret: retNOSYS},
		rule{name: "clone", when: []allOf{bits(0, namespaceFlags)}, ret: retEPERM},
		rule{name: "mknod", when: []allOf{bits(1, deviceBit)}, ret: retEPERM},
		rule{name: "mknodat", when: []allOf{bits(2, deviceBit)}, ret: retEPERM},
	)
	rs = append(rs, setIDRules()...)
	// Raw and packet sockets of the inet families: SOCK_RAW is 3 (bits 0
	// and 1 of the type), SOCK_PACKET 10 (bit 3, which no valid inet type
	// has). The type's higher bits carry SOCK_NONBLOCK and SOCK_CLOEXEC.
	var raw []allOf
	for _, family := range []uint32{unix.AF_INET, unix.AF_INET6} {
		fam := low32Equal(0, family)
		raw = append(raw, and(fam, bits(1, 1), bits(1, 2)), and(fam, bits(1, 8)))
	}
	rs = append(rs, rule{name: "socket", when: raw, ret: retEPERM})
	var families []allOf
	for _, f := range allowedFamilies {
		families = append(families, low32Equal(0, f))
	}
	rs = append(rs,
		rule{name: "socket", when: families, ret: retAllow},
		rule{name: "socket", ret: retNOAF},
		rule{name: "socketpair", when: []allOf{low32Equal(0, unix.AF_UNIX)}, ret: retAllow},
		rule{name: "socketpair", ret: retNOAF},
	)
	var ioctls []allOf
	for _, req := range refusedIoctls {
		ioctls = append(ioctls, low32Equal(1, req))
	}
	rs = append(rs, rule{name: "ioctl", when: ioctls, ret: retEPERM})
	return rs
}

// setIDRules refuse every mode argument with S_ISUID or S_ISGID: chmod,
// fchmod, fchmodat, fchmodat2, creat, open and openat when they create
// (O_CREAT or O_TMPFILE), mkdir, mkdirat, mknod and mknodat. openat2 keeps
// its mode in a struct in memory, which a filter cannot read: it gets
// ENOSYS, and libc and the language runtimes fall back to openat.
// (Calls an architecture lacks, arm64's chmod, open, creat, mkdir and
// mknod, are skipped when the program is assembled.)
func setIDRules() []rule {
	mode := func(arg int) []allOf { return []allOf{bits(arg, setIDBits)} }
	creating := func(flags, modeArg int) []allOf {
		return []allOf{and(bits(flags, createFlags), bits(modeArg, setIDBits))}
	}
	return []rule{
		{name: "chmod", when: mode(1), ret: retEPERM},
		{name: "fchmod", when: mode(1), ret: retEPERM},
		{name: "fchmodat", when: mode(2), ret: retEPERM},
		{name: "fchmodat2", when: mode(2), ret: retEPERM},
		{name: "creat", when: mode(1), ret: retEPERM},
		{name: "open", when: creating(1, 2), ret: retEPERM},
		{name: "openat", when: creating(2, 3), ret: retEPERM},
		{name: "openat2", ret: retNOSYS},
		{name: "mkdir", when: mode(1), ret: retEPERM},
		{name: "mkdirat", when: mode(2), ret: retEPERM},
		{name: "mknod", when: mode(1), ret: retEPERM},
		{name: "mknodat", when: mode(2), ret: retEPERM},
	}
}

// Describe lists what the profile refuses, for messages and docs.
func Describe() string {
	return fmt.Sprintf("%s: refuses setuid/setgid modes (chmod, open, mkdir, mknod families; openat2 gets ENOSYS), device mknod, raw/packet and non-inet/unix/netlink sockets, bpf, perf_event_open, "+
		"userfaultfd, io_uring, keyrings, modules, kexec, every mount call, new namespaces, setns, terminal injection, "+
		"host clock/hostname/swap/reboot, foreign ABIs and calls above %d", ProfileName, maxReviewed)
}

// syscallNumbers is the name table of goarch.
func syscallNumbers(goarch string) (map[string]int, error) {
	info, err := arch.GetInfo(goarch)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile %s: %w", ProfileName, err)
	}
	return info.SyscallNames, nil
}
