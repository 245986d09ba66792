package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// auditArch is the seccomp_data.arch of the running architecture.
func auditArch() (uint32, error) { return auditArchOf(runtime.GOARCH) }

// auditArchOf is the seccomp_data.arch of goarch.
func auditArchOf(goarch string) (uint32, error) {
	switch goarch {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("seccomp profile %s has not been reviewed for %s", ProfileName, goarch)
}

// Offsets in struct seccomp_data: the call's number, its architecture,
// and the low word of argument i at offArgs+8*i (both architectures are
// little-endian).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// Program assembles the whole filter.
//
// A call of a foreign architecture (a 32-bit call made with int 0x80 on
// x86-64) kills the process; calls above maxReviewed, the x32 ones
// among them (bit 30), get ENOSYS. Then each rule reloads the call's
// number, so no condition's argument is ever compared as one.
func Program() ([]unix.SockFilter, error) { return program(runtime.GOARCH) }

// program assembles the filter for goarch (tests assemble both
// architectures' on either).
func program(goarch string) ([]unix.SockFilter, error) {
	native, err := auditArchOf(goarch)
	if err != nil {
		return nil, err
	}
	numbers, err := syscallNumbers(goarch)
	if err != nil {
		return nil, err
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: native, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: maxReviewed, SkipFalse: 1},
		bpf.RetConstant{Val: retNOSYS},
	}
	for _, r := range rules() {
		nr, ok := numbers[r.name]
		if !ok {
			// A call this architecture lacks (arm64 has no mknod and no
			// iopl) cannot be made: nothing to refuse. The tests check
			// every name against the x86-64 table.
			continue
		}
		body, err := ruleBody(r)
		if err != nil {
			return nil, err
		}
		// if nr != this call: jump over the body (a long jump, so a body
		// of any length fits).
		prog = append(prog,
			bpf.LoadAbsolute{Off: offNr, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipTrue: 1},
			bpf.Jump{Skip: uint32(len(body))},
		)
		prog = append(prog, body...)
	}
	prog = append(prog, bpf.RetConstant{Val: retAllow})
	raw, err := bpf.Assemble(prog)
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

// ruleBody is a rule for a call whose number matched: for each
// conjunction, its tests (a load and a jset each; a failing one jumps past
// the conjunction's return), then the return. An unconditional rule is the
// return alone. When no conjunction holds, control falls through to the
// next rule.
func ruleBody(r rule) ([]bpf.Instruction, error) {
	if len(r.when) == 0 {
		return []bpf.Instruction{bpf.RetConstant{Val: r.ret}}, nil
	}
	var body []bpf.Instruction
	for _, conj := range r.when {
		n := len(conj)
		if 2*n > 250 {
			return nil, fmt.Errorf("seccomp rule for %s: a conjunction of %d tests is too long", r.name, n)
		}
		for i, c := range conj {
			// Instructions left after this test's jset up to and including
			// the return: the tests after it, then the return.
			fail := uint8(2*(n-i-1) + 1)
			test := bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.mask}
			if c.set {
				test.SkipFalse = fail
			} else {
				test.SkipTrue = fail
			}
			body = append(body, bpf.LoadAbsolute{Off: offArgs + 8*uint32(c.arg), Size: 4}, test)
		}
		body = append(body, bpf.RetConstant{Val: r.ret})
	}
	return body, nil
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
