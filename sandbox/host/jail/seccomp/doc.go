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
//   - Setuid and setgid files: every call that takes a mode (chmod,
//     fchmod, fchmodat, fchmodat2; open, openat and creat when they
//     create, O_TMPFILE included; mkdir, mkdirat, mknod, mknodat) is
//     refused when the mode holds S_ISUID or S_ISGID. The worktree and the
//     worker's git dir are writable binds idmapped to the operator: a
//     setuid file made there is the operator's on the host (root's, for a
//     root operator), where the jail's nosuid no longer holds. openat2
//     keeps its mode in a struct in memory, which a filter cannot read, so
//     it gets ENOSYS and libc falls back to openat. (File capabilities,
//     the security.capability attribute, need CAP_SETFCAP, which the
//     worker never has.)
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
// The program is assembled here, from go-seccomp-bpf's system call tables:
// its own assembler leaves an argument in the accumulator after a
// condition, so the rules after a conditional one compare the system call
// number against that argument (an AF_PACKET socket got through a socket
// rule followed by a catch-all that way).
//
// Left allowed, on purpose: ptrace and process_vm_* (debuggers; the tool
// server is non-dumpable, and the PID namespace holds nothing else of
// value), memfd_create, landlock_* and seccomp (a program may confine
// itself further), name_to_handle_at, personality.
package seccomp
