// Package seccomp is the jail's third layer: a seccomp filter that refuses
// the system calls a worker has no business making, whatever the
// namespaces, the mounts and Landlock already stop.
//
// # Why these calls
//
// The filter starts from what an attacker inside the jail would try, class
// by class, and refuses each class outright even where the jail's other
// layers (no capabilities, a user namespace, read-only binds) already make
// the call fail: a kernel bug in one layer then still meets another.
//
//   - Foreign system call ABIs: a 64-bit process can make 32-bit calls
//     (int 0x80 on x86-64) or x32 calls, which have numbers of their own
//     and would slip past a filter keyed on the native numbers. A call of
//     a foreign architecture kills the process; an x32 call gets ENOSYS.
//   - Calls newer than this profile (numbers above the highest one
//     reviewed) get ENOSYS, which programs treat as an old kernel: a
//     kernel upgrade cannot add an unreviewed call to the jail.
//   - Devices: mknod and mknodat of character and block devices (a block
//     device node for the disk behind a writable mount, then raw writes).
//     FIFOs, sockets and regular files stay allowed.
//   - Raw packet access: socket and socketpair only for AF_UNIX, AF_INET,
//     AF_INET6 and AF_NETLINK (everything else, AF_PACKET and AF_VSOCK,
//     which reaches a hypervisor host whatever the network namespace, gets
//     EAFNOSUPPORT), and no SOCK_RAW or SOCK_PACKET for the inet families
//     (sniffing another run's traffic on a shared loopback).
//   - Kernel attack surface with no use in a build: bpf, perf_event_open,
//     userfaultfd (the classic race-widening primitive), io_uring (its
//     operations are performed without system calls and so bypass this
//     filter), the keyring (keyctl, add_key, request_key), kernel modules
//     and kexec.
//   - Changing the jail: every mount-family call (mount, umount2,
//     pivot_root, move_mount, open_tree, open_tree_attr, fsopen, fsmount,
//     fsconfig, fspick, mount_setattr), new namespaces and joining others
//     (unshare, setns, and clone with any CLONE_NEW* flag; clone3 passes
//     its flags in memory a filter cannot read, so it gets ENOSYS and libc
//     falls back to clone), chroot, and handle-based opens that bypass
//     path checks (open_by_handle_at, the "shocker" escape).
//   - The host's state: sethostname and setdomainname, the clocks
//     (settimeofday, clock_settime, clock_adjtime, adjtimex), swap,
//     reboot, acct, quotas, the kernel log (syslog), I/O ports (iopl,
//     ioperm), fanotify, and obsolete calls (uselib, nfsservctl, sysfs,
//     ustat, _sysctl, lookup_dcookie, vhangup).
//   - Terminal injection: the TIOCSTI, TIOCLINUX and TIOCSETD ioctls
//     (pushing input into a terminal, or changing its line discipline, a
//     history of kernel bugs).
//
// Comparisons on int arguments look at the low 32 bits only, as the kernel
// does: a caller cannot dodge a rule by setting the high bits.
//
// Left allowed, on purpose: ptrace and process_vm_* (debuggers; the tool
// server is non-dumpable, and the PID namespace holds nothing else of
// value), memfd_create, landlock_* and seccomp (a program may confine
// itself further), name_to_handle_at, personality.
package seccomp

import (
	"fmt"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// ProfileName names this filter in run_start.sandbox. It changes whenever
// what the filter refuses changes.
const ProfileName = "dirtywork-jail-1"

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
}

// refusedAMD64 are x86-only calls, refused with EPERM.
var refusedAMD64 = []string{"iopl", "ioperm"}

// namespaceFlags are clone's flags that make a new namespace.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// Socket families allowed.
var allowedFamilies = []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

// refusedIoctls are terminal requests refused with EPERM.
var refusedIoctls = []uint64{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD}

// errnoAction is a seccomp errno return with errno e.
func errnoAction(e unix.Errno) libseccomp.Action {
	return libseccomp.ActionErrno | libseccomp.Action(e)
}

// low32Equal are conditions matching when the low 32 bits of argument arg
// equal v, whatever the high bits hold: every bit set in v is set, and
// none of the others of the low word. The library's own Equal compares all
// 64 bits, which a caller could dodge by setting the high ones for an
// argument the kernel truncates to an int.
func low32Equal(arg uint32, v uint64) []libseccomp.Condition {
	var conds []libseccomp.Condition
	for bit := range 32 {
		if m := uint64(1) << bit; v&m != 0 {
			conds = append(conds, libseccomp.Condition{Argument: arg, Operation: libseccomp.BitsSet, Value: m})
		}
	}
	return append(conds, libseccomp.Condition{Argument: arg, Operation: libseccomp.BitsNotSet, Value: ^v & 0xffffffff})
}

// bitsSet is a condition matching when any bit of m is set in argument arg.
func bitsSet(arg uint32, m uint64) libseccomp.Condition {
	return libseccomp.Condition{Argument: arg, Operation: libseccomp.BitsSet, Value: m}
}

// with is one syscall matched under conditions.
func with(name string, conds ...libseccomp.Condition) libseccomp.NameWithConditions {
	return libseccomp.NameWithConditions{Name: name, Conditions: conds}
}

// Policy is the profile as the library's policy, for arch ("" is the
// running one): groups are tried in order, the first that matches decides,
// and what matches none is allowed.
func Policy(arch string) libseccomp.Policy {
	names := append([]string(nil), refused...)
	if arch == "amd64" {
		names = append(names, refusedAMD64...)
	}

	// Raw and packet sockets of the inet families: SOCK_RAW is 3 (bits 0
	// and 1 of the type), SOCK_PACKET 10 (bit 3; no valid inet type has
	// it). The type's high bits carry SOCK_NONBLOCK and SOCK_CLOEXEC.
	var raw []libseccomp.NameWithConditions
	for _, family := range []uint64{unix.AF_INET, unix.AF_INET6} {
		fam := low32Equal(0, family)
		raw = append(raw,
			with("socket", append(append([]libseccomp.Condition(nil), fam...), bitsSet(1, 1), bitsSet(1, 2))...),
			with("socket", append(append([]libseccomp.Condition(nil), fam...), bitsSet(1, 8))...),
		)
	}
	var families []libseccomp.NameWithConditions
	for _, family := range allowedFamilies {
		families = append(families, with("socket", low32Equal(0, family)...))
	}
	families = append(families, with("socketpair", low32Equal(0, unix.AF_UNIX)...))

	var ioctls []libseccomp.NameWithConditions
	for _, req := range refusedIoctls {
		ioctls = append(ioctls, with("ioctl", low32Equal(1, req)...))
	}

	// S_IFCHR is 0020000 and S_IFBLK 0060000: bit 13 is set in both and in
	// no other file type mknod accepts (S_IFIFO, S_IFSOCK, S_IFREG).
	const deviceBit = 0o020000

	return libseccomp.Policy{
		DefaultAction: libseccomp.ActionAllow,
		Syscalls: []libseccomp.SyscallGroup{
			{Action: libseccomp.ActionErrno, Names: names},
			{Action: errnoAction(unix.ENOSYS), Names: []string{"clone3"}},
			{Action: libseccomp.ActionErrno, NamesWithCondtions: []libseccomp.NameWithConditions{
				with("clone", bitsSet(0, namespaceFlags)),
				with("mknod", bitsSet(1, deviceBit)),
				with("mknodat", bitsSet(2, deviceBit)),
			}},
			{Action: libseccomp.ActionErrno, NamesWithCondtions: raw},
			{Action: libseccomp.ActionAllow, NamesWithCondtions: families},
			{Action: errnoAction(unix.EAFNOSUPPORT), Names: []string{"socket", "socketpair"}},
			{Action: libseccomp.ActionErrno, NamesWithCondtions: ioctls},
		},
	}
}

// Describe lists what the profile refuses, for messages and docs.
func Describe() string {
	return fmt.Sprintf("%s: refuses device mknod, raw/packet and non-inet/unix/netlink sockets, bpf, perf_event_open, "+
		"userfaultfd, io_uring, keyrings, modules, kexec, every mount call, new namespaces, setns, terminal injection, "+
		"host clock/hostname/swap/reboot, foreign ABIs and calls above %d", ProfileName, maxReviewed)
}
