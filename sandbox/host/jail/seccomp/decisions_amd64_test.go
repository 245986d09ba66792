//go:build linux && amd64

package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestProfileDecisions runs calls through the filter in a BPF interpreter,
// with x86-64 numbers.
func TestProfileDecisions(t *testing.T) {
	const native = unix.AUDIT_ARCH_X86_64
	hi := uint64(0xdead) << 32
	v := vm(t)
	for _, c := range []struct {
		name string
		in   []byte
		want uint32
	}{
		{"i386 call", data(unix.AUDIT_ARCH_I386, 1), retKill},
		{"x32 call", data(native, 0x40000000|unix.SYS_WRITE), retNOSYS},
		{"unreviewed number", data(native, maxReviewed+1), retNOSYS},
		{"read", data(native, unix.SYS_READ, 0, 0, 0), retAllow},
		{"mount", data(native, unix.SYS_MOUNT), retEPERM},
		{"io_uring_setup", data(native, unix.SYS_IO_URING_SETUP), retEPERM},
		{"clone plain", data(native, unix.SYS_CLONE, uint64(unix.SIGCHLD)), retAllow},
		{"clone thread", data(native, unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD), retAllow},
		{"clone newuser", data(native, unix.SYS_CLONE, unix.CLONE_NEWUSER), retEPERM},
		{"clone3", data(native, unix.SYS_CLONE3), retNOSYS},
		{"mknod fifo", data(native, unix.SYS_MKNOD, 0, unix.S_IFIFO|0o644), retAllow},
		{"mknod reg", data(native, unix.SYS_MKNOD, 0, unix.S_IFREG|0o644), retAllow},
		{"mknod sock", data(native, unix.SYS_MKNOD, 0, unix.S_IFSOCK|0o644), retAllow},
		{"mknod chr", data(native, unix.SYS_MKNOD, 0, unix.S_IFCHR|0o644), retEPERM},
		{"mknodat blk", data(native, unix.SYS_MKNODAT, 0, 0, unix.S_IFBLK|0o644), retEPERM},
		{"mknodat blk high bits", data(native, unix.SYS_MKNODAT, 0, 0, hi|unix.S_IFBLK), retEPERM},
		{"socket unix", data(native, unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"socket inet stream", data(native, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK), retAllow},
		{"socket inet dgram", data(native, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM), retAllow},
		{"socket inet6 seqpacket", data(native, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_SEQPACKET), retAllow},
		{"socket netlink raw", data(native, unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW), retAllow},
		{"socket inet raw", data(native, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW), retEPERM},
		{"socket inet raw cloexec", data(native, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC), retEPERM},
		{"socket inet6 raw", data(native, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_RAW), retEPERM},
		{"socket inet packet", data(native, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_PACKET), retEPERM},
		{"socket inet raw high bits", data(native, unix.SYS_SOCKET, hi|unix.AF_INET, unix.SOCK_RAW), retEPERM},
		{"socket packet", data(native, unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), retNOAF},
		{"socket packet high bits", data(native, unix.SYS_SOCKET, hi|unix.AF_PACKET, unix.SOCK_RAW), retNOAF},
		{"socket unix high bits", data(native, unix.SYS_SOCKET, hi|unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"socket vsock", data(native, unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM), retNOAF},
		{"socketpair unix", data(native, unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		{"socketpair inet", data(native, unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM), retNOAF},
		{"ioctl tiocsti", data(native, unix.SYS_IOCTL, 0, unix.TIOCSTI), retEPERM},
		{"ioctl tiocsti high bits", data(native, unix.SYS_IOCTL, 0, hi|unix.TIOCSTI), retEPERM},
		{"ioctl tcgets", data(native, unix.SYS_IOCTL, 0, unix.TCGETS), retAllow},
		{"ioctl tiocgwinsz", data(native, unix.SYS_IOCTL, 0, unix.TIOCGWINSZ), retAllow},
	} {
		got, err := v.Run(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if uint32(got) != c.want {
			t.Errorf("%s: got %#x, want %#x", c.name, got, c.want)
		}
	}
}
