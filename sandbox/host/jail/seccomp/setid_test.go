//go:build linux

package seccomp

import (
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// vmFor runs the profile assembled for goarch in a BPF interpreter.
func vmFor(t *testing.T, goarch string) *bpf.VM {
	t.Helper()
	prog, err := program(goarch)
	if err != nil {
		t.Fatal(err)
	}
	ins := make([]bpf.Instruction, len(prog))
	for i, r := range prog {
		ins[i] = bpf.RawInstruction{Op: r.Code, Jt: r.Jt, Jf: r.Jf, K: r.K}.Disassemble()
	}
	v, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// oTmpfile is O_TMPFILE as each architecture spells it: __O_TMPFILE with
// its own O_DIRECTORY.
var oTmpfile = map[string]uint64{"amd64": 0o20000000 | 0o200000, "arm64": 0o20000000 | 0o40000}

// TestSetIDDecisions pins, on x86-64 and on arm64 (whatever this machine
// is), every call that takes a mode: a mode with S_ISUID or S_ISGID gets
// EPERM, any other mode passes, and openat2 gets ENOSYS. Calls an
// architecture lacks are skipped there.
func TestSetIDDecisions(t *testing.T) {
	hi := uint64(0xdead) << 32
	const at = uint64(0xffffff9c) // AT_FDCWD, as the low word a caller passes
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			native, err := auditArchOf(goarch)
			if err != nil {
				t.Fatal(err)
			}
			numbers, err := syscallNumbers(goarch)
			if err != nil {
				t.Fatal(err)
			}
			v := vmFor(t, goarch)
			tmpfile := oTmpfile[goarch]
			for _, c := range []struct {
				name string
				call string
				args []uint64
				want uint32
			}{
				{"chmod setuid", "chmod", []uint64{0, 0o4755}, retEPERM},
				{"chmod setgid", "chmod", []uint64{0, 0o2755}, retEPERM},
				{"chmod both high bits", "chmod", []uint64{0, hi | 0o6755}, retEPERM},
				{"chmod plain", "chmod", []uint64{0, 0o755}, retAllow},
				{"chmod sticky", "chmod", []uint64{0, 0o1777}, retAllow},
				{"fchmod setuid", "fchmod", []uint64{3, 0o4711}, retEPERM},
				{"fchmod plain", "fchmod", []uint64{3, 0o644}, retAllow},
				{"fchmodat setuid", "fchmodat", []uint64{at, 0, 0o4755}, retEPERM},
				{"fchmodat setgid high bits", "fchmodat", []uint64{at, 0, hi | 0o2000}, retEPERM},
				{"fchmodat plain", "fchmodat", []uint64{at, 0, 0o755}, retAllow},
				{"fchmodat2 setuid", "fchmodat2", []uint64{at, 0, 0o4755, unix.AT_SYMLINK_NOFOLLOW}, retEPERM},
				{"fchmodat2 plain", "fchmodat2", []uint64{at, 0, 0o600, unix.AT_SYMLINK_NOFOLLOW}, retAllow},
				{"creat setuid", "creat", []uint64{0, 0o4755}, retEPERM},
				{"creat plain", "creat", []uint64{0, 0o644}, retAllow},
				{"open create setuid", "open", []uint64{0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, retEPERM},
				{"open tmpfile setgid", "open", []uint64{0, tmpfile | unix.O_RDWR, 0o2755}, retEPERM},
				{"open create plain", "open", []uint64{0, unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, 0o666}, retAllow},
				{"open without create", "open", []uint64{0, unix.O_RDONLY, 0o4755}, retAllow},
				{"openat create setuid", "openat", []uint64{at, 0, unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY, 0o4755}, retEPERM},
				{"openat create setgid high bits", "openat", []uint64{at, 0, hi | unix.O_CREAT, hi | 0o2700}, retEPERM},
				{"openat tmpfile setuid", "openat", []uint64{at, 0, tmpfile | unix.O_WRONLY, 0o4755}, retEPERM},
				{"openat create plain", "openat", []uint64{at, 0, unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC, 0o644}, retAllow},
				{"openat tmpfile plain", "openat", []uint64{at, 0, tmpfile | unix.O_RDWR, 0o600}, retAllow},
				{"openat read", "openat", []uint64{at, 0, unix.O_RDONLY | unix.O_CLOEXEC, 0}, retAllow},
				{"openat read with a stray mode", "openat", []uint64{at, 0, unix.O_RDONLY, 0o6777}, retAllow},
				{"openat2", "openat2", []uint64{at, 0, 0, 24}, retNOSYS},
				{"mkdir setgid", "mkdir", []uint64{0, 0o2775}, retEPERM},
				{"mkdir plain", "mkdir", []uint64{0, 0o777}, retAllow},
				{"mkdirat setuid", "mkdirat", []uint64{at, 0, 0o4755}, retEPERM},
				{"mkdirat sticky", "mkdirat", []uint64{at, 0, 0o1777}, retAllow},
				{"mknod regular setuid", "mknod", []uint64{0, unix.S_IFREG | 0o4755, 0}, retEPERM},
				{"mknod fifo", "mknod", []uint64{0, unix.S_IFIFO | 0o644, 0}, retAllow},
				{"mknodat regular setgid", "mknodat", []uint64{at, 0, unix.S_IFREG | 0o2755, 0}, retEPERM},
				{"mknodat regular plain", "mknodat", []uint64{at, 0, unix.S_IFREG | 0o755, 0}, retAllow},
				{"mknodat chr", "mknodat", []uint64{at, 0, unix.S_IFCHR | 0o600, 0}, retEPERM},
			} {
				nr, ok := numbers[c.call]
				if !ok {
					continue // not a call of this architecture
				}
				got, err := v.Run(data(native, nr, c.args...))
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if uint32(got) != c.want {
					t.Errorf("%s: got %#x, want %#x", c.name, got, c.want)
				}
			}
			// The calls that create or change a mode on arm64 are the *at
			// ones: each must be in its table, or nothing is refused there.
			for _, name := range []string{"fchmod", "fchmodat", "fchmodat2", "openat", "openat2", "mkdirat", "mknodat"} {
				if _, ok := numbers[name]; !ok {
					t.Errorf("%s has no number on %s", name, goarch)
				}
			}
		})
	}
}

// TestProgramsAssemble: both architectures' programs fit the kernel's
// limit and start by checking the architecture.
func TestProgramsAssemble(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		prog, err := program(goarch)
		if err != nil {
			t.Fatalf("%s: %v", goarch, err)
		}
		if len(prog) > 4096 || len(prog) < 10 {
			t.Errorf("%s: %d instructions", goarch, len(prog))
		}
		// A call of the other architecture is killed.
		other := map[string]uint32{"amd64": unix.AUDIT_ARCH_AARCH64, "arm64": unix.AUDIT_ARCH_X86_64}[goarch]
		if got, err := vmFor(t, goarch).Run(data(other, 0)); err != nil || uint32(got) != retKill {
			t.Errorf("%s: a foreign call got %#x, %v", goarch, got, err)
		}
	}
}
