//go:build linux

package jail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/sandbox/toolbox"
)

// runHelper runs a helper inside a jail; it prints "key result" lines.
func runHelper(name string, args []string) int {
	switch name {
	case "syscalls":
		for _, c := range refusedCalls() {
			fmt.Printf("%s %s\n", c.name, errName(c.try()))
		}
		for _, c := range allowedCalls() {
			fmt.Printf("%s %s\n", c.name, errName(c.try()))
		}
	case "exhaust":
		exhaust()
	case "setid":
		// args: a directory in a writable mount.
		for _, c := range setIDCalls(args[0]) {
			fmt.Printf("%s %s\n", c.name, errName(c.try()))
		}
	case "connect":
		// args: network address...
		for i := 0; i+1 < len(args); i += 2 {
			c, err := net.Dial(args[i], args[i+1])
			if err == nil {
				_ = c.Close()
			}
			fmt.Printf("%s %s\n", args[i+1], errName(err))
		}
	case "xattr":
		for _, p := range args {
			err := unix.Setxattr(p, "user.dirtywork", []byte("x"), 0)
			fmt.Printf("user:%s %s\n", p, errName(err))
			err = unix.Setxattr(p, "security.capability", vfsCapRaw(), 0)
			fmt.Printf("security:%s %s\n", p, errName(err))
			err = unix.Setxattr(p, "trusted.dirtywork", []byte("x"), 0)
			fmt.Printf("trusted:%s %s\n", p, errName(err))
		}
	case "toolbox":
		// The tool server, as the jail's pid 1.
		return toolbox.Main(context.TODO(), args, os.Stdin, os.Stdout, os.Stderr)
	case "parent":
		// On the host: start a jail, say its pid, and wait to be killed.
		// A helper process has no test context; it lives until killed.
		j, err := Start(context.TODO(), script("sleep 300"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(j.Pid())
		_ = j.Wait()
	default:
		fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
		return 2
	}
	return 0
}

// call is one system call tried inside the jail.
type call struct {
	name string
	try  func() error
}

func errName(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	default:
		return "error:" + err.Error()
	}
}

func raw(nr uintptr, a ...uintptr) error {
	var args [6]uintptr
	copy(args[:], a)
	r, _, e := unix.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
	if e != 0 {
		return e
	}
	if int(r) >= 0 && nr != unix.SYS_MKNODAT && nr != unix.SYS_UNSHARE && nr != unix.SYS_MOUNT {
		_ = unix.Close(int(r)) // a descriptor the call made
	}
	return nil
}

func sock(domain, typ, proto int) func() error {
	return func() error { return raw(unix.SYS_SOCKET, uintptr(domain), uintptr(typ), uintptr(proto)) }
}

// atFDCWD is AT_FDCWD as a system call argument.
var atFDCWD = func() uintptr { fd := unix.AT_FDCWD; return uintptr(fd) }()

// hiBits sets the high 32 bits of an int argument, which the kernel
// ignores and a careless filter does not.
const hiBits = uintptr(0xdead) << 32

func path(s string) uintptr {
	b, _ := unix.BytePtrFromString(s)
	return uintptr(unsafe.Pointer(b))
}

// refusedCalls must all fail.
func refusedCalls() []call {
	dir, _ := os.MkdirTemp("", "calls")
	return []call{
		{"mknod_blk", func() error {
			return unix.Mknod(dir+"/blk", unix.S_IFBLK|0o600, int(unix.Mkdev(254, 0)))
		}},
		{"mknod_chr", func() error { return unix.Mknod(dir+"/chr", unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))) }},
		{"mknod_blk_hibits", func() error {
			return raw(unix.SYS_MKNODAT, atFDCWD, path(dir+"/blk2"), hiBits|unix.S_IFBLK|0o600, uintptr(unix.Mkdev(254, 0)))
		}},
		{"af_packet", sock(unix.AF_PACKET, unix.SOCK_RAW, 0x0300)},
		{"af_packet_hibits", func() error { return raw(unix.SYS_SOCKET, hiBits|unix.AF_PACKET, unix.SOCK_RAW, 0x0300) }},
		{"af_inet_raw", sock(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)},
		{"af_inet_raw_hibits", func() error { return raw(unix.SYS_SOCKET, hiBits|unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP) }},
		{"af_inet6_raw", sock(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6)},
		{"af_inet_packet", sock(unix.AF_INET, unix.SOCK_PACKET, 0x0300)},
		{"af_vsock", sock(unix.AF_VSOCK, unix.SOCK_STREAM, 0)},
		{"af_alg", sock(unix.AF_ALG, unix.SOCK_SEQPACKET, 0)},
		{"bpf", func() error { return raw(unix.SYS_BPF, 0, 0, 0) }},
		{"perf_event_open", func() error { return raw(unix.SYS_PERF_EVENT_OPEN, 0, 0, 0, 0, 0) }},
		{"userfaultfd", func() error { return raw(unix.SYS_USERFAULTFD, 0) }},
		{"io_uring_setup", func() error { return raw(unix.SYS_IO_URING_SETUP, 8, 0) }},
		{"keyctl", func() error { return raw(unix.SYS_KEYCTL, 0, 0) }},
		{"add_key", func() error { return raw(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0) }},
		{"init_module", func() error { return raw(unix.SYS_INIT_MODULE, 0, 0, 0) }},
		{"kexec_load", func() error { return raw(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0) }},
		{"mount", func() error { return unix.Mount("none", dir, "tmpfs", 0, "") }},
		{"umount2", func() error { return unix.Unmount("/tmp", unix.MNT_DETACH) }},
		{"pivot_root", func() error { return unix.PivotRoot("/tmp", "/tmp") }},
		{"open_tree", func() error { return raw(unix.SYS_OPEN_TREE, atFDCWD, path("/tmp"), unix.OPEN_TREE_CLONE) }},
		{"fsopen", func() error { return raw(unix.SYS_FSOPEN, path("tmpfs"), 0) }},
		{"mount_setattr", func() error { return raw(unix.SYS_MOUNT_SETATTR, atFDCWD, path("/"), 0, 0, 0) }},
		{"move_mount", func() error { return raw(unix.SYS_MOVE_MOUNT, 0, path(""), 0, path(""), 0) }},
		{"unshare_user", func() error { return unix.Unshare(unix.CLONE_NEWUSER) }},
		{"unshare_net", func() error { return unix.Unshare(unix.CLONE_NEWNET) }},
		{"setns", func() error { return raw(unix.SYS_SETNS, 0, 0) }},
		{"clone_newuser", func() error {
			// With CLONE_NEWUSER and no stack, a clone that got through
			// would fork; the filter answers before.
			return raw(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(unix.SIGCHLD), 0, 0, 0, 0)
		}},
		{"clone3", func() error { return raw(unix.SYS_CLONE3, 0, 0) }},
		{"sethostname", func() error { return unix.Sethostname([]byte("escaped")) }},
		{"settimeofday", func() error { return raw(unix.SYS_SETTIMEOFDAY, 0, 0) }},
		{"open_by_handle_at", func() error { return raw(unix.SYS_OPEN_BY_HANDLE_AT, 0, 0, 0) }},
		{"tiocsti", func() error { return raw(unix.SYS_IOCTL, 0, unix.TIOCSTI, path("x")) }},
		{"tiocsti_hibits", func() error { return raw(unix.SYS_IOCTL, 0, hiBits|unix.TIOCSTI, path("x")) }},
		{"chroot", func() error { return unix.Chroot("/tmp") }},
		{"syscall_9999", func() error { return raw(9999) }},
	}
}

// allowedCalls must all work.
func allowedCalls() []call {
	dir, _ := os.MkdirTemp("", "calls")
	return []call{
		{"mkfifo", func() error { return unix.Mkfifo(dir+"/fifo", 0o600) }},
		{"mknod_reg", func() error { return unix.Mknod(dir+"/reg", unix.S_IFREG|0o600, 0) }},
		{"mknod_sock", func() error { return unix.Mknod(dir+"/sock", unix.S_IFSOCK|0o600, 0) }},
		{"af_unix", sock(unix.AF_UNIX, unix.SOCK_STREAM, 0)},
		{"af_inet_stream", sock(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)},
		{"af_inet6_dgram", sock(unix.AF_INET6, unix.SOCK_DGRAM, 0)},
		{"af_netlink", sock(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)},
		{"socketpair_unix", func() error {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err == nil {
				_ = unix.Close(fds[0])
				_ = unix.Close(fds[1])
			}
			return err
		}},
		{"memfd_create", func() error { _, err := unix.MemfdCreate("x", 0); return err }},
	}
}

// vfsCapRaw is a security.capability value granting CAP_NET_RAW.
func vfsCapRaw() []byte {
	b := make([]byte, 20)
	b[0], b[3] = 0x01, 0x02 // VFS_CAP_REVISION_2 | effective
	b[4+1] = 1 << (unix.CAP_NET_RAW - 8)
	return b
}
