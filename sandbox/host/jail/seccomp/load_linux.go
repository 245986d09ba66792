package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// auditArch is the seccomp_data.arch of the running architecture.
func auditArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("seccomp profile %s has not been reviewed for %s", ProfileName, runtime.GOARCH)
}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
)

// Program assembles the whole filter: a prologue of ours, then the
// library's policy.
//
// The prologue kills a call of any foreign architecture outright. The
// library would let it through: its own architecture check jumps to the
// policy's default action, which here is allow, so 32-bit calls made
// with int 0x80 would bypass every rule. Then calls above maxReviewed get
// ENOSYS.
func Program() ([]unix.SockFilter, error) {
	native, err := auditArch()
	if err != nil {
		return nil, err
	}
	policy := Policy(runtime.GOARCH)
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp profile %s: %w", ProfileName, err)
	}
	prologue := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: native, SkipTrue: 1},
		bpf.RetConstant{Val: uint32(libseccomp.ActionKillProcess)},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		// x32 numbers (bit 30 set) are above maxReviewed too; the library
		// answers them the same way.
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: maxReviewed, SkipFalse: 1},
		bpf.RetConstant{Val: uint32(errnoAction(unix.ENOSYS))},
	}
	raw, err := bpf.Assemble(append(prologue, body...))
	if err != nil {
		return nil, fmt.Errorf("assemble seccomp profile %s: %w", ProfileName, err)
	}
	if len(raw) > 4096 { // BPF_MAXINSNS
		return nil, fmt.Errorf("seccomp profile %s has %d instructions, more than the kernel takes", ProfileName, len(raw))
	}
	out := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		out[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	return out, nil
}

// Load installs the filter on the calling thread, which must be locked to
// its goroutine and have no_new_privs set; what it executes next inherits
// the filter. Only that thread is filtered: the caller is about to
// execve, which ends the others.
func Load(prog []unix.SockFilter) error {
	if len(prog) == 0 {
		return fmt.Errorf("seccomp profile %s: empty program", ProfileName)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("load seccomp profile %s: %w", ProfileName, errno)
	}
	return nil
}

// Supported reports whether the kernel has seccomp filters.
func Supported() bool {
	// Strict mode with a nonzero flag is invalid: EINVAL when the call
	// exists, ENOSYS (or EPERM under a foreign filter) when not.
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_STRICT, 1, 0)
	return errno == unix.EINVAL
}
